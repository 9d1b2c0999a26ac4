"""`catalog lint` and `catalog test`: a signature is refused with the file, line and why.

lint: the schema, id = file stem, unique ids, patterns compile, keywords occur in every
example, templates render with the example captures, no catastrophic backtracking, a `.log`
window beside every signature. test: the inline examples and the `.log` windows with their
`#!` expectations, classified by the real streaming classifier.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from triage_bot import resources
from triage_bot.catalog import Catalog, Problem, Signature, load_catalog, signature_line
from triage_bot.classify import CompiledCatalog, classify
from triage_bot.limits import MAX_WINDOW_BYTES
from triage_bot.render import render_signature_text

# Long enough to make an exponential pattern blow up, short enough that a sane one takes
# microseconds; the timeout is far above what a sane pattern needs even on a loaded machine.
_PUMP = 4000
BACKTRACK_TIMEOUT_S = 0.5
_PUMP_CHARS = "a A0 .-_/:'\"\t\\(["


def catalog_for(paths: Sequence[Path]) -> Catalog:
    """The catalog the given paths make: the built-in one plus any other folders or files."""
    builtin = resources.patterns_dir().resolve()
    extra = [p for p in paths if not _inside(p.resolve(), builtin)]
    catalog = load_catalog()
    if extra:
        catalog = load_catalog(extra, origin="local", base=catalog)
    return catalog


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _where(path: Path) -> Path:
    """Where a file sits, its folders resolved but not a symbolic link in its own name: a
    link under a named folder is selected as it was found there (and refused, when it leads
    out of it, with the same problem `triage --catalog` prints)."""
    return path.absolute().parent.resolve() / path.name


def _roots(paths: Sequence[Path]) -> list[Path]:
    # Both: a named folder may itself be a link, and a named file one too.
    return [root for p in paths for root in (p.resolve(), _where(p))]


def _selected(catalog: Catalog, paths: Sequence[Path]) -> list[Signature]:
    if not paths:
        return list(catalog.signatures)
    roots = _roots(paths)
    return [s for s in catalog.signatures if any(_inside(_where(s.path), r) for r in roots)]


def _selected_problems(catalog: Catalog, paths: Sequence[Path]) -> list[Problem]:
    roots = _roots(paths) if paths else [resources.patterns_dir().resolve()]
    return [p for p in catalog.problems if any(_inside(_where(p.path), r) for r in roots)]


def lint(paths: Sequence[Path]) -> tuple[list[Signature], list[Problem]]:
    catalog = catalog_for(paths)
    signatures = _selected(catalog, paths)
    problems = _selected_problems(catalog, paths)
    for signature in signatures:
        problems.extend(lint_signature(signature))
    return signatures, problems


def lint_signature(signature: Signature) -> list[Problem]:
    problems = lint_rules(signature)
    window = signature.path.with_suffix(".log")
    if not window.is_file():
        problems.append(
            Problem(
                signature.path,
                None,
                f"no log window {window.name} beside the signature",
                "add a real window of a job log with '#! match:' lines",
            )
        )
    elif window.stat().st_size > MAX_WINDOW_BYTES:
        problems.append(
            Problem(
                window,
                None,
                f"larger than {MAX_WINDOW_BYTES:,} bytes",
                "a window is the few dozen lines around the failure, not the whole log",
            )
        )
    return problems


def lint_rules(signature: Signature) -> list[Problem]:
    """What lint checks of the signature itself (its `.log` window aside)."""
    problems: list[Problem] = []
    path = signature.path
    for index, example in enumerate(signature.match_examples):
        for keyword in signature.keywords:
            if keyword not in example.line:
                problems.append(
                    Problem(
                        path,
                        signature_line(signature, ["tests", "match", index, "line"]),
                        f"keyword {keyword!r} does not occur in example {example.line!r}",
                        "keywords are literals that every matching line contains",
                    )
                )
        if signature.any_keywords and not any(k in example.line for k in signature.any_keywords):
            problems.append(
                Problem(
                    path,
                    signature_line(signature, ["tests", "match", index, "line"]),
                    f"none of any_keywords occurs in example {example.line!r}",
                    "every matching line must contain at least one of any_keywords",
                )
            )
        found = signature.pattern.search(example.line)
        captures = {k: v for k, v in found.groupdict().items() if v is not None} if found else {}
        # Optional groups may be missing; templates see them as empty.
        captures = {name: captures.get(name, "") for name in signature.pattern.groupindex}
        for field in ("summary", "fix"):
            try:
                render_signature_text(getattr(signature, field), captures)
            except jinja2.TemplateError as exc:
                problems.append(
                    Problem(
                        path,
                        signature_line(signature, [field]),
                        f"{field} does not render: {exc}",
                        "use only the pattern's named groups",
                    )
                )
    problems.extend(_prefilter_problems(signature))
    problems.extend(_backtracking(signature))
    return problems


def _prefilter_problems(signature: Signature) -> list[Problem]:
    if signature.prefilter is None:
        return []
    path = signature.path
    line = signature_line(signature, ["prefilter"])
    try:
        # Python's `re` runs it where Hyperscan is missing, so both must take it.
        compiled = re.compile(signature.prefilter)
    except re.error as exc:
        return [Problem(path, line, f"prefilter does not compile: {exc}")]
    problems = [
        Problem(
            path,
            line,
            f"prefilter does not match example {example.line!r}",
            "the prefilter must find every line the pattern matches",
        )
        for example in signature.match_examples
        if not compiled.search(example.line)
    ]
    try:
        import hyperscan
    except ImportError:
        return problems  # checked where Hyperscan is installed
    try:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=[signature.prefilter.encode()], ids=[0], elements=1, flags=0)
    except hyperscan.error as exc:
        problems.append(
            Problem(
                path,
                line,
                f"Hyperscan cannot compile the prefilter: {exc}",
                "use the syntax both share: no lookaround, no backreference",
            )
        )
    return problems


def adversarial_inputs(signature: Signature) -> list[str]:
    keyword = signature.triggers[0]
    inputs = [keyword + " " + char * _PUMP + "\u2603" for char in _PUMP_CHARS]
    inputs += [keyword + " " + (char + " ") * (_PUMP // 2) for char in "a0-."]
    for example in signature.match_examples:
        line = example.line
        # Pump each kind of character where a quantifier in the pattern is likely to be:
        # at the end of a matching line and at a few cut points inside it.
        for cut in (len(line), len(line) // 2, len(line) * 3 // 4):
            inputs += [line[:cut] + char * _PUMP + "\u2603" for char in _PUMP_CHARS]
        inputs.append((line + " ") * 40)
        inputs.append(line[: len(line) // 2] * 80)
        inputs.append(line.replace(" ", " " * 400))
        inputs.append(line[:-1] + "\u2603" * 200)
    return inputs


def _backtracking(signature: Signature) -> list[Problem]:
    for text in adversarial_inputs(signature):
        try:
            signature.pattern.search(text, timeout=BACKTRACK_TIMEOUT_S)
        except TimeoutError:
            return [
                Problem(
                    signature.path,
                    signature_line(signature, ["pattern"]),
                    f"pattern backtracks catastrophically (over {BACKTRACK_TIMEOUT_S}s on "
                    f"a {len(text)}-character line starting {text[:40]!r})",
                    "avoid nested quantifiers like (a+)+ and overlapping alternatives; "
                    "anchor on literals and use [^x]* instead of .*",
                )
            ]
    return []


@dataclass(frozen=True)
class Failure:
    path: Path
    line: int | None
    expected: str
    actual: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: expected {self.expected}; got {self.actual}"


def test(paths: Sequence[Path]) -> tuple[int, list[Failure], list[Problem]]:
    """(checks run, failures, load problems) for the selected signatures."""
    catalog = catalog_for(paths)
    compiled = CompiledCatalog(catalog)
    checks = 0
    failures: list[Failure] = []
    for signature in _selected(catalog, paths):
        count, found = inline_tests(signature)
        checks += count
        failures.extend(found)
        window = signature.path.with_suffix(".log")
        if window.is_file():
            count, found = window_test(window, compiled)
            checks += count
            failures.extend(found)
    return checks, failures, _selected_problems(catalog, paths)


def _describe(signature_id: str | None, captures: dict[str, str]) -> str:
    if signature_id is None:
        return "no match"
    shown = " ".join(f"{k}={v!r}" for k, v in sorted(captures.items()))
    return f"{signature_id} {shown}".strip()


def inline_tests(signature: Signature) -> tuple[int, list[Failure]]:
    failures: list[Failure] = []
    path = signature.path
    for index, example in enumerate(signature.match_examples):
        found = signature.pattern.search(example.line)
        got = {k: v for k, v in found.groupdict().items() if v is not None} if found else {}
        expected = example.captures
        if found is None or any(got.get(k) != v for k, v in expected.items()):
            failures.append(
                Failure(
                    path,
                    signature_line(signature, ["tests", "match", index]),
                    f"{example.line!r} to match with {_describe(signature.id, expected)}",
                    _describe(signature.id, got) if found else "no match",
                )
            )
    for index, line in enumerate(signature.no_match_examples):
        if signature.pattern.search(line):
            failures.append(
                Failure(
                    path,
                    signature_line(signature, ["tests", "no_match", index]),
                    f"{line!r} not to match",
                    "a match",
                )
            )
    return len(signature.match_examples) + len(signature.no_match_examples), failures


@dataclass(frozen=True)
class Expectation:
    directive_line: int  # in the .log file, for messages
    kind: str  # "match" or "ok"
    signature_id: str
    captures: dict[str, str]


def parse_window(text: str) -> tuple[bytes, dict[int, list[Expectation]]]:
    """Strip `#!` lines; map each expectation to the line number it checks in the rest."""
    kept: list[str] = []
    expectations: dict[int, list[Expectation]] = {}
    waiting: list[Expectation] = []
    # Split as the classifier splits a log (on newlines only), so that a line holding a bare
    # carriage return (a progress bar's) stays one line, as it is in the job log.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if line.startswith("#!"):
            waiting.append(_expectation(line[2:].strip(), number))
            continue
        kept.append(line)
        if waiting:
            expectations[len(kept)] = waiting
            waiting = []
    return ("\n".join(kept) + "\n").encode(), expectations


def _expectation(directive: str, number: int) -> Expectation:
    kind, _, rest = directive.partition(":")
    words = shlex.split(rest)
    if kind.strip() not in ("match", "ok") or not words:
        return Expectation(number, "invalid", directive, {})
    captures = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    return Expectation(number, kind.strip(), words[0], captures)


def window_test(window: Path, compiled: CompiledCatalog) -> tuple[int, list[Failure]]:
    # Bytes, decoded: read_text would turn a bare carriage return into a line break.
    with window.open("rb") as file:
        data = file.read(MAX_WINDOW_BYTES + 1)
    if len(data) > MAX_WINDOW_BYTES:
        return 0, [Failure(window, None, f"at most {MAX_WINDOW_BYTES:,} bytes", "more")]
    log, expectations = parse_window(data.decode("utf-8", "replace"))
    result = classify([log], compiled, window.stem, keep_winners=True)
    winners = {line: (sid, caps) for line, sid, caps in result.winners}
    failures: list[Failure] = []
    if not any(
        e.kind == "match" and e.signature_id == window.stem
        for group in expectations.values()
        for e in group
    ):
        failures.append(Failure(window, None, f"a '#! match: {window.stem}' line", "none"))
    checks = 0
    for line, group in expectations.items():
        winner_id, winner_captures = winners.get(line, (None, {}))
        actual = _describe(winner_id, winner_captures)
        for expectation in group:
            checks += 1
            failure = _check(expectation, winner_id, winner_captures)
            if failure:
                failures.append(Failure(window, expectation.directive_line, failure, actual))
    return checks, failures


def _check(expectation: Expectation, winner_id: str | None, captures: dict[str, str]) -> str:
    wanted = _describe(expectation.signature_id, expectation.captures)
    if expectation.kind == "invalid":
        return f"a directive '#! match: ID key=value' or '#! ok: ID', not {wanted!r}"
    if expectation.kind == "ok":
        return (
            f"the next line not to match {expectation.signature_id}"
            if (winner_id == expectation.signature_id)
            else ""
        )
    if winner_id != expectation.signature_id:
        return f"the next line to match {wanted}"
    if any(captures.get(k) != v for k, v in expectation.captures.items()):
        return f"the next line to match {wanted}"
    return ""
