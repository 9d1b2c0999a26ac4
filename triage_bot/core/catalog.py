"""Load, validate (JSON Schema) and compile the signature catalog: patterns/**/*.yml; and
where the built-in patterns and templates live, installed or in a checkout."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any

import regex
import yaml

from triage_bot import __version__
from triage_bot.core import cache as disk_cache
from triage_bot.core import safe_yaml, trigger_context
from triage_bot.core.limits import MAX_EXAMPLES, MAX_SCHEMA_ERRORS, MAX_YAML_BYTES

DEFAULT_BEFORE = 3
DEFAULT_AFTER = 1
# Signatures below this priority are catch-alls: a job whose best match is one of them
# still gets its best-guess error lines.
GENERIC_PRIORITY = 10
_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # triage_bot/, not core/


def data_dir(name: str) -> Path:
    """Where the built-in `patterns` or `templates` live: a wheel carries them under
    triage_bot/_data/; a checkout has them at the top level."""
    installed = _PACKAGE_DIR / "_data" / name
    return installed if installed.is_dir() else _PACKAGE_DIR.parent / name


def patterns_dir() -> Path:
    return data_dir("patterns")


def schema_path() -> Path:
    return patterns_dir() / "schema.json"


@dataclass(frozen=True)
class Problem:
    """Something wrong with a signature file: where, what, and how to mend it."""

    path: Path
    line: int | None
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{where}: {self.message}{hint}"


def _scanned_length(keyword: str) -> int:
    """A keyword's length as the prefilter scans it: UTF-8 bytes."""
    return len(keyword.encode())


@dataclass(frozen=True)
class MatchExample:
    line: str
    captures: dict[str, str]


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    category: str
    priority: int
    keywords: tuple[str, ...]
    pattern: regex.Pattern[str]
    # At least one of these occurs in every match, when no single literal does.
    any_keywords: tuple[str, ...]
    # A regex every match contains, the trigger where the engine takes regexes (Hyperscan).
    prefilter: str | None
    before: int
    after: int
    group_by: tuple[str, ...]
    summary: str
    fix: str
    retry: bool
    references: tuple[str, ...]
    match_examples: tuple[MatchExample, ...]
    no_match_examples: tuple[str, ...]
    path: Path
    # Where the file sits, for messages: "builtin" or a repository's name.
    origin: str = "builtin"
    # The file's text when it was not read from `path` (a repository's signature, fetched
    # from GitHub): messages find their lines in it, never in a local file of that name.
    source: str | None = field(default=None, repr=False, compare=False)
    # A wrapper or summary line: it defers to a specific error above it in the same step.
    wraps: bool = False
    # The tool lists its findings again in a final report, after listings of the same shape
    # (progress, allow-lists): of this signature's matches, the last is the cause, not the first.
    final_report: bool = False
    # The trigger's context in the pattern: longer literals, one of which every match holds
    # (trigger_context.py); the prefilter looks for them instead of the bare keyword.
    context_triggers: tuple[str, ...] = ()
    # `flaky: never`: the failure is never called likely flaky, whatever its history says
    # (a failure that is real each time it shows, a capture too broad to mean one failure).
    never_flaky: bool = False

    @property
    def generic(self) -> bool:
        return self.priority < GENERIC_PRIORITY

    @property
    def from_repository(self) -> bool:
        """Fetched from a repository: untrusted, unlike the built-in signatures (linted in CI)
        and the command line's own (`--patterns`, run by the one who wrote them)."""
        return self.origin not in ("builtin", "local")

    @property
    def triggers(self) -> tuple[str, ...]:
        """What the prefilter looks for: the longest keyword (the rarest guess), or else each
        of the any_keywords when they are longer. Long in the bytes the engine scans: `✖ ` (4
        bytes) is rarer than `ms)` (3), though it has fewer characters."""
        longest = max(self.keywords, key=_scanned_length)
        shortest_any = min(map(_scanned_length, self.any_keywords), default=0)
        if shortest_any > _scanned_length(longest):
            return self.any_keywords
        return (longest,)


@dataclass(frozen=True)
class Catalog:
    signatures: tuple[Signature, ...]
    problems: tuple[Problem, ...] = field(default=())

    def get(self, signature_id: str) -> Signature | None:
        return next((s for s in self.signatures if s.id == signature_id), None)

    def without(self, signature_ids: Iterable[str]) -> Catalog:
        dropped = set(signature_ids)
        kept = tuple(s for s in self.signatures if s.id not in dropped)
        return Catalog(kept, self.problems)


@cache
def schema() -> dict[str, Any]:
    """patterns/schema.json: what a signature file may hold."""
    loaded: dict[str, Any] = json.loads(schema_path().read_text(encoding="utf-8"))
    return loaded


@cache
def _validator() -> Any:
    import jsonschema  # imported here: it is the slowest import on the start-up path

    return jsonschema.Draft202012Validator(schema())


def signature_files(paths: Sequence[Path]) -> list[Path]:
    """The .yml files under each path (a file is taken as it is), sorted for stable order."""
    return listed_files(paths)[0]


def listed_files(paths: Sequence[Path]) -> tuple[list[Path], list[Problem]]:
    """`signature_files`, and a problem for each symbolic link under a folder that leads out
    of it: such a file is not loaded (lint and triage alike), for a folder is what was named."""
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        root = path.resolve()
        found = sorted(p for p in path.rglob("*.yml") if p.is_file())
        found += sorted(p for p in path.rglob("*.yaml") if p.is_file())
        for file in found:
            target = file.resolve()
            if target == root or root in target.parents:
                files.append(file)
            else:
                problems.append(
                    Problem(
                        file,
                        None,
                        f"a symbolic link to {target}, outside {path}; skipped",
                        "copy the file into the folder",
                    )
                )
    return files, problems


def load_catalog(
    paths: Sequence[Path] | None = None, *, origin: str = "builtin", base: Catalog | None = None
) -> Catalog:
    """Load every signature under `paths` (default: the built-in catalog).

    A broken file is reported in `Catalog.problems` and left out; it never stops the others;
    so is a symbolic link leading out of its folder. With `base`, the new signatures are
    added to it (duplicate ids are refused). The result is cached on disk by the files'
    names, sizes and times: parsing and validating the YAML costs more than a small triage.
    """
    roots = list(paths) if paths is not None else [patterns_dir()]
    files, refused = listed_files(roots)
    key = _cache_key(files, origin, base, refused)
    cached = _cache_read(key)
    if cached is not None:
        return cached
    catalog = _load_files(files, origin, base, refused)
    if key:
        disk_cache.write(f"catalog-{key}.pickle", pickle.dumps(catalog))
    return catalog


def _cache_key(
    files: list[Path], origin: str, base: Catalog | None, refused: Sequence[Problem] = ()
) -> str:
    """ "" (no caching) when added to a base catalog, which lives in this process only."""
    if base is not None:
        return ""
    # This module's own stamp too: the pickle holds its classes, which change between builds
    # of one version (an older pickle would load with fields missing).
    stamp = [__version__, origin, str(schema_path().stat().st_mtime_ns)]
    # And trigger_context's: a Signature holds what it derives.
    for module in (Path(__file__), Path(trigger_context.__file__)):
        code = module.stat()
        stamp.append(f"{code.st_size}:{code.st_mtime_ns}")
    for path in files:
        try:
            info = path.stat()
        except OSError:
            return ""  # a file that vanished: load without the cache, and report it
        stamp.append(f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}")
    stamp.extend(str(problem) for problem in refused)
    return hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:32]


def _cache_read(key: str) -> Catalog | None:
    data = disk_cache.read(f"catalog-{key}.pickle") if key else None
    if data is None:
        return None
    try:
        loaded = pickle.loads(data)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        return None
    return loaded if isinstance(loaded, Catalog) else None


def _load_files(
    files: list[Path], origin: str, base: Catalog | None, refused: Sequence[Problem] = ()
) -> Catalog:
    signatures = list(base.signatures) if base else []
    problems = [*(base.problems if base else ()), *refused]
    seen = {s.id: s.path for s in signatures}
    for path in files:
        loaded, file_problems = load_signature(path, origin=origin)
        problems.extend(file_problems)
        if loaded is None:
            continue
        if loaded.id in seen:
            problems.append(
                Problem(
                    path,
                    1,
                    f"duplicate id {loaded.id!r}, also in {seen[loaded.id]}",
                    "ids are unique across the catalog; rename one",
                )
            )
            continue
        seen[loaded.id] = path
        signatures.append(loaded)
    return Catalog(tuple(signatures), tuple(problems))


def load_signature(
    path: Path, *, origin: str = "builtin"
) -> tuple[Signature | None, list[Problem]]:
    try:
        with path.open("rb") as file:
            # One byte past the bound tells an oversized file without reading it all.
            data = file.read(MAX_YAML_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(path, None, f"cannot read: {exc}")]
    if len(data) > MAX_YAML_BYTES:
        return None, [Problem(path, None, f"larger than {MAX_YAML_BYTES:,} bytes; skipped")]
    return load_signature_text(path, text, origin=origin)


def load_signature_text(
    path: Path, text: str, *, origin: str = "builtin", keep_source: bool = False
) -> tuple[Signature | None, list[Problem]]:
    """Validate and build one signature from its text; `path` names it in messages (and its
    stem must equal the id). `keep_source`: the text is not at `path` on this disk."""
    try:
        data = safe_yaml.load(text)
    except safe_yaml.YamlProblem as refused:
        return None, [Problem(path, refused.line, refused.reason, refused.hint)]
    problems = _too_many_examples(path, text, data)
    if problems:
        return None, problems  # before the schema check, which would walk them all
    # Bounded: a 64 KiB list can hold 30,000 wrong items, each an error and a line to find.
    errors = list(islice(_validator().iter_errors(data), MAX_SCHEMA_ERRORS + 1))
    problems = [
        Problem(
            path,
            line_in_text(text, list(err.absolute_path)),
            _schema_message(err),
            _schema_hint(err),
        )
        for err in sorted(errors[:MAX_SCHEMA_ERRORS], key=lambda e: list(map(str, e.path)))
    ]
    if len(errors) > MAX_SCHEMA_ERRORS:
        problems.append(Problem(path, None, f"more than {MAX_SCHEMA_ERRORS} schema errors"))
    if problems:
        return None, problems
    return _build(path, text, data, origin, text if keep_source else None)


def _too_many_examples(path: Path, text: str, data: Any) -> list[Problem]:
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, dict):
        return []  # the schema check says what is wrong
    return [
        Problem(
            path,
            line_in_text(text, ["tests", kind]),
            f"tests.{kind} has {len(examples)} examples; at most {MAX_EXAMPLES}",
            "keep the few that show the variants the pattern must cover",
        )
        for kind in ("match", "no_match")
        if isinstance(examples := tests.get(kind), list) and len(examples) > MAX_EXAMPLES
    ]


def _build(
    path: Path, text: str, data: dict[str, Any], origin: str, source: str | None
) -> tuple[Signature | None, list[Problem]]:
    problems: list[Problem] = []
    if data["id"] != path.stem:
        problems.append(
            Problem(
                path,
                line_in_text(text, ["id"]),
                f"id {data['id']!r} differs from the file name {path.stem!r}",
                f"rename the file to {data['id']}.yml or set id: {path.stem}",
            )
        )
    try:
        pattern = regex.compile(data["pattern"])
    except regex.error as exc:
        problems.append(
            Problem(
                path,
                line_in_text(text, ["pattern"]),
                f"pattern does not compile: {exc}",
                "patterns use the `regex` module's syntax; escape ( [ . * + ? literally",
            )
        )
        return None, problems
    groups = set(pattern.groupindex)
    for name in data.get("group_by", []):
        if name not in groups:
            problems.append(
                Problem(
                    path,
                    line_in_text(text, ["group_by"]),
                    f"group_by names {name!r}, which is not a named group of the pattern",
                    "add (?P<name>...) to the pattern or drop it from group_by",
                )
            )
    if problems:
        return None, problems
    context = data.get("context", {})
    tests = data["tests"]
    signature = Signature(
        id=data["id"],
        title=data["title"],
        category=data["category"],
        priority=data["priority"],
        keywords=tuple(data["keywords"]),
        pattern=pattern,
        any_keywords=tuple(data.get("any_keywords", [])),
        prefilter=data.get("prefilter"),
        before=context.get("before", DEFAULT_BEFORE),
        after=context.get("after", DEFAULT_AFTER),
        group_by=tuple(data.get("group_by", [])),
        summary=data["summary"],
        fix=data["fix"],
        retry=data.get("retry", False),
        references=tuple(data.get("references", [])),
        match_examples=tuple(
            MatchExample(m["line"], dict(m.get("captures", {}))) for m in tests["match"]
        ),
        no_match_examples=tuple(tests.get("no_match", [])),
        path=path,
        origin=origin,
        source=source,
        wraps=data.get("wraps", False),
        final_report=data.get("final_report", False),
        never_flaky=data.get("flaky") == "never",
    )
    return replace(signature, context_triggers=_context_triggers(signature)), []


def _context_triggers(signature: Signature) -> tuple[str, ...]:
    """For a signature whose trigger is its longest keyword (no `prefilter`, no longer
    any_keywords), that keyword's longer context in the pattern, if known."""
    if signature.prefilter or signature.triggers != (max(signature.keywords, key=_scanned_length),):
        return ()
    examples = tuple(example.line for example in signature.match_examples)
    return trigger_context.keyword_context(
        signature.pattern.pattern, signature.triggers[0], examples
    )


def signature_line(signature: Signature, keys: list[str | int]) -> int | None:
    """The line of a key inside a signature's file, wherever its text came from."""
    if signature.source is not None:
        return line_in_text(signature.source, keys)
    try:
        return line_in_text(signature.path.read_text(encoding="utf-8"), keys)
    except OSError:
        return None


def line_in_text(text: str, keys: list[str | int]) -> int | None:
    """1-based line of the node at `keys` in the YAML text (the nearest existing parent)."""
    try:
        node = safe_yaml.compose(text)
    except safe_yaml.YamlProblem:
        return None
    if node is None:
        return 1
    line = node.start_mark.line + 1
    for key in keys:
        child = _child(node, key)
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line


def _child(node: yaml.Node, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == key:
                return value_node  # type: ignore[no-any-return]
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]  # type: ignore[no-any-return]
    return None


def _schema_message(err: Any) -> str:
    where = ".".join(str(p) for p in err.absolute_path) or "the file"
    return f"{where}: {safe_yaml.schema_message(err)}"


def _schema_hint(err: Any) -> str:
    hints = {
        "required": "every signature needs id, title, category, priority, keywords, pattern, "
        "summary, fix and tests",
        "additionalProperties": "see patterns/README.md for the fields a signature may have",
        "enum": "category is one of: dependency build test infra resource config network lint "
        "timeout",
        "type": "check the value's type against patterns/README.md",
    }
    return hints.get(str(err.validator), "")
