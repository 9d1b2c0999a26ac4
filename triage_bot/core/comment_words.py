"""The comment's wording helpers: what a capture's values are called, matrix job names
shortened to their differences, and evidence windows trimmed to what shows the error.

Everything here returns plain text; render.py's templates print it through their filters,
so nothing here escapes anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# What a `group_by`-less capture's distinct values are, by the capture's name: "7 failing
# tests", "3 files". A name not listed is counted generically ("4 values of `code`").
_VALUE_NOUNS = {
    "test": ("failing test", "failing tests"),
    "tests": ("failing test", "failing tests"),
    "test_name": ("failing test", "failing tests"),
    "testcase": ("failing test", "failing tests"),
    "case": ("failing test", "failing tests"),
    "spec": ("failing spec", "failing specs"),
    "file": ("file", "files"),
    "path": ("file", "files"),
    "filename": ("file", "files"),
    "module": ("module", "modules"),
    "package": ("package", "packages"),
    "crate": ("crate", "crates"),
    "gem": ("gem", "gems"),
    "class": ("class", "classes"),
    "function": ("function", "functions"),
    "method": ("method", "methods"),
    "symbol": ("symbol", "symbols"),
    "target": ("target", "targets"),
    "task": ("task", "tasks"),
    "project": ("project", "projects"),
    "host": ("host", "hosts"),
    "url": ("URL", "URLs"),
}


def value_noun(capture: str, count: int) -> str | None:
    """What `count` values of the capture `capture` are called ("failing tests"), or None
    when the name says nothing (the caller then names the capture itself)."""
    nouns = _VALUE_NOUNS.get(capture.lower())
    if nouns is None:
        return None
    return nouns[0] if count == 1 else nouns[1]


# ---- matrix job names --------------------------------------------------------------------------

# A shared prefix shorter than this is not worth a brace form ("a{1,2}" says less than "a1, a2").
_MIN_SHARED = 6
# A prefix longer than this keeps its first and last words around an ellipsis.
_LONG_PREFIX = 24
_MAX_ALTERNATIVES = 6


def short_job_names(names: Sequence[str]) -> str:
    """The jobs of one failure in a few words: a matrix as its shared prefix once and what
    differs in braces ("kimi-k3-…-agentic-1m-c{1,16,4}"); else the first name (the caller says
    how many there are)."""
    if len(names) < 2:
        return names[0] if names else ""
    # A number is not split: "py3{10,11}" reads worse than "py{310,311}".
    prefix = re.sub(r"\d+$", "", _common_prefix(names))
    rests = [name[len(prefix) :] for name in names]
    suffix = re.sub(r"^\d+", "", _common_prefix([rest[::-1] for rest in rests])[::-1])
    if len(prefix) + len(suffix) < _MIN_SHARED:
        return names[0]
    differing = [rest[: len(rest) - len(suffix)] for rest in rests]
    shown = differing[:_MAX_ALTERNATIVES]
    more = ",…" if len(differing) > len(shown) else ""
    return f"{shorten_middle(prefix)}{{{','.join(shown)}{more}}}{suffix}"


def _common_prefix(texts: Sequence[str]) -> str:
    """The characters every one of `texts` starts with (job names, not paths)."""
    shortest, longest = min(texts), max(texts)  # the prefix they share, all others share
    length = next(
        (i for i, (a, b) in enumerate(zip(shortest, longest, strict=False)) if a != b),
        min(len(shortest), len(longest)),
    )
    return shortest[:length]


def shorten_middle(text: str, longest: int = _LONG_PREFIX) -> str:
    """`text` with its middle words replaced by "…" when longer than `longest`: the first two
    and last three `-`/`_`/`/`/space-separated words stay, the last being what tells a
    matrix's jobs apart ("kimi-k3-…-agentic-1m-c")."""
    if len(text) <= longest:
        return text
    words = re.split(r"(?<=[-_/ ])", text)  # each word keeps the separator after it
    if len(words) <= 6:
        return text
    head = "".join(words[:2])
    return head + "…" + head[-1] + "".join(words[-3:])


# ---- evidence ----------------------------------------------------------------------------------

# Lines longer than this are cut with a marker: GitHub would hide the rest behind a scrollbar.
# About what a 1000 px comment shows of a code block at GitHub's 12 px monospace.
MAX_SHOWN_LINE = 120


def trimmed_window(before: Sequence[str], key: str, after: Sequence[str]) -> list[str]:
    """The evidence lines to show: no blank line at either end (the key line, never blank in
    practice, is kept whatever it holds), every line but the key cut at MAX_SHOWN_LINE."""
    shown_before = list(before)
    while shown_before and not shown_before[0].strip():
        shown_before.pop(0)
    shown_after = list(after)
    while shown_after and not shown_after[-1].strip():
        shown_after.pop()
    return [*map(cut_line, shown_before), key, *map(cut_line, shown_after)]


def cut_line(line: str, longest: int = MAX_SHOWN_LINE) -> str:
    """`line` as it is, or its first `longest` characters and " …" (the marker the log
    reader's clip uses too)."""
    if len(line) <= longest:
        return line
    return line[:longest].rstrip() + " …"
