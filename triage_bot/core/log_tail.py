"""The last N bytes of a log, with the real line numbers of the log.

A failure is at the end of a log far more often than at its start, so a byte cap keeps the
tail. The bytes before it (the head) are not classified: they are only counted, newlines with
`bytes.count` (memchr speed, no regex), and the step marks (`##[group]` lines) in them are
kept, so that a line of the tail has its real number and its link to GitHub's log viewer
points at the right step. The tail starts at a line start: the partial line the cut falls in
is counted with the head.

Where the log's size is known before its first byte (a file's size, an HTTP Content-Length)
the head is counted as it passes and the tail is handed on at once. Where it is not (stdin, a
decompressing stream), the last N bytes are held in a ring of chunks (at most N bytes plus one
chunk) and handed on at the end.
"""

from __future__ import annotations

from collections import deque

from triage_bot.core import logs

_GROUP = b"##[group]"
# A `##[group]` mark is at a line's start, after a timestamp: this much of a line is enough.
_LINE_HEAD_BYTES = 256
MAX_HEAD_GROUPS = 5000


class TailGate:
    """Passes on only the last `max_bytes` of a log, from a line start; counts the rest."""

    def __init__(self, max_bytes: int, log_size: int | None = None) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.max_bytes = max_bytes
        self.skipped_lines = 0  # newlines in the bytes not passed on
        self.skipped_bytes = 0
        self.groups: list[logs.GroupMark] = []  # the step marks in those bytes
        self._head_end: int | None = None  # where the tail starts, once the size is known
        self._passing = False  # the tail has begun: every byte passes
        self._last_skipped = b"\n"  # the last byte counted: is the next one a line start?
        self._line_head = bytearray()  # the start of the line being counted, for group marks
        self._ring: deque[bytes] = deque()
        self._ring_bytes = 0
        if log_size is not None:
            self.expect_size(log_size)

    def expect_size(self, log_size: int) -> None:
        """The log's size in bytes; only before the first byte (later it is ignored)."""
        if self.skipped_bytes == 0 and not self._passing and not self._ring:
            self._head_end = max(0, log_size - self.max_bytes)

    @property
    def skipped(self) -> bool:
        return self.skipped_bytes > 0

    def take(self, chunk: bytes) -> bytes:
        """The part of `chunk` to classify now (empty while the head passes or is held)."""
        if self._passing:
            return chunk
        if self._head_end is None:
            self._hold(chunk)
            return b""
        room = self._head_end - self.skipped_bytes
        if room > 0:
            self._count(chunk[:room])
            chunk = chunk[room:]
        return self._from_line_start(chunk) if chunk else b""

    def drain(self) -> bytes:
        """At the end of the log: what is still held, from a line start (the ring's tail)."""
        if self._passing or not self._ring:
            return b""
        data = b"".join(self._ring)
        self._ring.clear()
        excess = len(data) - self.max_bytes
        if excess > 0:
            self._count(data[:excess])
            data = data[excess:]
        return self._from_line_start(data)

    def _hold(self, chunk: bytes) -> None:
        self._ring.append(chunk)
        self._ring_bytes += len(chunk)
        # Whole chunks that fall out of the last max_bytes are counted and let go.
        while self._ring_bytes - len(self._ring[0]) >= self.max_bytes:
            dropped = self._ring.popleft()
            self._ring_bytes -= len(dropped)
            self._count(dropped)

    def _from_line_start(self, data: bytes) -> bytes:
        if self._last_skipped != b"\n":  # the cut fell inside a line: it goes with the head
            end = data.find(b"\n")
            if end < 0:
                self._count(data)
                return b""
            self._count(data[: end + 1])
            data = data[end + 1 :]
        self._passing = True
        return data

    def _count(self, data: bytes) -> None:
        if not data:
            return
        self._note_groups(data)
        self.skipped_lines += data.count(b"\n")
        self.skipped_bytes += len(data)
        self._last_skipped = data[-1:]

    def _note_groups(self, data: bytes) -> None:
        """The `##[group]` lines among the complete lines of line_head + data."""
        if len(self.groups) >= MAX_HEAD_GROUPS:
            return
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            room = _LINE_HEAD_BYTES - len(self._line_head)
            if room > 0:
                self._line_head += data[:room]
            return
        if self._line_head or _GROUP in data:
            block = bytes(self._line_head) + data[:cut] if self._line_head else data[:cut]
            self._groups_in(block)
        self._line_head = bytearray(data[cut : cut + _LINE_HEAD_BYTES])

    def _groups_in(self, block: bytes) -> None:
        number, counted_to = self.skipped_lines + 1, 0  # the line at offset counted_to
        found = block.find(_GROUP)
        while found >= 0 and len(self.groups) < MAX_HEAD_GROUPS:
            start = block.rfind(b"\n", 0, found) + 1
            end = block.find(b"\n", found)
            timestamp, text = logs.normalise(logs.strip_ansi(block[start:end]))
            if text.startswith("##[group]"):
                number += block.count(b"\n", counted_to, start)  # only since the last mark
                counted_to = start
                self.groups.append(logs.GroupMark(number, timestamp, text[len("##[group]") :]))
            found = block.find(_GROUP, end)


def tail_note(gate: TailGate | None) -> str | None:
    """What the comment says of a log whose head was not read."""
    if gate is None or not gate.skipped:
        return None
    return (
        f"only the last {gate.max_bytes:,} bytes of the log were read: "
        f"lines 1-{gate.skipped_lines:,} were counted, not read"
    )
