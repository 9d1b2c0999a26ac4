"""Multi-pattern prefilter engines: where in a block of lines any trigger occurs.

The classifier hands every block of complete lines to one of these, raw (colour codes and
all). Each engine also scans for the parts of the literal triggers that stay intact when a
colour code splits a trigger at a token boundary (see colour_parts), so such a line is found
without stripping every coloured line. Only the lines found are stripped, decoded and looked
at again, and which triggers a line holds is decided on the line's own stripped text, so the
verdicts never depend on the engine. Hyperscan is the fast one and runs the
regex triggers (a signature's `prefilter`) in the same scan. Where its wheel is missing (other
architectures) Aho-Corasick (ahocorasick-rs) takes over, with Python's `re` for the regex
triggers, and the pure-Python `regex` engine is the last resort. `TRIAGE_ENGINE` picks one by name.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import regex

from triage_bot.core import cache


class Prefilter(Protocol):
    name: str

    def literals_in(self, line: bytes) -> set[int]:
        """Exactly which literals (their indexes) occur in one line, stripped of colour."""
        ...

    def scan_ids(self, block: bytes) -> list[tuple[int, int]]:
        """(end offset, trigger index) of occurrences, at least one in every line that holds
        a trigger; index -1 where the engine cannot say (a colour part, or an engine that
        reports one occurrence per line)."""
        ...


@dataclass(frozen=True)
class Trigger:
    """What the prefilter looks for: a literal, or (engines that take one) a regex."""

    pattern: bytes
    is_regex: bool = False


# Where colourisers put escapes: around spaces and the punctuation that delimits what they
# colour (`file:line:`, `[-Werror]`, `'name'`), not inside a dotted or dashed name.
_DELIMITERS = frozenset(b" :[]()'\"`=,;<>|")
# A part shorter than this is too common to look for.
_MIN_PART = 3
# The final bytes of the escapes tools print most: SGR colours (m) and erase-line (K).
_FINAL_BYTES = (b"m", b"K")


def colour_parts(literals: Sequence[bytes]) -> list[bytes]:
    """Literals that find a trigger which colour codes split, in the raw text: at each token
    boundary of a literal, its head followed by ESC, or (for a head too short to look for)
    its tail preceded by an escape's final byte. Each holds a byte rare in text (ESC) or a
    rare pairing, so they cost the scan little, and the lines they find are stripped and
    looked at again."""
    parts: set[bytes] = set()
    for literal in literals:
        for at in range(1, len(literal)):
            if literal[at - 1] not in _DELIMITERS and literal[at] not in _DELIMITERS:
                continue
            # A code at this boundary leaves both sides intact: one of them is enough.
            head, tail = literal[:at], literal[at:]
            if len(head) >= _MIN_PART:
                parts.add(head + b"\x1b")
            elif len(tail) >= _MIN_PART:
                parts.update(final + tail for final in _FINAL_BYTES)
    return sorted(parts - set(literals))


def _hyperscan_db(hyperscan: Any, expressions: Sequence[bytes], persist: bool = True) -> Any:
    """Compiled, or loaded from the cache: compiling costs more than a small triage.
    `persist`: False for a one-off set (a comparison's words), which the cache would only fill."""
    if not persist:
        return _compiled(hyperscan, expressions)
    digest = hashlib.sha256(repr((hyperscan.__version__, list(expressions))).encode())
    name = f"hyperscan-{digest.hexdigest()[:32]}.db"
    cached = cache.read(name)
    if cached is not None:
        try:
            return hyperscan.loadb(cached, mode=hyperscan.HS_MODE_BLOCK)
        except hyperscan.error:
            pass  # another Hyperscan build or a damaged file: compile again
    database = _compiled(hyperscan, expressions)
    cache.write(name, hyperscan.dumpb(database))
    return database


def _compiled(hyperscan: Any, expressions: Sequence[bytes]) -> Any:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=list(expressions),
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=0,
    )
    return database


class HyperscanPrefilter:
    name = "hyperscan"

    def __init__(
        self, triggers: Sequence[Trigger], stand_ins: Sequence[bytes] = (), persist: bool = True
    ) -> None:
        import hyperscan

        expressions = [t.pattern if t.is_regex else regex.escape(t.pattern) for t in triggers]
        parts = [
            regex.escape(p)
            for p in colour_parts([*(p for _i, p in _literal_triggers(triggers)), *stand_ins])
        ]
        # Ids below this are triggers; the rest are colour parts, which only find lines.
        self._trigger_count = len(expressions)
        self._db: Any = _hyperscan_db(hyperscan, expressions + parts, persist)
        self._hyperscan: Any = hyperscan
        # A scratch space serves one scan at a time: one per thread, so that the worker's
        # threads can share one compiled catalog.
        self._local = threading.local()

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._db)
        return scratch

    def literals_in(self, line: bytes) -> set[int]:
        found: set[int] = set()
        add = found.add
        trigger_count = self._trigger_count

        def on_match(index: int, _start: int, _end: int, _flags: int, _context: object) -> None:
            if index < trigger_count:
                add(index)

        self._db.scan(line, match_event_handler=on_match, scratch=self._scratch())
        return found

    def scan_ids(self, block: bytes) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        append = found.append
        trigger_count = self._trigger_count

        def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> None:
            append((end, index if index < trigger_count else -1))

        self._db.scan(block, match_event_handler=on_match, scratch=self._scratch())
        return found


class _RegexTriggers:
    """The regex triggers, for the engines that take literals only: Python's `re` runs them
    over the whole block in C (each starts with a literal, which `re` searches for fast),
    one pass each. A trigger whose every match starts with a literal rare in text (`leads`:
    see lead_literal) is instead left to the engine's literal scan: a line holding that
    literal is reported as one holding an unknown trigger, and literals_in, which runs every
    regex trigger on the line, decides."""

    def __init__(self, triggers: Sequence[Trigger], *, by_lead: bool = False) -> None:
        self._compiled = [
            (index, re.compile(t.pattern)) for index, t in enumerate(triggers) if t.is_regex
        ]
        leads = [lead_literal(p.pattern) if by_lead else None for _i, p in self._compiled]
        self.leads = [lead for lead in leads if lead is not None]
        self._scanned = _joined_by_prefix(
            [p.pattern for (_i, p), lead in zip(self._compiled, leads, strict=True) if not lead]
        )

    def unknown(self, block: bytes) -> list[tuple[int, int]]:
        """Occurrences as scan_ids reports them, the trigger left to literals_in, of the
        triggers without a lead."""
        return [(m.end(), -1) for pattern in self._scanned for m in pattern.finditer(block)]

    def indexes_in(self, line: bytes) -> set[int]:
        return {index for index, pattern in self._compiled if pattern.search(line)}


def _joined_by_prefix(patterns: Sequence[bytes]) -> list[re.Pattern[bytes]]:
    """The patterns for the block passes, those that start with the same literal joined in
    one (`test[A-Z]\\w*, ` and `test[A-Z]\\w*\\(\\)` -> `test(?:[A-Z]\\w*, |[A-Z]\\w*\\(\\))`):
    `re` searches a pattern's leading literal fast, so one pass finds both, where a bare
    alternation would be tried at every byte. Which trigger a line holds is asked of each
    on the line (indexes_in), so a joined pass only has to find the lines."""
    by_prefix: dict[bytes, list[bytes]] = {}
    for pattern in patterns:
        _literal, end = _leading_literal(pattern)
        by_prefix.setdefault(pattern[:end] if end >= 2 else pattern, []).append(pattern)
    joined = []
    for prefix, group in by_prefix.items():
        if len(group) == 1:
            joined.append(re.compile(group[0]))
            continue
        rests = b"|".join(b"(?:" + pattern[len(prefix) :] + b")" for pattern in group)
        joined.append(re.compile(prefix + b"(?:" + rests + b")"))
    return joined


# A lead is at least this long and starts a line (a newline first) or holds a non-ASCII
# byte: each line holding one is looked at again, so it must be rare. Measured on the bench's
# log: `Test` and `test` begin too many words, `.py:` is on every pytest progress line;
# ` » ` and a newline then `E   ` are rare.
_LEAD_BYTES = 3
_LEAD_ESCAPES = {ord("n"): b"\n", ord("t"): b"\t"}
_METACHARACTERS = frozenset(b".^$*+?{}[]|()\\")
_QUANTIFIERS = frozenset(b"*+?{")


def lead_literal(pattern: bytes) -> bytes | None:
    """The literal every match of `pattern` starts with, when it makes a lead (see above).
    None for a pattern that starts otherwise (a class, a group, an anchor, inline flags)."""
    lead, _end = _leading_literal(pattern)
    rare = lead.startswith(b"\n") or not lead.isascii()
    return lead if len(lead) >= _LEAD_BYTES and rare else None


def starts_with_literal(pattern: bytes) -> bool:
    """Whether every match of `pattern` starts with a literal: what `re` finds fast when it
    runs a regex trigger over a whole block (one that starts with a class or a group is
    tried at every byte)."""
    return bool(_leading_literal(pattern)[0])


def _leading_literal(pattern: bytes) -> tuple[bytes, int]:
    """The literal every match of `pattern` starts with, read from the pattern's text
    (plain bytes and escaped punctuation up to the first metacharacter, less a byte that a
    quantifier follows), and where it ends in that text."""
    lead = bytearray()
    at = 0
    while at < len(pattern):
        byte, width = pattern[at], 1
        if byte == ord("\\"):
            escaped = pattern[at + 1] if at + 1 < len(pattern) else None
            if escaped in _LEAD_ESCAPES:
                piece = _LEAD_ESCAPES[escaped]
            elif escaped is not None and not chr(escaped).isalnum():
                piece = bytes([escaped])  # `\.`, `\(`, `\ `: the byte itself
            else:
                break  # a class (`\d`, `\w`) or another special escape
            width = 2
        elif byte in _METACHARACTERS:
            break
        else:
            piece = bytes([byte])
        if at + width < len(pattern) and pattern[at + width] in _QUANTIFIERS:
            break  # `ab?`: the b is optional
        lead += piece
        at += width
    return bytes(lead), at


def _literal_triggers(triggers: Sequence[Trigger]) -> list[tuple[int, bytes]]:
    return [(index, t.pattern) for index, t in enumerate(triggers) if not t.is_regex]


# The block scan only finds lines, which literals_in then asks for the whole literals: it
# looks for each literal's first bytes alone. A DFA's size grows with every byte of every
# literal (each a state of 256 transitions): the whole literals and their colour parts took
# 24 MB at 548 signatures, their first 16 bytes 15 MB, and lines found hardly change (the
# first 16 bytes of a trigger are about as rare as all of it).
SCANNED_HEAD = 16


def scanned_heads(literals: Sequence[bytes]) -> list[bytes]:
    """The literals the block scan looks for: each one's first SCANNED_HEAD bytes, once."""
    return sorted({literal[:SCANNED_HEAD] for literal in literals})


class AhoCorasickPrefilter:
    name = "ahocorasick"

    def __init__(
        self, triggers: Sequence[Trigger], stand_ins: Sequence[bytes] = (), persist: bool = True
    ) -> None:
        import ahocorasick_rs

        literal = _literal_triggers(triggers)
        patterns = [p for _i, p in literal]
        self._index_of = [index for index, _pattern in literal]
        # Scanning blocks: leftmost-first as a DFA is about 1.7x the default automaton, and
        # one hit per line is all the scan needs. Lines: every literal, overlapping ones too.
        self._regexes = _RegexTriggers(triggers, by_lead=True)
        self._scanner: Any = ahocorasick_rs.BytesAhoCorasick(
            scanned_heads(patterns + colour_parts([*patterns, *stand_ins]) + self._regexes.leads),
            matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST,
            implementation=ahocorasick_rs.Implementation.DFA,
        )
        self._automaton: Any = ahocorasick_rs.BytesAhoCorasick(patterns)

    def literals_in(self, line: bytes) -> set[int]:
        found = self._automaton.find_matches_as_indexes(line, overlapping=True)
        return {self._index_of[i] for i, _s, _e in found} | self._regexes.indexes_in(line)

    def scan_ids(self, block: bytes) -> list[tuple[int, int]]:
        # Non-overlapping is enough: a literal never spans lines, so every line holding one
        # gets at least one occurrence reported (leftmost-first reports the first that
        # starts earliest). Which triggers a line holds is asked of literals_in.
        found = self._scanner.find_matches_as_indexes(block)
        return [(end, -1) for _index, _start, end in found] + self._regexes.unknown(block)


class RegexPrefilter:
    name = "python"

    def __init__(
        self, triggers: Sequence[Trigger], stand_ins: Sequence[bytes] = (), persist: bool = True
    ) -> None:
        self._literals = _literal_triggers(triggers)
        literals = [p for _i, p in self._literals]
        scanned = {*literals, *colour_parts([*literals, *stand_ins])}
        ordered = sorted(scanned, key=len, reverse=True)
        self._any = regex.compile(b"|".join(regex.escape(lit) for lit in ordered))
        self._regexes = _RegexTriggers(triggers)

    def scan_ids(self, block: bytes) -> list[tuple[int, int]]:
        found = [(match.end(), -1) for match in self._any.finditer(block)]
        return found + self._regexes.unknown(block)

    def literals_in(self, line: bytes) -> set[int]:
        found = {index for index, literal in self._literals if literal in line}
        return found | self._regexes.indexes_in(line)


_ENGINES: dict[str, type[HyperscanPrefilter | AhoCorasickPrefilter | RegexPrefilter]] = {
    "hyperscan": HyperscanPrefilter,
    "ahocorasick": AhoCorasickPrefilter,
    "python": RegexPrefilter,
}


class UnknownEngine(ValueError):
    """TRIAGE_ENGINE (or an argument) names no engine: one line saying which there are."""


def engine_names() -> list[str]:
    return list(_ENGINES)


def choose_engine(engine: str | None = None) -> str:
    """The engine named (argument, then TRIAGE_ENGINE), else the fastest whose module loads."""
    wanted = engine or os.environ.get("TRIAGE_ENGINE") or ""
    if wanted:
        if wanted not in _ENGINES:
            raise UnknownEngine(
                f"TRIAGE_ENGINE: unknown engine {wanted!r}; choose one of {', '.join(_ENGINES)}"
            )
        return wanted
    for name, module in (("hyperscan", "hyperscan"), ("ahocorasick", "ahocorasick_rs")):
        try:
            __import__(module)
        except ImportError:
            continue
        return name
    return "python"


def build_prefilter(
    triggers: Sequence[Trigger], engine: str, stand_ins: Sequence[bytes] = (), persist: bool = True
) -> Prefilter:
    """`stand_ins`: literals whose colour parts stand in for regex triggers, which colour
    codes can break too (a regex trigger's signature's keywords). `persist`: whether a
    compiled form may be cached on disk (only Hyperscan's is: others build fast)."""
    return _ENGINES[engine](triggers, stand_ins, persist)
