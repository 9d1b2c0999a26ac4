"""Multi-literal prefilter engines: where in a block of lines any of the literals occurs.

The classifier hands every block of complete lines to one of these; only the lines where a
literal occurs are decoded and looked at again (which literals, exactly, is decided there on
the line's text, so the verdicts never depend on the engine). Hyperscan is the fast one and
scans the raw text: it is also given each literal cut at its token boundaries, with an escape
byte after the first part (or the second part alone), so a literal with colour codes inside
it, as colourising tools print them, still finds its line without stripping ANSI from every
block. Where Hyperscan's wheel is missing (other architectures) Aho-Corasick (ahocorasick-rs)
takes over on blocks stripped of ANSI first, and the pure-Python `regex` engine is the last
resort. `TRIAGE_ENGINE` picks one by name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import regex

ESC = b"\x1b"
# Cut parts shorter than this are too common to look for alone; the other part is used.
_MIN_PART = 3


class Prefilter(Protocol):
    name: str
    # True when scan() finds literals in raw text with colour codes between their tokens, so
    # the block need not be stripped of ANSI escapes first.
    handles_ansi: bool

    def scan(self, block: bytes) -> tuple[list[int], list[int]]:
        """End offsets of occurrences, at least one in every line that holds a literal; and
        of colour-tolerant parts, which matter only in a line with an escape in it."""
        ...

    def literals_in(self, line: bytes) -> set[int]:
        """Exactly which literals (their indexes) occur in one line, stripped of colour."""
        ...


def _token_boundaries(literal: bytes) -> list[int]:
    points = []
    for at in range(1, len(literal)):
        left, right = literal[at - 1 : at], literal[at : at + 1]
        if left.isalnum() != right.isalnum() or b" " in (left, right):
            points.append(at)
    return points


def colour_tolerant(literals: Sequence[bytes]) -> list[bytes]:
    """The literals, plus for each token boundary the part that stays intact when a colour
    code is printed there: the head followed by ESC, or (for a short head) the tail."""
    found = set(literals)
    for literal in literals:
        for at in _token_boundaries(literal):
            found.add(literal[:at] + ESC if at >= _MIN_PART else literal[at:])
    return sorted(found)


class HyperscanPrefilter:
    name = "hyperscan"
    handles_ansi = True

    def __init__(self, literals: Sequence[bytes]) -> None:
        import hyperscan

        # The literals first, then their colour-tolerant parts: an id says which kind it is.
        self._literal_count = len(literals)
        expressions = list(literals) + [p for p in colour_tolerant(literals) if p not in literals]
        self._db: Any = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(
            expressions=expressions,
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=0,
            literal=True,
        )
        self._scratch: Any = hyperscan.Scratch(self._db)
        self._exact: Any = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._exact.compile(
            expressions=list(literals),
            ids=list(range(len(literals))),
            elements=len(literals),
            flags=0,
            literal=True,
        )
        self._exact_scratch: Any = hyperscan.Scratch(self._exact)

    def literals_in(self, line: bytes) -> set[int]:
        found: set[int] = set()
        add = found.add

        def on_match(index: int, _start: int, _end: int, _flags: int, _context: object) -> None:
            add(index)

        self._exact.scan(line, match_event_handler=on_match, scratch=self._exact_scratch)
        return found

    def scan(self, block: bytes) -> tuple[list[int], list[int]]:
        exact: list[int] = []
        parts: list[int] = []
        literal_count = self._literal_count

        def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> None:
            (exact if index < literal_count else parts).append(end)

        self._db.scan(block, match_event_handler=on_match, scratch=self._scratch)
        exact.sort()
        parts.sort()
        return exact, parts


class AhoCorasickPrefilter:
    name = "ahocorasick"
    handles_ansi = False

    def __init__(self, literals: Sequence[bytes]) -> None:
        import ahocorasick_rs

        self._automaton: Any = ahocorasick_rs.BytesAhoCorasick(list(literals))

    def literals_in(self, line: bytes) -> set[int]:
        return {
            index
            for index, _s, _e in self._automaton.find_matches_as_indexes(line, overlapping=True)
        }

    def scan(self, block: bytes) -> tuple[list[int], list[int]]:
        # Non-overlapping is enough: a literal never spans lines, so every line holding one
        # gets at least one occurrence reported.
        found = self._automaton.find_matches_as_indexes(block)
        return [end for _index, _start, end in found], []


class RegexPrefilter:
    name = "python"
    handles_ansi = False

    def __init__(self, literals: Sequence[bytes]) -> None:
        self._literals = list(literals)
        ordered = sorted(set(literals), key=len, reverse=True)
        self._any = regex.compile(b"|".join(regex.escape(lit) for lit in ordered))

    def scan(self, block: bytes) -> tuple[list[int], list[int]]:
        return [found.end() for found in self._any.finditer(block)], []

    def literals_in(self, line: bytes) -> set[int]:
        return {index for index, literal in enumerate(self._literals) if literal in line}


_ENGINES: dict[str, Callable[[Sequence[bytes]], Prefilter]] = {
    "hyperscan": HyperscanPrefilter,
    "ahocorasick": AhoCorasickPrefilter,
    "python": RegexPrefilter,
}


def engine_names() -> list[str]:
    return list(_ENGINES)


def build_prefilter(literals: Sequence[bytes], engine: str | None = None) -> Prefilter:
    """The first engine that loads, in order of speed; or the one named (no fallback then)."""
    wanted = engine or os.environ.get("TRIAGE_ENGINE") or ""
    if wanted:
        if wanted not in _ENGINES:
            raise ValueError(f"unknown engine {wanted!r}; choose one of {', '.join(_ENGINES)}")
        return _ENGINES[wanted](literals)
    for factory in (HyperscanPrefilter, AhoCorasickPrefilter):
        try:
            return factory(literals)
        except ImportError:
            continue
    return RegexPrefilter(literals)
