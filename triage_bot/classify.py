"""Lines x catalog -> matches, streaming, in bounded memory.

A log arrives in chunks of any size (a download, a file, stdin). Chunks are cut into blocks
of complete lines; a multi-literal prefilter finds the lines that hold a signature's keyword
or a marker, and only those lines are decoded and tried against the signatures' regular
expressions, best priority first. The first signature that matches a line wins that line.
The job's root cause is its best-priority match; the others are listed as also seen. Nothing
here knows about GitHub: this is a pure function of the bytes and the catalog.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import regex

from triage_bot import logs
from triage_bot.catalog import Catalog, Signature
from triage_bot.engine import Prefilter, build_prefilter

MAX_DISTINCT_MATCHES = 100
MAX_LINE_BYTES = 64 * 1024
MAX_EVIDENCE_CHARS = 400
FALLBACK_LINES = 6
_FALLBACK_POOL = 64

_MARKERS = (b"##[group]", b"##[endgroup]", b"##[error]")
# Words that make a line a best guess when no signature explains a job.
_HEURISTIC_WORDS = (
    b"error", b"Error", b"ERROR", b"FAIL", b"fail", b"Fail", b"fatal", b"Fatal", b"FATAL",
    b"panic", b"Traceback", b"Exception", b"Killed", b"Aborted", b"exit code", b"denied",
    b"timed out", b"Timeout", b"not found", b"No such file",
)  # fmt: skip
_HEURISTIC_SCORE = regex.compile(
    r"(?P<strong>\b(?:error|Error|ERROR|FAILED|FAIL|fatal|Fatal|FATAL|panic|Traceback|Exception"
    r"|Killed|Aborted)\b)|(?P<weak>fail|denied|timed out|Timeout|not found|No such file|exit code)"
)
_PROCESS_EXIT = "##[error]Process completed with exit code"


@dataclass
class Match:
    signature: Signature
    captures: dict[str, str]
    line: int
    text: str
    timestamp: str | None
    group: str | None
    before: list[str]
    after: list[str]
    # How often the same failure (signature and group_by captures) occurs in this job.
    count: int = 1

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return group_key(self.signature, self.captures)


@dataclass(frozen=True)
class FallbackLine:
    line: int
    text: str


@dataclass
class JobResult:
    name: str
    matches: list[Match]
    fallback_lines: list[FallbackLine]
    lines: int
    bytes_read: int
    truncated: bool = False
    engine: str = ""
    # Per line winners, kept only when asked for (catalog tests): (line, signature id, captures).
    winners: list[tuple[int, str, dict[str, str]]] = field(default_factory=list)

    @property
    def root_cause(self) -> Match | None:
        return self.matches[0] if self.matches else None

    @property
    def also(self) -> list[Match]:
        return self.matches[1:]


def group_key(signature: Signature, captures: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    return signature.id, tuple(captures.get(name, "") for name in signature.group_by)


class CompiledCatalog:
    """The prefilter built once for a catalog, shared by every job classified with it."""

    def __init__(self, catalog: Catalog, engine: str | None = None) -> None:
        self.catalog = catalog
        literals: list[bytes] = []
        index_of: dict[bytes, int] = {}

        def literal_index(literal: bytes) -> int:
            if literal not in index_of:
                index_of[literal] = len(literals)
                literals.append(literal)
            return index_of[literal]

        ranked = sorted(catalog.signatures, key=lambda s: -s.priority)
        self.rank = {s.id: position for position, s in enumerate(ranked)}
        self.by_literal: dict[int, list[Signature]] = {}
        for signature in ranked:
            index = literal_index(signature.trigger.encode())
            self.by_literal.setdefault(index, []).append(signature)
        self.marker_index = {literal_index(m): m for m in _MARKERS}
        self.heuristic_indexes = {literal_index(w) for w in _HEURISTIC_WORDS}
        self.literals = literals
        self.prefilter: Prefilter = build_prefilter(literals, engine)


def classify(
    chunks: Iterable[bytes],
    catalog: CompiledCatalog,
    name: str = "job",
    *,
    max_bytes: int | None = None,
    keep_winners: bool = False,
) -> JobResult:
    """Classify one job's log, given as chunks of bytes of any size."""
    job = JobClassifier(catalog, name, max_bytes=max_bytes, keep_winners=keep_winners)
    for chunk in chunks:
        if not job.feed(chunk):
            break
    return job.finish()


class JobClassifier:
    """The state of one job's classification while its log streams in."""

    def __init__(
        self,
        catalog: CompiledCatalog,
        name: str,
        *,
        max_bytes: int | None = None,
        keep_winners: bool = False,
    ) -> None:
        self._catalog = catalog
        self._name = name
        self._max_bytes = max_bytes
        self._keep_winners = keep_winners
        self._carry = bytearray()
        self._previous_block = b""
        self._lines_done = 0  # complete lines before the current block
        self._bytes_read = 0
        self._truncated = False
        self._group: str | None = None
        self._matches: dict[tuple[str, tuple[str, ...]], Match] = {}
        self._pending_after: list[Match] = []
        self._heuristic: deque[tuple[int, bytes]] = deque(maxlen=_FALLBACK_POOL)
        self._before_exit: list[tuple[int, bytes]] | None = None
        self._winners: list[tuple[int, str, dict[str, str]]] = []
        self._in_long_line = False

    def feed(self, chunk: bytes) -> bool:
        """Take the next chunk; False once the byte cap is reached and the rest is unwanted."""
        if self._truncated:
            return False
        if self._max_bytes is not None and self._bytes_read + len(chunk) > self._max_bytes:
            chunk = chunk[: self._max_bytes - self._bytes_read]
            self._truncated = True
        self._bytes_read += len(chunk)
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            self._carry += chunk
            if len(self._carry) > MAX_LINE_BYTES:
                self._flush_long_line()
            return not self._truncated
        if self._carry:
            block = bytes(self._carry) + chunk[:cut]
            self._carry = bytearray(chunk[cut:])
        else:
            block = chunk[:cut] if cut < len(chunk) else chunk
            self._carry = bytearray(chunk[cut:])
        self._process(block)
        return not self._truncated

    def finish(self) -> JobResult:
        if self._carry:
            self._process(bytes(self._carry) + b"\n")
            self._carry = bytearray()
        matches = sorted(
            self._matches.values(), key=lambda m: (self._catalog.rank[m.signature.id], m.line)
        )
        root = matches[0] if matches else None
        fallback = self._fallback() if root is None or root.signature.generic else []
        return JobResult(
            name=self._name,
            matches=matches,
            fallback_lines=fallback,
            lines=self._lines_done,
            bytes_read=self._bytes_read,
            truncated=self._truncated,
            engine=self._catalog.prefilter.name,
            winners=self._winners,
        )

    def _flush_long_line(self) -> None:
        # A line longer than we keep: classify its first part, drop the rest of it, and
        # count it as one line.
        piece = bytes(self._carry[:MAX_LINE_BYTES]) + b"\n"
        self._carry = bytearray()
        if not self._in_long_line:
            self._process(piece)
            self._lines_done -= 1
        self._in_long_line = True

    def _process(self, block: bytes) -> None:
        if self._in_long_line:
            # The rest of an overlong line: skip to its end.
            end = block.find(b"\n") + 1
            self._in_long_line = False
            self._lines_done += 1
            block = block[end:]
            if not block:
                return
        block = logs.strip_ansi(block)
        if self._pending_after:
            self._fill_pending_after(block)
        hits = self._catalog.prefilter.scan(block)
        if not hits:
            self._lines_done += _count_newlines(block)
        else:
            self._examine_hits(block, hits)
        self._previous_block = block

    def _examine_hits(self, block: bytes, hits: list[tuple[int, int]]) -> None:
        line_number = self._lines_done
        counted_to = 0
        line_end = -1
        literal_ids: list[int] = []
        line_start = 0
        for literal_id, end in sorted(hits, key=lambda hit: hit[1]):
            if end <= line_end:
                literal_ids.append(literal_id)
                continue
            if literal_ids:
                self._examine_line(block, line_start, line_end, line_number + 1, literal_ids)
            line_start = block.rfind(b"\n", 0, end) + 1
            line_end = block.find(b"\n", end)
            line_number += block.count(b"\n", counted_to, line_start)
            counted_to = line_start
            literal_ids = [literal_id]
        if literal_ids:
            self._examine_line(block, line_start, line_end, line_number + 1, literal_ids)
        self._lines_done = line_number + block.count(b"\n", counted_to)

    def _examine_line(
        self, block: bytes, start: int, end: int, number: int, literal_ids: list[int]
    ) -> None:
        catalog = self._catalog
        raw = block[start:end]
        candidates: list[Signature] = []
        heuristic = False
        marker: bytes | None = None
        for literal_id in set(literal_ids):
            candidates.extend(catalog.by_literal.get(literal_id, ()))
            if literal_id in catalog.heuristic_indexes:
                heuristic = True
            marker = catalog.marker_index.get(literal_id, marker)
        timestamp, text = logs.normalise(raw)
        if marker is not None:
            self._track_marker(text, number)
        if candidates:
            candidates.sort(key=lambda s: catalog.rank[s.id])
            for signature in candidates:
                if self._try_signature(signature, block, start, end, number, timestamp, text):
                    return
        if heuristic or marker == b"##[error]":
            self._heuristic.append((number, raw))

    def _track_marker(self, text: str, number: int) -> None:
        if text.startswith("##[group]"):
            self._group = text[len("##[group]") :]
        elif text.startswith(_PROCESS_EXIT) and self._before_exit is None:
            # The lines of the first failing step are the best guess; keep them now.
            self._before_exit = list(self._heuristic)

    def _try_signature(
        self,
        signature: Signature,
        block: bytes,
        start: int,
        end: int,
        number: int,
        timestamp: str | None,
        text: str,
    ) -> bool:
        if not all(keyword in text for keyword in signature.keywords):
            return False
        found = signature.pattern.search(text)
        if found is None:
            return False
        captures = {k: v for k, v in found.groupdict().items() if v is not None}
        if self._keep_winners:
            self._winners.append((number, signature.id, captures))
        key = group_key(signature, captures)
        known = self._matches.get(key)
        if known is not None:
            known.count += 1
            return True
        if len(self._matches) >= MAX_DISTINCT_MATCHES:
            return True
        match = Match(
            signature=signature,
            captures=captures,
            line=number,
            text=_clip(text),
            timestamp=timestamp,
            group=self._group,
            before=self._lines_before(block, start, signature.before),
            after=_lines_after(block, end, signature.after),
        )
        self._matches[key] = match
        if len(match.after) < signature.after:
            self._pending_after.append(match)
        return True

    def _lines_before(self, block: bytes, start: int, wanted: int) -> list[str]:
        found = _lines_ending_at(block, start, wanted)
        if len(found) < wanted and self._previous_block:
            earlier = _lines_ending_at(
                self._previous_block, len(self._previous_block), wanted - len(found)
            )
            found = earlier + found
        return found

    def _fill_pending_after(self, block: bytes) -> None:
        still_pending: list[Match] = []
        for match in self._pending_after:
            wanted = match.signature.after - len(match.after)
            match.after.extend(_lines_after(block, -1, wanted))
            if len(match.after) < match.signature.after:
                still_pending.append(match)
        self._pending_after = still_pending

    def _fallback(self) -> list[FallbackLine]:
        pool = self._before_exit if self._before_exit else list(self._heuristic)
        scored: list[tuple[int, int, str]] = []
        for number, raw in pool:
            _timestamp, text = logs.normalise(raw)
            if text.startswith(_PROCESS_EXIT) or not text.strip():
                continue
            found = _HEURISTIC_SCORE.search(text)
            score = 0 if found is None else (2 if found.group("strong") else 1)
            if text.startswith("##[error]"):
                score += 2
            if score:
                scored.append((score, number, _clip(text)))
        best = sorted(scored, key=lambda item: (-item[0], -item[1]))[:FALLBACK_LINES]
        return [FallbackLine(number, text) for _score, number, text in sorted(best, key=_by_line)]


def _by_line(item: tuple[int, int, str]) -> int:
    return item[1]


def _lines_ending_at(block: bytes, start: int, wanted: int) -> list[str]:
    """Up to `wanted` lines that end right before offset `start` (a line start)."""
    lines: list[str] = []
    end = start - 1  # the newline ending the previous line
    while len(lines) < wanted and end >= 0:
        begin = block.rfind(b"\n", 0, end) + 1
        lines.append(_clip(logs.normalise(block[begin:end])[1]))
        end = begin - 1
    lines.reverse()
    return lines


def _lines_after(block: bytes, end: int, wanted: int) -> list[str]:
    """Up to `wanted` lines after the line that ends at offset `end` (-1: from the start)."""
    lines: list[str] = []
    begin = end + 1
    while len(lines) < wanted and begin < len(block):
        stop = block.find(b"\n", begin)
        stop = len(block) if stop < 0 else stop
        lines.append(_clip(logs.normalise(block[begin:stop])[1]))
        begin = stop + 1
    return lines


def _clip(text: str) -> str:
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    return text[:MAX_EVIDENCE_CHARS] + " …"


_NUMPY_THRESHOLD = 256 * 1024


def _count_newlines(block: bytes) -> int:
    # bytes.count does about 2 GB/s on one byte; numpy's vectorised compare is about 4x that,
    # and pays for its import only on logs large enough to need it.
    if len(block) < _NUMPY_THRESHOLD:
        return block.count(b"\n")
    return _numpy_count(block)


def _numpy_count(block: bytes) -> int:
    try:
        import numpy
    except ImportError:
        return block.count(b"\n")
    return int(numpy.count_nonzero(numpy.frombuffer(block, dtype=numpy.uint8) == 10))
