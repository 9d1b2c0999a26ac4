"""What a pattern repeats, and a search bounded in CPU time.

`repeated_units` reads a pattern's syntax tree (Python's own parser: the `regex` syntax the
catalog uses is, group names aside, the same) and returns the short strings that its
quantified parts (`+`, `*`, `{n,}`) can consume over and over: a representative character of
every class that is repeated, and one instance of every repeated group. Long runs of these
are what make a backtracking engine slow, so `catalog lint` pumps them (see
catalog_check.linearity_problems).

`top_level_branches` cuts a pattern's text at its top-level `|` (with `class_end`, which
steps over a character class): each branch of a signature's prefilter becomes a trigger.

`cpu_search` bounds one search in CPU time of the calling thread: `regex`'s own `timeout`
counts `clock()`, the CPU time of the whole process, so in a worker whose other threads are
busy (or, measured in wall time, on a loaded machine) a linear pattern would run out of time.
"""

from __future__ import annotations

import importlib
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import regex

# re's private parser: the only parser of this syntax in the standard library. A pattern it
# cannot read (regex-only syntax) gets every candidate character as its units instead.
sre: Any = importlib.import_module("re._constants")
sre_parse: Any = importlib.import_module("re._parser")

# The characters tried against each repeated class, most telling first: a letter, a digit,
# white space, the punctuation of paths, URLs and messages, and non-ASCII text.
CANDIDATES = "a0 Z\t.-/:_,'\"()[]`=;\\@#+*<>|!?$%&~^{}\u00e9\u2603"
# A run of these alternates with a space, as words and numbers in a long message do.
_ALTERNATING = "a0-."
# At most this many characters of one class are tried (its run is what costs, not which).
_PER_CLASS = 8
# An instance of a repeated group longer than this is left out (a literal, no pump).
_MAX_UNIT = 40

_GROUP_NAME = regex.compile(r"\(\?P?<(?![=!])[^>]*>")

_CATEGORY: dict[Any, Callable[[str], bool]] = {
    sre.CATEGORY_DIGIT: lambda c: unicodedata.category(c) == "Nd",
    sre.CATEGORY_NOT_DIGIT: lambda c: unicodedata.category(c) != "Nd",
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    sre.CATEGORY_LINEBREAK: lambda c: c == "\n",
    sre.CATEGORY_NOT_LINEBREAK: lambda c: c != "\n",
}
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_SINGLE = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN)


def class_end(pattern: str, at: int) -> int:
    """The index just past the character class that opens at `pattern[at]` (a `[`); a `]`
    first in the class (`[]a]`, `[^]a]`) is one of its characters."""
    at += 1
    if pattern[at : at + 1] == "^":
        at += 1
    if pattern[at : at + 1] == "]":
        at += 1
    while at < len(pattern) and pattern[at] != "]":
        at += 2 if pattern[at] == "\\" else 1
    return at + 1


def top_level_branches(pattern: str) -> list[str]:
    """A regex's top-level alternatives (`a|b(c|d)` gives `a` and `b(c|d)`), each a trigger
    of its own: Python's `re`, which runs the regex triggers where Hyperscan is missing,
    searches a leading literal fast but tries an alternation at every byte."""
    branches: list[str] = []
    depth = start = at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if char == "[":
            at = class_end(pattern, at)
            continue
        if char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:at])
            start = at + 1
        at += 1
    return [*branches, pattern[start:]]


def parse(pattern: str) -> Any | None:
    """The syntax tree of `pattern`, or None where Python's parser does not read it."""
    # Duplicate group names (one per alternative) are regex-only; the names do not matter here.
    unnamed = _GROUP_NAME.sub("(?:", pattern)
    try:
        return sre_parse.parse(unnamed)
    except (re.error, OverflowError, RecursionError):
        return None


def repeated_units(pattern: str) -> list[str]:
    """Short strings the pattern's quantified parts can consume repeatedly."""
    tree = parse(pattern)
    if tree is None:
        return [*CANDIDATES, *(c + " " for c in _ALTERNATING)]
    units: dict[str, None] = {}
    for body in _repeated_bodies(tree):
        instance = sample(body)
        if 0 < len(instance) <= _MAX_UNIT:
            units[instance] = None
        for node in _single_char_nodes(body):
            for char in _chars_of(node):
                units[char] = None
                if char in _ALTERNATING and any(accepts(n, " ") for n in _single_char_nodes(body)):
                    units[char + " "] = None
    return list(units)


def _chars_of(node: tuple[Any, Any]) -> list[str]:
    """A few characters a one-character node matches: a literal's own, else candidates."""
    if node[0] == sre.LITERAL:
        return [chr(node[1])]
    return [c for c in CANDIDATES if accepts(node, c)][:_PER_CLASS]


def _repeated_bodies(items: Iterable[Any]) -> Iterator[Any]:
    for op, av in items:
        if op in _REPEATS:
            _low, high, body = av
            if high == sre.MAXREPEAT or high > 1:
                yield body
            yield from _repeated_bodies(body)
        else:
            for child in _children(op, av):
                yield from _repeated_bodies(child)


def _children(op: Any, av: Any) -> list[Any]:
    if op == sre.SUBPATTERN:
        return [av[3]]
    if op == sre.ATOMIC_GROUP:
        return [av]
    if op == sre.BRANCH:
        return list(av[1])
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op == sre.GROUPREF_EXISTS:
        return [branch for branch in av[1:] if branch is not None]
    if op in _REPEATS:
        return [av[2]]
    return []


def _single_char_nodes(items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    for op, av in items:
        if op in _SINGLE:
            yield op, av
        for child in _children(op, av):
            yield from _single_char_nodes(child)


def accepts(node: tuple[Any, Any], char: str) -> bool:
    """Whether a one-character node (a literal, `.`, a class) matches `char`."""
    op, av = node
    if op == sre.LITERAL:
        return bool(ord(char) == av)
    if op == sre.NOT_LITERAL:
        return bool(ord(char) != av)
    if op == sre.ANY:
        return char != "\n"
    negate = bool(av) and av[0][0] == sre.NEGATE
    found = any(_class_item(item, char) for item in (av[1:] if negate else av))
    return found != negate


def _class_item(item: tuple[Any, Any], char: str) -> bool:
    op, av = item
    if op == sre.LITERAL:
        return bool(ord(char) == av)
    if op == sre.RANGE:
        return bool(av[0] <= ord(char) <= av[1])
    if op == sre.CATEGORY:
        test = _CATEGORY.get(av)
        return test(char) if test else False
    return False


def sample_match(pattern: str) -> str:
    """A short string the pattern is likely to match ("" where it cannot be parsed)."""
    tree = parse(pattern)
    return "" if tree is None else sample(tree)


def sample(items: Iterable[Any]) -> str:
    """One short string the parsed items match (their first alternative, fewest repeats)."""
    out: list[str] = []
    for op, av in items:
        if op in _SINGLE:
            out.append(next(iter(_chars_of((op, av))), ""))
        elif op in _REPEATS:
            out.append(sample(av[2]) * min(max(av[0], 1), 3))
        elif op == sre.SUBPATTERN:
            out.append(sample(av[3]))
        elif op == sre.ATOMIC_GROUP:
            out.append(sample(av))
        elif op == sre.BRANCH:
            out.append(sample(av[1][0]))
        elif op == sre.GROUPREF_EXISTS:
            out.append(sample(av[1]))
    return "".join(out)


def cpu_search(
    pattern: regex.Pattern[str], text: str, limit_s: float, *, stretch: float = 16.0
) -> regex.Match[str] | None:
    """`pattern.search(text)`, given `limit_s` seconds of this thread's CPU time.

    Raises TimeoutError past that. regex's timeout counts the process's CPU time: when
    another thread's work ran it out while this attempt had used less than `limit_s` of
    this thread's, the search is tried again with a longer timeout (up to `stretch` times
    the limit: three attempts at most), so a busy worker does not drop a fast pattern's
    match. Each attempt starts over, so each is judged by its own time, not the sum.
    """
    allowed = limit_s
    while True:
        start = time.thread_time()
        try:
            return pattern.search(text, timeout=allowed)
        except TimeoutError:
            used = time.thread_time() - start
            if used >= limit_s * 0.9 or allowed >= limit_s * stretch:
                raise
            allowed = min(allowed * 4, limit_s * stretch)
