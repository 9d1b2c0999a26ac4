"""What each Go test printed, remembered as a log streams, so that `--- FAIL: TestX` can show
TestX's own message when it is not among the lines around it.

`go test -v` (Go 1.14+) streams a test's output as it comes, under the header of the test that
printed it, and prints the `--- FAIL` line when the test ends:

    === RUN   TestProviderTampering/cache_dir_totally_gone
    === PAUSE TestProviderTampering/cache_dir_totally_gone
    === CONT  TestProviderTampering/cache_dir_totally_gone
        providers_tamper_test.go:76: unexpected init error: exit status 1
            stderr:
            Error: Failed to install provider
    === RUN   TestProviderTampering/lock_file_modified
    ...
    --- FAIL: TestProviderTampering (14.05s)
        --- FAIL: TestProviderTampering/cache_dir_totally_gone (10.32s)

With `t.Parallel()` other tests run between a test's message and its `--- FAIL` line, and the
message is far above it: the signature's own window (a few lines around the `--- FAIL` line)
shows other tests' lines. The classifier hands this module the headers (`=== RUN`, `=== CONT`,
`=== NAME`) and the message lines (`    x_test.go:NN: ...`) in log order; it keeps, per test,
the first message printed under its header with its continuation lines (indented deeper),
and gives it back as a Window for a `--- FAIL` line that names the test. Without `-v` the
messages follow the `--- FAIL` line, inside its own window: nothing is kept for them.

Memory is bounded: the first MAX_TESTS tests with a message, each message at most
1 + CONTINUATION lines of logs.MAX_EVIDENCE_CHARS (about 0.7 MB at worst). A test name is
cut to MAX_NAME_CHARS.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from triage_bot.core import ranking
from triage_bot.core.classify_results import Window
from triage_bot.core.logs import clip

# What the prefilter looks for to find the lines looked at.
LITERAL_TRIGGERS = (b"=== RUN ", b"=== CONT ", b"=== NAME ", b"_test.go:")

MAX_TESTS = 128
CONTINUATION = 12  # lines below a message, indented deeper than it (testify's report: ~8)
MAX_NAME_CHARS = 512

_HEADER = re.compile(r"^=== (?:RUN|CONT|NAME)\s+(\S+)")
_HEADER_BYTES = re.compile(rb"=== (?:RUN|CONT|NAME)[ \t]+(\S+)[ \t\r]*$")
_MESSAGE = re.compile(r"^([ \t]+)\S+_test\.go:\d+: ")
_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")


class GoTestOutput:
    """The first message of each test, by test name (see the module doc)."""

    def __init__(self) -> None:
        self._current: str | None = None  # the test whose output the log is printing
        self._messages: dict[str, Window] = {}
        self._erroring: set[str] = set()  # tests whose kept message reads as an error

    def header(self, text: str) -> bool:
        """Whether `text` is a test's header (the test printing from here on)."""
        found = _HEADER.match(text)
        if found is None:
            return False
        self._current = found[1][:MAX_NAME_CHARS]
        return True

    def header_bytes(self, line: bytes) -> bool:
        """`header` of a raw line without its timestamp (most headers are read so: one per
        test in a `-v` log); False also for a line to read decoded."""
        found = _HEADER_BYTES.match(line)
        if found is None:
            return False
        self._current = found[1][:MAX_NAME_CHARS].decode("utf-8", "replace")
        return True

    def message(self, number: int, text: str, lines_below: Callable[[int], list[str]]) -> None:
        """A line at `number` that may be a test's message; `lines_below(n)`: the n lines
        under it, for its continuation lines."""
        test = self._current
        if test is None or test in self._erroring:
            return
        if test not in self._messages and len(self._messages) >= MAX_TESTS:
            return
        found = _MESSAGE.match(text)
        if found is None:
            return
        erroring = ranking.line_score(text) > 0
        if test in self._messages and not erroring:
            return  # a later `t.Log` line: the first one stays
        depth = len(found[1].expandtabs())
        continued = []
        for line in lines_below(CONTINUATION):
            # Go indents a message's next lines deeper, blank ones too (`        `).
            if len(line) - len(line.lstrip()) <= depth and (line.strip() or not line):
                break
            continued.append(line)
        while continued and not continued[-1].strip():
            continued.pop()  # a window never ends on a blank line
        self._messages[test] = Window(number, [], clip(text), continued)
        if erroring:
            self._erroring.add(test)

    def window_for(self, text: str) -> Window | None:
        """The message of the test a `--- FAIL: TestX` line names, when one was printed above."""
        found = _FAIL.match(text)
        return None if found is None else self._messages.get(found[1][:MAX_NAME_CHARS])
