"""Multi-literal prefilter engines: which literals occur in a block of lines, and where.

The classifier hands every block of complete lines to one of these; only the lines where a
literal occurs ever reach a regular expression. Hyperscan is the fast one; where its wheel is
missing (other architectures) Aho-Corasick (ahocorasick-rs) takes over, and the pure-Python
`regex` engine is the last resort. All three report every occurrence, overlapping ones
included, so the verdicts do not depend on the engine. `TRIAGE_ENGINE` picks one by name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import regex

# (literal index, end offset of the occurrence in the block), in order of end offset.
Hit = tuple[int, int]


class Prefilter(Protocol):
    name: str

    def scan(self, block: bytes) -> list[Hit]: ...


class HyperscanPrefilter:
    name = "hyperscan"

    def __init__(self, literals: Sequence[bytes]) -> None:
        import hyperscan

        self._db: Any = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(
            expressions=list(literals),
            ids=list(range(len(literals))),
            elements=len(literals),
            flags=0,
            literal=True,
        )
        self._scratch: Any = hyperscan.Scratch(self._db)

    def scan(self, block: bytes) -> list[Hit]:
        hits: list[Hit] = []
        append = hits.append

        def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> None:
            append((index, end))

        self._db.scan(block, match_event_handler=on_match, scratch=self._scratch)
        return hits


class AhoCorasickPrefilter:
    name = "ahocorasick"

    def __init__(self, literals: Sequence[bytes]) -> None:
        import ahocorasick_rs

        self._automaton: Any = ahocorasick_rs.BytesAhoCorasick(list(literals))

    def scan(self, block: bytes) -> list[Hit]:
        found = self._automaton.find_matches_as_indexes(block, overlapping=True)
        hits = [(index, end) for index, _start, end in found]
        hits.sort(key=lambda hit: hit[1])
        return hits


class RegexPrefilter:
    """Pure Python: one alternation, then every literal checked on the lines it found."""

    name = "python"

    def __init__(self, literals: Sequence[bytes]) -> None:
        self._literals = list(literals)
        ordered = sorted(set(literals), key=len, reverse=True)
        self._any = regex.compile(b"|".join(regex.escape(lit) for lit in ordered))

    def scan(self, block: bytes) -> list[Hit]:
        hits: list[Hit] = []
        position = 0
        while True:
            found = self._any.search(block, position)
            if found is None:
                break
            start = block.rfind(b"\n", 0, found.start()) + 1
            end = block.find(b"\n", found.end())
            end = len(block) if end < 0 else end
            line = block[start:end]
            for index, literal in enumerate(self._literals):
                offset = line.find(literal)
                while offset >= 0:
                    hits.append((index, start + offset + len(literal)))
                    offset = line.find(literal, offset + 1)
            position = end + 1
        hits.sort(key=lambda hit: hit[1])
        return hits


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
