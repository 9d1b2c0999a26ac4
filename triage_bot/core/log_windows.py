"""Lines around a match in a block of log bytes, and the line numbers of offsets in it.

The evidence a comment shows is a few lines before and after the matching line, decoded
and normalised only when a line matches; a line number is the count of newlines before the
line's offset, counted by numpy in one pass over the block all told.
"""

from __future__ import annotations

import threading

import numpy

from triage_bot.core import logs

MAX_EVIDENCE_CHARS = 400


def lines_ending_at(block: bytes, start: int, wanted: int) -> list[str]:
    """Up to `wanted` lines that end right before offset `start` (a line start)."""
    lines: list[str] = []
    end = start - 1  # the newline ending the previous line
    while len(lines) < wanted and end >= 0:
        begin = block.rfind(b"\n", 0, end) + 1
        lines.append(clip(logs.normalise(block[begin:end])[1]))
        end = begin - 1
    lines.reverse()
    return lines


def lines_after(block: bytes, end: int, wanted: int) -> list[str]:
    """Up to `wanted` lines after the line that ends at offset `end` (-1: from the start)."""
    lines: list[str] = []
    begin = end + 1
    while len(lines) < wanted and begin < len(block):
        stop = block.find(b"\n", begin)
        stop = len(block) if stop < 0 else stop
        lines.append(clip(logs.normalise(block[begin:stop])[1]))
        begin = stop + 1
    return lines


def clip(text: str) -> str:
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    return text[:MAX_EVIDENCE_CHARS] + " …"


_NEWLINE = 10


_per_thread = threading.local()


class LineCounter:
    """Newlines before increasing offsets of one block, counted by numpy in one pass over
    the block all told (bytes.count does a quarter of numpy's speed on one byte)."""

    def __init__(self, block: bytes) -> None:
        self._bytes = numpy.frombuffer(block, dtype=numpy.uint8)
        self._counted_to = 0
        self._count = 0
        # One output buffer per thread, reused: allocating one per block costs more than
        # the compare.
        out = getattr(_per_thread, "out", None)
        if out is None or len(out) < len(block):
            out = _per_thread.out = numpy.empty(max(len(block), 1 << 21), dtype=numpy.bool_)
        self._out = out

    def newlines_before(self, offset: int) -> int:
        if offset > self._counted_to:
            out = self._out[: offset - self._counted_to]
            numpy.equal(self._bytes[self._counted_to : offset], _NEWLINE, out=out)
            self._count += int(numpy.count_nonzero(out))
            self._counted_to = offset
        return self._count
