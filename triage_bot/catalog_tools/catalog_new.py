"""`triage-bot catalog new`: a signature and its `.log` window, drafted from a line of a real log.

The draft passes `catalog lint` and `catalog test` as it is written, so a contributor starts
from a signature that works on the failure in hand and then generalises it. From the line, as
the classifier sees it (timestamp, BOM, colour codes cut: `logs.normalise`): the pattern is the
line escaped and anchored at its start (and its end, when the line is short enough to be taken
whole); the keyword its longest run of plain words that the raw line holds intact (so the
prefilter finds it even where colour codes surround it); the priority 60, or one above any
signature that already wins the line (the whole catalog competes in `catalog test`, and the
built-in signatures come first on a tie). The `.log` window holds the lines around it, with
`#! match:` before it and `#! ok:` before a nearby line that the pattern leaves alone.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import regex
import yaml

from triage_bot.catalog_tools import catalog_check
from triage_bot.core import logs, sources
from triage_bot.core.catalog import Catalog, Signature, schema
from triage_bot.core.classify import CompiledCatalog, classify

WINDOW_BEFORE = 20
WINDOW_AFTER = 5
DEFAULT_PRIORITY = 60
DEFAULT_CATEGORY = "build"
# A longer line is matched on its start: the classifier cuts very long lines, and a short
# pattern is easier to generalise.
PATTERN_CHARS = 200
_MAX_PRIORITY = 100
# A run of plain words, each a whole token (not part of a path, a dotted name or a quote).
_WORD_RUN = re.compile(r"(?<!\S)[A-Za-z][A-Za-z_]*(?: [A-Za-z][A-Za-z_]*)*(?=[:;,.!?)]?(?:\s|$))")
_PUNCTUATION = ":;,.!?()[]{}'\"`"


@dataclass(frozen=True)
class Request:
    ident: str
    log: str  # a path, or - for standard input
    line: int
    folder: Path
    category: str = DEFAULT_CATEGORY
    title: str | None = None
    force: bool = False


@dataclass(frozen=True)
class Draft:
    signature: Path
    window: Path
    priority: int
    outranks: Signature | None  # a signature that also matches the line, now outranked
    problems: list[str]  # what `catalog lint` and `catalog test` say of it (empty: passes)


@dataclass(frozen=True)
class _Window:
    lines: list[bytes]  # raw lines, without newlines
    at: int  # index of the chosen line in `lines`


def create(request: Request) -> Draft:
    """Write the signature and its window; sources.InputError (with one line) on bad input."""
    _check_fields(request)
    target = request.folder / f"{request.ident}.yml"
    window_path = target.with_suffix(".log")
    for path in (target, window_path):
        if path.exists() and not request.force:
            raise sources.InputError(f"{path}: already exists (--force replaces it)")
    window = _read_window(request.log, request.line)
    raw = window.lines[window.at]
    text = logs.normalise(raw)[1]
    if not text.strip():
        raise sources.InputError(f"{request.log}: line {request.line} is blank")
    if text.startswith("#!"):
        raise sources.InputError(
            f"{request.log}: line {request.line} starts with '#!', which a .log window "
            "reads as an expectation"
        )
    pattern = pattern_for(text)
    keyword = keyword_for(text[: len(text) - len(text.lstrip()) + PATTERN_CHARS], raw)
    catalog = _catalog_beside(request.folder, request.ident, target)
    priority, outranks = _priority(raw, catalog)
    texts = [logs.normalise(line)[1] for line in window.lines]
    spare = nearby_unmatched(texts, window.at, regex.compile(pattern), keyword)
    request.folder.mkdir(parents=True, exist_ok=True)
    target.write_text(
        signature_yaml(request, pattern, keyword, priority, outranks, text, texts, spare),
        encoding="utf-8",
    )
    window_path.write_text(window_text(request.ident, window, spare), encoding="utf-8")
    return Draft(target, window_path, priority, outranks, _verify(target, request.ident))


# ---- checks ---------------------------------------------------------------------------------


def categories() -> list[str]:
    return list(schema()["properties"]["category"]["enum"])


def _check_fields(request: Request) -> None:
    """The id, category and title against the schema's own rules for them."""
    fields = schema()["properties"]
    given = {"id": request.ident, "category": request.category, "title": request.title}
    for name, value in given.items():
        if value is None:
            continue
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(fields[name]).iter_errors(value)
        )
        if error is not None:
            hint = {
                "id": "lower-case words joined by '-', e.g. python-widget-broke",
                "category": "one of " + ", ".join(categories()),
                "title": "3 to 100 characters",
            }[name]
            raise sources.InputError(f"{name} {value!r} is not valid: {hint}")
    if request.line < 1:
        raise sources.InputError(f"--line {request.line}: lines are numbered from 1")


def _read_window(log: str, number: int) -> _Window:
    found = sources.collect([log])
    if len(found) != 1:
        raise sources.InputError(f"{log}: holds {len(found)} logs; give one file")
    before: deque[bytes] = deque(maxlen=WINDOW_BEFORE)
    chosen: bytes | None = None
    after: list[bytes] = []
    count = 0
    try:
        lines = logs.raw_lines(sources.read_chunks(found[0].open()))
        for count, raw in enumerate((line.removesuffix(b"\r") for line in lines), start=1):
            if count < number:
                before.append(raw)
            elif count == number:
                chosen = raw
            elif len(after) < WINDOW_AFTER:
                after.append(raw)
            else:
                break
    except OSError as exc:
        raise sources.InputError(f"{log}: cannot read: {exc}") from exc
    if chosen is None:
        raise sources.InputError(f"{log}: line {number} is outside the file ({count} lines)")
    # A line starting '#!' would read as an expectation in the window: leave it out.
    kept_before = [line for line in before if not line.startswith(b"#!")]
    kept_after = [line for line in after if not line.startswith(b"#!")]
    return _Window([*kept_before, chosen, *kept_after], len(kept_before))


def _catalog_beside(folder: Path, ident: str, target: Path) -> Catalog:
    """What a user's `catalog test FOLDER` loads: the built-in catalog and FOLDER's files,
    less the file being replaced. An id taken by another file is refused (lint would)."""
    catalog = catalog_check.catalog_for([folder] if folder.is_dir() else [])
    for signature in catalog.signatures:
        if signature.id == ident and signature.path.resolve() != target.resolve():
            raise sources.InputError(f"{ident}: already the id of {signature.path}")
    return catalog.without([ident])


def _priority(raw: bytes, catalog: Catalog) -> tuple[int, Signature | None]:
    result = classify([raw + b"\n"], CompiledCatalog(catalog), "line", keep_winners=True)
    if not result.winners:
        return DEFAULT_PRIORITY, None
    winner = catalog.get(result.winners[0][1])
    assert winner is not None
    if winner.priority >= _MAX_PRIORITY:
        raise sources.InputError(
            f"{winner.id} ({winner.path}) wins this line at priority {winner.priority}, "
            "which no signature can outrank: improve it instead"
        )
    return max(DEFAULT_PRIORITY, winner.priority + 1), winner


def _verify(path: Path, ident: str) -> list[str]:
    """What `catalog lint` says of the draft, and what `catalog test` of its folder says of
    it: its own checks, and any line of a neighbour's window that it now wins."""
    _, problems = catalog_check.lint([path])
    _, failures, _ = catalog_check.test([path.parent])
    mine = {path.resolve(), path.with_suffix(".log").resolve()}
    ours = [f for f in failures if f.path.resolve() in mine or f.actual.split(" ")[0] == ident]
    return [str(p) for p in problems] + [str(f) for f in ours]


# ---- the draft --------------------------------------------------------------------------------


def pattern_for(text: str) -> str:
    """The line escaped, from its first non-blank character; anchored at the end too when it
    is taken whole."""
    body = text.strip()
    head = body[:PATTERN_CHARS]
    end = r"\s*$" if head == body else ""
    return r"^\s*" + regex.escape(head, literal_spaces=True) + end


def keyword_for(text: str, raw: bytes) -> str:
    """The longest run of plain words of the line (else its longest word, else its longest
    token) that the raw line holds intact: the prefilter scans the raw bytes for it."""
    intact = raw.decode("utf-8", "replace")
    runs = [_intact_part(m.group(), intact) for m in _WORD_RUN.finditer(text)]
    words = re.findall(r"\w+", text)
    tokens = [token.strip(_PUNCTUATION) for token in text.split()]
    for candidates, shortest in ((runs, 3), (words, 3), (tokens, 2)):
        usable = [c for c in candidates if len(c) >= shortest and c in intact]
        if usable:
            return max(usable, key=len)
    raise sources.InputError(f"the line holds no literal of two characters or more: {text!r}")


def _intact_part(run: str, intact: str) -> str:
    """The run, or where colour codes split it, its longest stretch of words left whole."""
    if run in intact:
        return run
    words = run.split(" ")
    parts = (
        " ".join(words[start:end])
        for start in range(len(words))
        for end in range(start + 1, len(words) + 1)
    )
    return max((part for part in parts if part in intact), key=len, default="")


def nearby_unmatched(
    texts: list[str], at: int, pattern: regex.Pattern[str], keyword: str
) -> int | None:
    """The nearest other line the pattern does not match, preferring one with the keyword
    (it reaches the pattern, so it tests the pattern rather than the prefilter)."""
    order = sorted((i for i in range(len(texts)) if i != at), key=lambda i: (abs(i - at), i))
    usable = [i for i in order if texts[i].strip() and not pattern.search(texts[i])]
    with_keyword = [i for i in usable if keyword in texts[i]]
    found = with_keyword or usable
    return found[0] if found else None


def _scalar(value: str) -> str:
    dumped = yaml.safe_dump(value, allow_unicode=True, width=1 << 20)
    return dumped.removesuffix("\n...\n").removesuffix("\n")


def signature_yaml(
    request: Request,
    pattern: str,
    keyword: str,
    priority: int,
    outranks: Signature | None,
    text: str,
    texts: list[str],
    spare: int | None,
) -> str:
    source = "standard input" if request.log == "-" else Path(request.log).name
    source = "".join(c if c.isprintable() else "?" for c in source)  # it goes in a comment
    why = (
        f"outranks {outranks.id} ({outranks.priority}), which also matches this line"
        if outranks
        else "60-79: a specific error; see patterns/README.md for the scale"
    )
    title = request.title or "TODO: name this failure in a few words"
    no_match = "" if spare is None else f"  no_match:\n    - {_scalar(texts[spare])}\n"
    keywords = yaml.safe_dump([keyword], allow_unicode=True, width=1 << 20, default_flow_style=True)
    return f"""\
# Drafted by `triage-bot catalog new` from line {request.line} of
# {source}.
# It passes `catalog lint` and `catalog test` as it is. Before you propose it, make it catch
# this failure wherever it happens (patterns/README.md says how):
# - pattern: keep the tool's fixed text; replace what varies (names, paths, numbers) with
#   named groups such as (?P<module>[^']+), and list in group_by those that identify it;
# - keywords: literals that every failure of this kind prints (the longest one is the
#   prefilter's trigger);
# - title, summary, fix: replace the TODOs; a capture shows as {{{{ module | code }}}}.
id: {request.ident}
title: {_scalar(title)}
category: {request.category}  # one of: {" | ".join(categories())}
priority: {priority}  # {why}
keywords: {keywords.strip()}
pattern: {_scalar(pattern)}
context: {{before: 10, after: 2}}  # lines of evidence shown around the match
summary: "TODO: say in one line what went wrong"
fix: |
  TODO: say what this failure means, its likely causes in order, and the commands that
  confirm and mend each one, written for this failure (not "check the logs").
retry: false  # true only for a flake that a re-run cures
tests:
  match:
    - line: {_scalar(text)}
{no_match}"""


def window_text(ident: str, window: _Window, spare: int | None) -> str:
    out = []
    for index, raw in enumerate(window.lines):
        if index == window.at:
            out.append(f"#! match: {ident}")
        elif index == spare:
            out.append(f"#! ok: {ident}")
        out.append(raw.decode("utf-8", "replace"))
    return "\n".join(out) + "\n"
