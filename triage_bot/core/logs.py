"""Job logs of GitHub Actions and of the other CI systems, read alike.

A GitHub Actions job log line looks like `2026-10-21T09:12:33.1234567Z ##[error]message`: an
optional UTF-8 BOM on the first line, a timestamp, ANSI colours, CRLF endings,
`##[group]`/`##[endgroup]` around steps and folds, `##[error]`/`##[warning]` annotations.
`normalise` also takes away what other CI systems wrap around a tool's output, so that the same
signatures apply to it:

- `gh run view --log`: `job<TAB>step<TAB>` before the GitHub timestamp;
- Travis CI: `travis_fold:start:NAME`, `travis_time:end:ID:start=...` markers glued to a line
  with `\r` (and `ESC[0K`); `The command "..." exited with N.` stays, it is text;
- GitLab CI: `section_start:1700000000:NAME[collapsed=true]` / `section_end:...` the same way,
  and the `2024-01-01T00:00:00.000000Z 00O ` prefix of its timestamped logs;
- Jenkins: the timestamper's `[2024-01-01T00:00:00.000Z] ` or `12:34:56 ` prefix;
  `[Pipeline] ` lines stay (`is_bookkeeping` says what they are);
- fastlane's `[12:34:56]: ` (and gulp's `[12:34:56] `) before the lines of the tools it runs;
- progress written over itself with a bare `\r` (Maven's downloads, pip, curl, Gradle): a
  terminal shows the last thing written, so the text is the last segment that is not blank
  nor a marker; `\r\n` and `\r\r\n` endings go;
- colour codes anywhere, sbt's `[ESC[31merrorESC[0m]` included;
- `docker build`'s BuildKit `#12 3.456 ` and `docker compose up`'s `app-1  | ` prefixes.

Lines pasted from a web page have none of that and are taken as they are. Bytes that are not
UTF-8 are replaced, never fatal. Line numbers are the 1-based lines of the log as given,
counting `\n` only: a `\r` never starts a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

BOM = "\ufeff"
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
_RAW_TIMESTAMP = re.compile(_TIMESTAMP.pattern.encode())  # the same, on a raw line's bytes
_TIMESTAMP_LENGTH_MIN = 21
# CSI (colours, cursor), OSC (titles, links; ended by BEL or ST), character-set selection
# (terminfo's reset prints ESC ( B) and two-byte escapes. None of
# them spans a newline, so stripping never changes line numbers.
_ANSI = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    rb"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC
    rb"|\x1b[()][0-9A-Za-z]"  # character set
    rb"|\x1b[@-Z\\-_]"  # two bytes
)
_BUILDKIT = re.compile(r"#\d+ \d+\.\d+ ")
# Docker Compose's service prefix, `app-1  | ` (v2; v1 `app_1  | `), padded to align the bars:
# the replica number and the spaced bar tell it from a table's cells.
_COMPOSE = re.compile(r"[A-Za-z0-9][\w.-]{0,62}[-_]\d{1,4} {1,40}\| ")
_COMPOSE_SCAN = 110
# `gh run view --log`: job name TAB step name TAB (a BOM at a step's start) timestamp.
_GH_PREFIX_SCAN = 300
_GH_RUN_VIEW = re.compile(r"[^\t]*\t[^\t]*\t\ufeff?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) ")
# A line of a multi-line log entry (a reporter's annotation, a `%0A` in a workflow command)
# carries no timestamp of its own: gh prints the two columns before the text alone. Taken
# only where it cannot be a tool's tab-separated output: gh's own `UNKNOWN STEP`, or text that
# starts blank (Go's `ok  \tpkg\t0.01s` keeps its columns).
_GH_RUN_VIEW_CONTINUED = re.compile(r"[^\t]{1,200}\t(?:UNKNOWN STEP\t|[^\t]{1,200}\t(?=\s|$))")
# Jenkins' timestamper: `[2024-01-01T00:00:00.000Z] ` (Pipeline) or `12:34:56 ` / elapsed
# `00:00:01.234 ` (freestyle console text); two spaces after the clock as the plugin's own
# README shows it (`21:51:15  Started by user anonymous`), so that the tool's text starts the
# line for the signatures anchored there.
_JENKINS_ISO = re.compile(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)\] ")
_CLOCK = re.compile(r"\d\d:\d\d:\d\d(?:\.\d{3})? {1,2}")
# fastlane's `[13:48:13]: ` before each line of the tools it runs (xcodebuild, gradle), and
# gulp's `[13:48:13] `.
_BRACKETED_CLOCK = re.compile(r"\[\d\d:\d\d:\d\d\]:? ")
# GitLab's timestamped logs: after the timestamp, the stream (O out, E err) and `+` when the
# line continues the one before.
_GITLAB_STREAM = re.compile(r"\d\d[OE]\+? ")
# Fold and timing markers: Travis CI's and GitLab CI's collapsible sections.
_CI_MARKER = re.compile(
    r"(?:travis_fold:(?:start|end):\S*|travis_time:(?:start|end):\S*"
    r"|section_(?:start|end):\d+:\S*)\s*"
)
_BOOKKEEPING = ("[Pipeline] ", "##[group]", "##[endgroup]", "travis_time:", "travis_fold:")


def strip_ansi(block: bytes) -> bytes:
    """Remove terminal escapes from a block of lines; a no-op scan where there is no ESC."""
    if b"\x1b" not in block:
        return block
    return _ANSI.sub(b"", block)


def timestamp_length(raw: bytes) -> int:
    """The length of GitHub's timestamp at the start of a raw line (as split_timestamp
    finds it), or 0."""
    found = _RAW_TIMESTAMP.match(raw)
    return found.end() if found else 0


def split_timestamp(text: str) -> tuple[str | None, str]:
    if len(text) >= _TIMESTAMP_LENGTH_MIN and text[4] == "-" and text[10] == "T":
        found = _TIMESTAMP.match(text)
        if found:
            return text[: found.end() - 1], text[found.end() :]
    return None, text


def normalise(raw: bytes) -> tuple[str | None, str]:
    """One raw line (no newline) -> (timestamp, the text a terminal would show, uncoloured).

    BuildKit's `#12 3.456 ` step-and-seconds prefix goes too, like the timestamp, so that a
    tool's output reads the same inside `docker build` as outside it, and Docker Compose's
    `app-1  | ` service prefix, for the same inside `docker compose up`. The timestamp is the
    GitHub-style one (GitHub, `gh run view`, GitLab, Jenkins' ISO form), else None.
    """
    text = strip_ansi(raw).decode("utf-8", "replace")
    carriage = "\r" in text
    if carriage:
        text = text.rstrip("\r")  # \r\n and \r\r\n endings
    if text.startswith(BOM):
        text = text[1:]
    timestamp, text = split_timestamp(text)
    if timestamp is None:
        timestamp, text = split_other_prefix(text)
    elif len(text) > 3 and text[2] in "OE" and (found := _GITLAB_STREAM.match(text)):
        text = text[found.end() :]
    if carriage and "\r" in text:
        text = last_screen_segment(text)
    elif text.startswith(("travis_", "section_")) and _CI_MARKER.fullmatch(text):
        text = ""
    return timestamp, text[_container_prefix_length(text) :]


def _container_prefix_length(text: str) -> int:
    """The length of the prefix BuildKit or Docker Compose put before a tool's output."""
    found = None
    if text.startswith("#"):
        found = _BUILDKIT.match(text)
    elif " | " in text[:_COMPOSE_SCAN]:
        found = _COMPOSE.match(text)
    return found.end() if found else 0


def split_other_prefix(text: str) -> tuple[str | None, str]:
    """(timestamp, text) without the prefix `gh run view --log` or Jenkins' timestamper put
    before each line; (None, text) when there is none."""
    if "\t" in text[:_GH_PREFIX_SCAN]:
        if found := _GH_RUN_VIEW.match(text):
            return found.group(1), text[found.end() :]
        if found := _GH_RUN_VIEW_CONTINUED.match(text):
            return None, text[found.end() :]
    if text.startswith("[") and (found := _JENKINS_ISO.match(text)):
        return found.group(1), text[found.end() :]
    if len(text) > 10 and text[3] == ":" and (found := _BRACKETED_CLOCK.match(text)):
        return None, text[found.end() :]
    if len(text) > 8 and text[2] == ":" and (found := _CLOCK.match(text)):
        return None, text[found.end() :]
    return None, text


def last_screen_segment(text: str) -> str:
    """What a terminal shows of a line rewritten with bare `\r`: its last segment that is
    neither blank nor a Travis/GitLab fold marker ("" if there is none)."""
    for segment in reversed(text.split("\r")):
        if segment.strip() and not _CI_MARKER.fullmatch(segment):
            return segment
    return ""


def is_bookkeeping(text: str) -> bool:
    """A normalised line that only says how the CI ran the job, never why it failed:
    Jenkins' `[Pipeline] ...` steps, GitHub's `##[group]`/`##[endgroup]`, Travis' timing."""
    return text.startswith(_BOOKKEEPING)


def raw_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The raw lines (without their newline) of a log that arrives in chunks of any size."""
    carry = b""
    for chunk in chunks:
        parts = (carry + chunk).split(b"\n")
        carry = parts.pop()
        yield from parts
    if carry:
        yield carry


def parse_timestamp(value: str) -> datetime:
    """GitHub's 7-digit fractions are more than fromisoformat takes; cut to microseconds."""
    head, _, fraction = value.rstrip("Z").partition(".")
    micro = (fraction + "000000")[:6]
    return datetime.fromisoformat(f"{head}.{micro}+00:00")


@dataclass(frozen=True)
class GroupMark:
    """A `##[group]` line: where a step's log (or a fold inside it) starts."""

    line: int
    timestamp: str | None
    title: str


@dataclass(frozen=True)
class Step:
    """A job's step as the API describes it."""

    number: int
    started_at: datetime | None
    completed_at: datetime | None

    def holds(self, moment: datetime) -> bool:
        """Whether a log line's time falls in the step's span (the API's times are to the
        second, the log's finer)."""
        if self.started_at is None or moment < self.started_at.replace(microsecond=0):
            return False
        return self.completed_at is None or moment <= self.completed_at.replace(microsecond=999999)


def locate_step(line: int, groups: list[GroupMark], steps: list[Step]) -> tuple[int, int] | None:
    """(step number, line within the step) for GitHub's `#step:S:L` link, or None.

    The job log is the steps' logs one after the other, each starting with a `##[group]`
    line. The step is the one whose time span holds the timestamp of the last group line at
    or before `line` that opens a step; the line within it counts from that group line.
    """
    timed = [s for s in steps if s.started_at is not None]
    # "Set up job" starts at the first line, before any group.
    best: tuple[int, int] | None = (timed[0].number, 1) if timed else None
    for mark in groups:
        if mark.line > line:
            break
        if mark.timestamp is None:
            continue
        moment = parse_timestamp(mark.timestamp)
        step = next((s for s in timed if s.holds(moment)), None)
        if step is not None and (best is None or step.number != best[0]) and mark.line > 1:
            best = (step.number, mark.line)
    if best is None:
        return None
    number, first_line = best
    return number, line - first_line + 1


# ---- lines around a match in a block of log bytes, and the line numbers of offsets in it ----
#
# The evidence a comment shows is a few lines before and after the matching line, decoded
# and normalised only when a line matches; a line number is the count of newlines before the
# line's offset, counted in one pass over the block all told.

MAX_EVIDENCE_CHARS = 400


def lines_ending_at(block: bytes, start: int, wanted: int) -> list[str]:
    """Up to `wanted` lines that end right before offset `start` (a line start)."""
    lines: list[str] = []
    end = start - 1  # the newline ending the previous line
    while len(lines) < wanted and end >= 0:
        begin = block.rfind(b"\n", 0, end) + 1
        lines.append(clip(normalise(block[begin:end])[1]))
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
        lines.append(clip(normalise(block[begin:stop])[1]))
        begin = stop + 1
    return lines


def clip(text: str) -> str:
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    text = text.rstrip()  # a formatter's padding to its columns is not worth a clip mark
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    return text[:MAX_EVIDENCE_CHARS] + " …"


class LineCounter:
    """Newlines before increasing offsets of one block, counted in one pass over the block
    all told. `bytes.count` with bounds counts in place (no copy) at about 2 GB/s, five
    times numpy's compare-and-count, and spares the 16 MB that importing numpy costs."""

    def __init__(self, block: bytes) -> None:
        self._block = block
        self._counted_to = 0
        self._count = 0

    def newlines_before(self, offset: int) -> int:
        if offset > self._counted_to:
            self._count += self._block.count(b"\n", self._counted_to, offset)
            self._counted_to = offset
        return self._count
