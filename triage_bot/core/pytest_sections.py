"""pytest's failure sections, remembered as a log streams, so that a short test summary line
(`FAILED tests/x.py::test_y - AssertionError: ...`) can show the lines that explain it.

pytest prints a failing test's explanation in the test's own section, far above the summary:

    ____________________ TestOrders.test_refund[eur] ____________________
    [gw0] linux -- Python 3.12.3 /usr/bin/python          (xdist only)
        def test_refund(self):
    >       assert refund(order) == 200
    E       assert 402 == 200
    E        +  where 402 = refund(<Order 7>)

    tests/test_orders.py:41: AssertionError

The summary line names the test and repeats the first `E` line at most; a reviewer needs the
`E` lines (the values compared, the exception's message) and the `>` line above them. The
classifier hands this module the lines that look like a section's header (`__ name __`) or
an `E` line, in log order; it keeps, per test, the last run of `E` lines of its section with
the lines around it, and gives them back as a Window for a summary line that names the test.
Every layout reads alike once the classifier has normalised a line (GitHub's timestamps and
colour codes gone): long and short tracebacks, `-v`/`-q`, xdist's `[gwN]` line under the
header, setup and teardown errors (`ERROR at setup of test_y`). A traceback printed without
`E` lines (`--tb=native`, `--tb=line`, `--tb=no`) leaves nothing to show: the summary line
stays the evidence.

Memory is bounded: the first MAX_TESTS tests seen with `E` lines (the classifier keeps at most
classify.MAX_DISTINCT_MATCHES failures, and summary lines come in the sections' order), the
last WINDOWS_PER_TEST sections of each (a name shared by two files, a test re-run), each of at
most BEFORE + 1 + AFTER + 1 lines of logs.MAX_EVIDENCE_CHARS: about 3 MB at worst. Only the
lines a run needs are decoded: its first few lines above and its lines below until it ends.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from triage_bot.core.classify_results import Window
from triage_bot.core.logs import clip, normalise

# What the prefilter looks for, in the raw bytes, to find the lines looked at: a section's
# header (`__ name __`; a name that fills the terminal's width has one `_` each side) and an
# `E` line, each at a line's start: at the block's or after a newline (regex triggers), after
# a timestamp (GitHub's and `gh run view`'s `...Z `, Jenkins' `[...Z] `, GitLab's `... 01O `
# or `01O+ `) or after pytest's colour (bold; red). Not `_ ` and `E   ` alone: `_ ` is in
# every `_ _ _` rule between a long traceback's frames, dozens of times, and `E   ` brings the
# colour part `m   ` (engine.colour_parts), in one line of 8. A line whose `E` or `_` follows
# another prefix (a bare clock, BuildKit's `#12 3.456 `) is not found: its summary line keeps
# its own window.
_PREFIXES = (b"Z ", b"] ", b"O ", b"+ ")
LITERAL_TRIGGERS = (
    b"__ ",
    b"[1m_ ",
    b"[31mE   ",
    *(prefix + b"_ " for prefix in _PREFIXES),
    *(prefix + b"E   " for prefix in _PREFIXES),
)
# At a line's start, not the `_ _ _` rule (a timestamped one is found, and let go in header).
REGEX_TRIGGERS = (rb"^_ [^_ ]", rb"\n_ [^_ ]", rb"^E   ", rb"\nE   ")

MAX_TESTS = 128
WINDOWS_PER_TEST = 2
# Lines kept above the first `E` line (the `>` line and the rest of its statement; the
# section's header is not crossed), FIRST_BEFORE of them at first (more only when no `>`
# line is among them), and `E` lines below it (then pytest's `path.py:NN: ErrorType`).
BEFORE = 8
FIRST_BEFORE = 4
AFTER = 16
# At most this many lines are shown (the comment's evidence windows keep to it), of them
# at most MARKED_BEFORE from the `>` line down (a statement spread over lines).
MAX_LINES = 16
MARKED_BEFORE = 3
# Lines shown above the `E` lines when no `>` line marks the failing statement (`--tb=short`:
# `tests/x.py:12: in test_y` and the statement).
BEFORE_WITHOUT_MARK = 2
# A run of `E` lines ends where this many lines hold none (pytest prints a run without a gap;
# an `E` line whose trailing blanks a tool stripped is not found, and must not start another).
RUN_GAP = 3

# `____ name ____`; not the `_ _ _ _` rule between a long traceback's frames.
_HEADER = re.compile(r"^_+ (?P<title>\S.*?) _+$")
_FRAME_RULE = re.compile(r"^[_ ]+$")
_E_LINE = re.compile(r"^E(?: |$)")
# pytest's last line of a failure: where it was raised, `tests/x.py:41: TypeError`.
_LOCATION = re.compile(r"^\S+:\d+: \S")
# A short test summary line: FAILED (a test's body) or ERROR (its setup or teardown).
_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<file>[^\s:]+\.py)::(?P<name>\S.*?)(?: - .*)?$")
_ERROR_HEADER = re.compile(r"^ERROR at (?:setup|teardown) of (?P<name>.+)$")
_DOCTEST = "[doctest] "


@dataclass
class _Run:
    """A run of `E` lines in one test's section, as it was read."""

    line: int  # the first `E` line's number
    before: list[str]
    text: str
    last_e: int  # the number of the last `E` line seen
    # The `E` lines below the first, then pytest's location line, as they are read.
    after: list[str] = field(default_factory=list)
    reading: bool = True  # the lines below are still read (a block may end first)
    blanks: int = 0  # blank lines read below the last `E` line
    longer: bool = False  # `E` lines went on past the lines kept

    def take(self, line: str) -> None:
        """The next line below: another `E` line, the blank line before pytest's location
        line, the location line (the run's last), or what ends the run."""
        if _E_LINE.match(line) and not self.blanks:
            if len(self.after) < AFTER:
                self.after.append(line)
                return
            self.longer = True
        elif not line.strip() and not self.blanks:
            self.blanks += 1
            return
        elif _LOCATION.match(line):
            self.after.append(line)
        self.reading = False


@dataclass
class _Section:
    key: tuple[str, str]  # (FAILED or ERROR, the test's name as its header shows it)
    header_line: int
    run: _Run | None = None


@dataclass
class PytestSections:
    """What a job's log said in its pytest sections, as far as it was read."""

    _section: _Section | None = None
    _runs: dict[tuple[str, str], deque[_Run]] = field(default_factory=dict)
    _pending: list[_Run] = field(default_factory=list)

    def header(self, number: int, text: str) -> bool:
        """Whether line `number` (`text`, normalised) starts a test's section."""
        found = _HEADER.match(text)
        if found is None or _FRAME_RULE.match(found["title"]):
            return False
        self._section = _Section(_section_key(found["title"]), number)
        return True

    def e_line(self, number: int, text: str) -> int | None:
        """Take line `number` if it is an `E` line of a test's section; when it starts a run
        of them, at most how many lines above it belong to the section (then start_run),
        else None."""
        section = self._section
        if section is None or not _E_LINE.match(text):
            return None
        run = section.run
        if run is not None and number - run.last_e <= RUN_GAP:
            run.last_e = number  # the same run goes on (read already, or cut)
            return None
        return min(BEFORE, number - section.header_line - 1)

    def start_run(
        self,
        number: int,
        text: str,
        lines_before: Callable[[int], list[str]],
        limit: int,
        below: tuple[bytes, int],
    ) -> None:
        """The first `E` line of a run: its text, the lines above it (`lines_before(n)`: the
        last n, at most `limit`, the section's), and the block it is in with the offset of
        its end (`below`), where the lines below it are read, in the next block as well
        when this one ends first. The section's last run is the one kept (a chained
        exception's final one, as the summary line's reason is)."""
        section = self._section
        if section is None:
            return
        # Decoding costs: a few lines up hold the `>` line, most often.
        before = lines_before(min(limit, FIRST_BEFORE))
        if limit > FIRST_BEFORE and not any(line.startswith(">") for line in before):
            before = lines_before(limit)
        run = _Run(number, before, text, number)
        _read_below(run, *below)
        if run.reading:
            self._pending.append(run)
        section.run = run
        runs = self._runs.get(section.key)
        if runs is None:
            if len(self._runs) >= MAX_TESTS:
                return
            runs = self._runs[section.key] = deque(maxlen=WINDOWS_PER_TEST)
        if runs and runs[-1].line >= section.header_line:
            runs[-1] = run  # another run of the same section replaces the one before
        else:
            runs.append(run)

    def next_block(self, block: bytes) -> None:
        """The next block of lines, for the runs whose lines below went on past a block."""
        for run in self._pending:
            _read_below(run, block, -1)
        self._pending = [run for run in self._pending if run.reading]

    @property
    def reading(self) -> bool:
        """Whether a run's lines below go on in the next block."""
        return bool(self._pending)

    def window_for(self, summary: str) -> Window | None:
        """The `E` lines of the test a short test summary line names, or None (not such a
        line, or its section printed none)."""
        found = _SUMMARY.match(summary)
        if found is None:
            return None
        runs = self._runs.get((found["kind"], _test_name(found["name"])))
        if not runs:
            return None
        return _window(_pick(runs, found["file"]))


def _read_below(run: _Run, block: bytes, end: int) -> None:
    """Read the lines of `block` after offset `end` (a newline; -1: from its start) into
    `run`, one at a time, while the run takes them."""
    begin = end + 1
    while run.reading and begin < len(block):
        stop = block.find(b"\n", begin)
        stop = len(block) if stop < 0 else stop
        run.take(clip(normalise(block[begin:stop])[1]))
        begin = stop + 1


def _section_key(title: str) -> tuple[str, str]:
    error = _ERROR_HEADER.match(title)
    if error is not None:
        return "ERROR", error["name"]
    return "FAILED", title.removeprefix(_DOCTEST)


def _test_name(nodeid_tail: str) -> str:
    """The name a section's header shows for a test id's part after `file.py::`:
    `TestA::test_b[x::y]` -> `TestA.test_b[x::y]` (a parameter's id is left as it is)."""
    head, bracket, params = nodeid_tail.partition("[")
    return head.replace("::", ".") + bracket + params


def _pick(runs: deque[_Run], file: str) -> _Run:
    """Of a name's sections, the last one whose location line names the summary's file
    (two files may hold a test of the same name), else the last one."""
    for run in reversed(runs):
        if any(line.split(":", 1)[0].endswith(file) for line in _location_lines(run)):
            return run
    return runs[-1]


def _location_lines(run: _Run) -> list[str]:
    return [line for line in run.after if _LOCATION.match(line)]


def _window(run: _Run) -> Window:
    """The run as evidence, in at most MAX_LINES lines: from the `>` line (the failing
    statement) down to the `E` lines and pytest's location line below them; `E` lines past
    the room left are cut, with a marker, and the location line is kept."""
    marks = [at for at, line in enumerate(run.before) if line.startswith(">")]
    before = run.before[marks[-1] :][:MARKED_BEFORE] if marks else run.before[-BEFORE_WITHOUT_MARK:]
    explanation = [line for line in run.after if _E_LINE.match(line)]
    location = [line for line in run.after if not _E_LINE.match(line)]
    room = MAX_LINES - len(before) - 1 - len(location)
    if run.longer or len(explanation) > room:
        explanation = [*explanation[: room - 1], "…"]  # more `E` lines than are shown
    return Window(run.line, list(before), run.text, explanation + location)
