"""A keyword's context in its pattern: the longer literals every match holds around it.

A signature's trigger is its longest keyword, often a bare word (`Error`, `FAIL`,
`toomanyrequests`) that test, file and package names hold on many lines of a big job's log
(`test_error_path`, `[FAIL-3]`), each such line then decoded and searched by the regex for
nothing. The pattern usually says more: `^Error(?: \\(warning|: )` needs `Error (warning` or
`Error: `; `: {1,200}FAIL` needs ` FAIL`; `toomanyrequests: ` its colon. This module reads
the pattern's syntax tree (Python's parser, as regex_shapes does) for the literal runs of its
top-level sequence, with the first copy of a repeated literal (` {1,200}` gives a space),
through zero-width assertions (anchors, lookarounds: they consume nothing, so the text on
both sides is adjacent), and across a group of alternatives as one literal per branch. A set
of literals one of which every match holds, each holding the keyword and longer than it,
cut to a few characters either side of it, replaces a short keyword as the prefilter's
trigger. Where the tree cannot be read, a flag
changes case or spacing, or any example line lacks them, the keyword stays.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from typing import Any

from triage_bot.core.regex_shapes import parse

# A group of alternatives multiplies the literals that come before it; past this many the
# set costs the scan more than its length saves.
MAX_ALTERNATIVES = 8
# A keyword this long is rare in names already: its context would only grow the automata
# (Aho-Corasick's DFA took 4 MB more with the context of all 134 keywords that have one).
MAX_KEYWORD_CHARS = 15
# What tells a keyword from a name is next to it (`Error: `, ` FAIL`, `FAILED (`): each
# literal keeps at most this many characters of context on either side.
CONTEXT_CHARS = 4
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)
_CASE_OR_SPACING = re.IGNORECASE | re.VERBOSE


def keyword_context(pattern: str, keyword: str, examples: tuple[str, ...]) -> tuple[str, ...]:
    """The literals one of which every match of `pattern` holds, each holding `keyword` and
    longer than it (the longest such set by its shortest member), or () where none is known
    or an example line holds none of them."""
    if len(keyword) > MAX_KEYWORD_CHARS:
        return ()
    tree = parse(pattern)
    if tree is None or tree.state.flags & _CASE_OR_SPACING:
        return ()
    sets = [
        s for s in _literal_sets(list(tree)) if all(keyword in s_ and s_ != keyword for s_ in s)
    ]
    if not sets:
        return ()
    best = max(sets, key=lambda s: (min(map(len, s)), -len(s)))
    # A part of a literal every match holds is one too.
    best = tuple(dict.fromkeys(_around(literal, keyword) for literal in best))
    if not all(any(literal in line for literal in best) for line in examples):
        return ()  # the tree misread a `regex`-only construct: keep the keyword
    return tuple(sorted(best))


def _around(literal: str, keyword: str) -> str:
    at = literal.find(keyword)
    return literal[max(0, at - CONTEXT_CHARS) : at + len(keyword) + CONTEXT_CHARS]


def _literal_sets(items: list[Any]) -> list[tuple[str, ...]]:
    """Each run of adjacent literals of a sequence, as the set of its spellings (several
    where it crosses a group of alternatives): every match holds one of each set."""
    found: list[tuple[str, ...]] = []
    current = [""]

    def close() -> None:
        if all(current):
            found.append(tuple(dict.fromkeys(current)))
        current[:] = [""]

    for op, av in items:
        if op is sre.LITERAL:
            current[:] = [head + chr(av) for head in current]
        elif op in _ZERO_WIDTH:
            continue
        elif op in _REPEATS and _repeated_char(av) is not None:
            low, high, _body = av
            char = _repeated_char(av)
            assert char is not None
            current[:] = [head + char * low for head in current]
            if low != high:
                close()
                current[:] = [char]
        elif (branches := _branches(op, av)) is not None:
            found.extend(_inner_sets(branches))
            heads = [_leading_literal(branch) for branch in branches]
            whole = all(
                head == _all_literal(branch) for head, branch in zip(heads, branches, strict=True)
            )
            if len(current) * len(heads) > MAX_ALTERNATIVES or not all(heads):
                close()
                continue
            current[:] = [head + tail for head in current for tail in heads]
            if not whole:
                close()
        else:
            close()
    close()
    return found


def _repeated_char(av: Any) -> str | None:
    """The character a `c{m,n}` with m >= 1 repeats, else None."""
    low, _high, body = av
    if low >= 1 and len(body) == 1 and body[0][0] is sre.LITERAL:
        return chr(body[0][1])
    return None


def _branches(op: Any, av: Any) -> list[list[Any]] | None:
    """The alternatives of a plain group or a bare alternation (one for a group without
    `|`), or None for anything else (a group that changes flags included)."""
    if op is sre.SUBPATTERN:
        _group, add_flags, del_flags, body = av
        if add_flags or del_flags:
            return None
        items = list(body)
        if len(items) == 1 and items[0][0] is sre.BRANCH:
            return [list(branch) for branch in items[0][1][1]]
        return [items]
    if op is sre.BRANCH:
        return [list(branch) for branch in av[1]]
    return None


def _inner_sets(branches: list[list[Any]]) -> list[tuple[str, ...]]:
    """A set of literals every alternative holds one of: each branch's own sets, combined
    when every branch has some (the longest of each)."""
    per_branch = [_literal_sets(branch) for branch in branches]
    if not all(per_branch):
        return []
    chosen = [max(sets, key=lambda s: min(map(len, s))) for sets in per_branch]
    combined = tuple(dict.fromkeys(literal for s in chosen for literal in s))
    return [combined] if len(combined) <= MAX_ALTERNATIVES else []


def _leading_literal(items: list[Any]) -> str:
    """The literal text a sequence starts with (through zero-width assertions)."""
    text = []
    for op, av in items:
        if op is sre.LITERAL:
            text.append(chr(av))
        elif op not in _ZERO_WIDTH:
            break
    return "".join(text)


def _all_literal(items: list[Any]) -> str | None:
    """The sequence's text when it is literals (and zero-width assertions) only."""
    if all(op is sre.LITERAL or op in _ZERO_WIDTH for op, _av in items):
        return _leading_literal(items)
    return None
