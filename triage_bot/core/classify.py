"""Lines x catalog -> matches, streaming, in bounded memory.

A log arrives in chunks of any size (a download, a file, stdin). Chunks are cut into blocks
of complete lines; a multi-literal prefilter finds the lines that hold a signature's keyword
or a marker, and only those lines are decoded and tried against the signatures' regular
expressions, best priority first. The first signature that matches a line wins that line.
The same scan finds the ends of steps and the lines holding an error word, so each match
knows its step and each step keeps a bounded set of best-guess lines. At the end, ranking.py
orders the matches as a person reads the log (the root cause first, the others as also
seen) and picks the best-guess lines. Nothing here talks to GitHub: this is a pure function
of the bytes, the catalog and (optionally) the step the API says failed.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable

import regex

from triage_bot.core import go_test_output, logs, pytest_sections, ranking
from triage_bot.core.catalog import Catalog, Signature
from triage_bot.core.classify_results import (
    FallbackLine,
    JobResult,
    Match,
    PatternTimeout,
    SectionEnd,
    Steps,
    TimeCut,
    Weighed,
    group_key,
)
from triage_bot.core.compare import (
    MAX_LINE_CHARS,
    PassingLines,
    PassingUnreadable,
)
from triage_bot.core.engine import (
    Prefilter,
    Trigger,
    build_prefilter,
    choose_engine,
)
from triage_bot.core.go_test_output import GoTestOutput
from triage_bot.core.log_tail import TailGate
from triage_bot.core.logs import LineCounter, clip, lines_after, lines_ending_at
from triage_bot.core.pytest_sections import PytestSections
from triage_bot.core.regex_shapes import cpu_search, top_level_branches

# Distinct matches kept per job. Once full, a new one takes the place of an older match of
# the signature that has the most (never that signature's first): a formatter listing 94
# files early in the log must not crowd out the test that failed at its end.
MAX_DISTINCT_MATCHES = 100
MAX_VARIANTS = 50
# With a passing run, a step's best-guess lines are sifted once the log is read (the lines
# the passing run also printed go): its first and last ones are kept until then in pools this
# much larger than ranking's, so that up to 232 of its first and 472 of its last lines can be
# old without crowding out a new one. Three pools live at once (this step's, the failing
# step's, the log's; they share lines), each line at most MAX_LINE_CHARS: ~9 MiB at worst.
SIFTED_HEAD = 256
SIFTED_TAIL = 512
# GitHub's error annotations kept to be sifted the same way (the first 8 new are shown).
SIFTED_ANNOTATIONS = 64
MAX_LINE_BYTES = 64 * 1024
# Pieces smaller than this are gathered before they are classified.
MIN_BLOCK_BYTES = 512 * 1024
# A repository's signature is an untrusted regex run on a shared worker: each search may take
# this much CPU time of the worker's thread (a timeout is no match on that line), and after
# this many timeouts in one job the signature is skipped for the rest of it. CPU time, not
# wall time, so that a loaded machine or busy sibling threads do not drop a fast pattern.
# Built-in ones run unbounded: `catalog lint` keeps them linear, and the argument costs
# time in the hot loop.
REPO_PATTERN_TIMEOUT_S = 0.1
MAX_PATTERN_TIMEOUTS = 3
# A pattern sees at most this many characters of a line: the first and the last half of a
# longer one, searched apart. Failures are told at a line's start (a compiler's message) or
# at its end (a progress line overwritten by `\r`, then the error); the middle of a giant
# line is minified code or data. `catalog lint` bounds every pattern's time per 64 KiB.
MAX_REGEX_CHARS = 64 * 1024
# One job's classification may use this much CPU time; past it the rest of the log is not
# read and the report says so (JobResult.time_cut). Lint keeps each pattern linear, but a
# log of long lines full of keywords still costs each candidate signature per line.
MAX_JOB_CPU_S = 60.0
# The budget is looked at every this many candidate lines (each costs a few patterns at most
# a few ms, so the overshoot is small).
_CPU_CHECK_LINES = 32

# Enough for 40 lines of context or 200 fallback lines of ordinary length.
_RECENT_BYTES = 64 * 1024
# A step's header (`##[group]Run`, its script, `shell:`, `env:` and variables, `##[endgroup]`)
# is searched for its end only in a step of at most this many lines: in a longer one the
# last words are its output whatever the header's length.
_HEADER_REACH = 200
_END_GROUP = "##[endgroup]"
_ERROR_MARKER = ranking.GITHUB_ERROR.encode()
# No line: the line number of a traceback Python ignored when none is open.
_NEVER = -(1 << 62)
# Where a step's log starts in the job log: its `##[group]Run ...` line. Kept (a bounded
# number of them) so that a line can be linked to GitHub's log viewer (#step:S:L).
_GROUP_MARKER = b"##[group]"
MAX_GROUP_MARKS = 5000


class CompiledCatalog:
    """The prefilter built once for a catalog, shared by every job classified with it."""

    def __init__(self, catalog: Catalog, engine: str | None = None) -> None:
        self.catalog = catalog
        engine_name = choose_engine(engine)
        triggers: list[Trigger] = []
        index_of: dict[Trigger, int] = {}

        def trigger_index(trigger: Trigger) -> int:
            if trigger not in index_of:
                index_of[trigger] = len(triggers)
                triggers.append(trigger)
            return index_of[trigger]

        ranked = sorted(catalog.signatures, key=lambda s: -s.priority)
        self.rank = {s.id: position for position, s in enumerate(ranked)}
        # The signatures whose searches are bounded in time (REPO_PATTERN_TIMEOUT_S).
        self.untrusted = frozenset(s.id for s in catalog.signatures if s.from_repository)
        self.by_literal: dict[int, list[Signature]] = {}
        for signature in ranked:
            for trigger in _triggers(signature):
                self.by_literal.setdefault(trigger_index(trigger), []).append(signature)
        self.error_marker = trigger_index(Trigger(_ERROR_MARKER))
        self.group_marker = trigger_index(Trigger(_GROUP_MARKER))
        self.travis_start = trigger_index(Trigger(ranking.TRAVIS_STEP_START.encode()))
        # The ends of steps (ranking.step_end) and the words of best-guess error lines.
        self.step_ends = frozenset(
            trigger_index(Trigger(t.encode())) for t in ranking.STEP_END_LITERALS
        )
        self.error_words = frozenset(
            trigger_index(trigger) for trigger in _error_word_triggers(engine_name)
        )
        # pytest's `E` lines and section headers, for the evidence of its summary lines.
        self.pytest_marks = frozenset(
            [trigger_index(Trigger(t)) for t in pytest_sections.LITERAL_TRIGGERS]
            + [trigger_index(Trigger(t, is_regex=True)) for t in pytest_sections.REGEX_TRIGGERS]
        )
        # Go's test headers and `x_test.go:NN:` lines, for the evidence of `--- FAIL` lines.
        self.go_test_marks = frozenset(
            trigger_index(Trigger(t)) for t in go_test_output.LITERAL_TRIGGERS
        )
        # What makes _examine_line decode a line that no signature's regex is tried on.
        self.decoded_anyway = frozenset(
            {self.error_marker, self.group_marker, self.travis_start}
            | self.step_ends
            | self.error_words
            | self.pytest_marks
            | self.go_test_marks
        )
        stand_ins = [k.encode() for s in catalog.signatures if s.prefilter for k in s.keywords]
        if engine_name == "hyperscan":  # the error words' regex: their literals' colour parts
            stand_ins += [word.encode() for word in ranking.FALLBACK_WORD_LITERALS]
        self.prefilter: Prefilter = build_prefilter(triggers, engine_name, stand_ins)
        self._keyword_bytes = {
            s.id: (tuple(k.encode() for k in s.keywords), tuple(k.encode() for k in s.any_keywords))
            for s in catalog.signatures
        }

    def lines_found(self, block: bytes) -> dict[int, set[int] | None]:
        """The start of each line of `block` (whole lines) the scan found, with the triggers
        it saw there (None: not known for sure: a colour part, an engine that cannot say)."""
        seen: dict[int, set[int] | None] = {}
        for end, index in self.prefilter.scan_ids(block):
            start = block.rfind(b"\n", 0, end - 1) + 1  # a regex may end on the newline
            known = seen.setdefault(start, set())
            if known is not None:
                if index < 0:
                    seen[start] = None
                else:
                    known.add(index)
        return seen

    def triggers_in(self, raw: bytes, clean: bytes, known: set[int] | None) -> set[int]:
        """The triggers a found line holds: the scan's own account of a plain line is
        complete; a coloured line's stripped text (`clean`) may hold more than its raw bytes
        showed, and is asked."""
        return known if known is not None and clean is raw else self.prefilter.literals_in(clean)

    def regex_candidates(self, clean: bytes, present: set[int]) -> list[Signature]:
        """The signatures whose regex a line (stripped of colour) is tried against, as
        JobClassifier._examine_line picks them: those of the triggers it holds (`present`)
        whose keywords it holds too."""
        by_id = {s.id: s for index in present for s in self.by_literal.get(index, ())}
        return [s for s in by_id.values() if self.keywords_hold(s, clean)]

    def keywords_hold(self, signature: Signature, line: bytes) -> bool:
        every, any_of = self._keyword_bytes[signature.id]
        if not all(keyword in line for keyword in every):
            return False
        return not any_of or any(keyword in line for keyword in any_of)


def _error_word_triggers(engine_name: str) -> list[Trigger]:
    """What finds a best-guess line's error word: with Hyperscan, the words standing alone
    (ranking.FALLBACK_WORD_REGEX) and the other literals; else every literal."""
    if engine_name != "hyperscan":
        return [Trigger(t.encode()) for t in ranking.FALLBACK_LITERALS]
    others = ranking.FALLBACK_OTHER_LITERALS
    return [
        Trigger(ranking.FALLBACK_WORD_REGEX, is_regex=True),
        *(Trigger(t.encode()) for t in others),
    ]


def _triggers(signature: Signature) -> list[Trigger]:
    if signature.prefilter:
        branches = top_level_branches(signature.prefilter)
        return [Trigger(branch.encode(), is_regex=True) for branch in branches]
    # The keyword's context in the pattern where known (`Error: ` for `Error`): a bare word
    # is in test and package names on many lines of a big job's log.
    return [Trigger(t.encode()) for t in signature.context_triggers or signature.triggers]


def classify(
    chunks: Iterable[bytes],
    catalog: CompiledCatalog,
    name: str = "job",
    *,
    max_bytes: int | None = None,
    log_size: int | None = None,
    keep_winners: bool = False,
) -> JobResult:
    """Classify one job's log, given as chunks of bytes of any size."""
    job = JobClassifier(
        catalog, name, max_bytes=max_bytes, log_size=log_size, keep_winners=keep_winners
    )
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
        log_size: int | None = None,
        keep_winners: bool = False,
        max_cpu_s: float = MAX_JOB_CPU_S,
        failing_step: logs.Step | None = None,
        passing: PassingLines | None = None,
    ) -> None:
        self._catalog = catalog
        # The passing run's lines (compare.py), when there is a passing run to compare with:
        # asked about once, when this log is read (_sift), of the lines that may be reported.
        self._passing = passing
        # Why the passing run could not be asked (PassingUnreadable): no comparison.
        self.passing_error: str | None = None
        # The matches' lines as the passing run is asked about them (Match.text is clipped).
        self._match_lines: dict[tuple[str, tuple[str, ...]], str] = {}
        self._name = name
        # max_bytes: only the log's last max_bytes are classified, the lines before are
        # counted (log_tail.py); log_size, when known, spares holding that tail in memory.
        self.tail = TailGate(max_bytes, log_size) if max_bytes is not None else None
        self._keep_winners = keep_winners
        self._carry = bytearray()
        # Whether the gathered bytes hold a complete line (else they are one long line).
        self._carry_has_newline = False
        # The last bytes before the current block, for evidence that starts before it.
        self._recent = b""
        self._lines_done = 0  # complete lines before the current block
        self._bytes_read = 0
        self._matches: dict[tuple[str, tuple[str, ...]], Match] = {}
        # The keys of self._matches per signature, oldest first (for making room). Derivable
        # from the keys, but scanning them for each new match once full cost 30% more CPU on
        # a log of 400k distinct matches (27.4 s against 20.9 s).
        self._keys_by_signature: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self._pending_after: list[Match] = []
        self._pytest = PytestSections()
        self._go_tests = GoTestOutput()
        self._annotations: list[FallbackLine] = []
        self._groups: list[logs.GroupMark] = []
        # Steps (sections of the log between step ends), for ranking and the fallback.
        self._section = 0
        self._section_start = 1
        # The first step whose end was kept past ranking.MAX_SECTIONS (none yet).
        self._cap_from = 1 << 62
        self._section_ends: dict[int, SectionEnd] = {}
        self._failing_section: int | None = None
        # The last `##[error]` that ends no step (its step, line, text): a JavaScript action
        # that fails through core.setFailed prints only that, and no runner line.
        self._last_annotation: tuple[int, int, str] | None = None
        # The last line that opened a traceback Python ignored (ranking.IGNORED).
        self._ignored_from = _NEVER
        # The matches of the last few matched lines: the one a `During handling of the above
        # exception` line follows (ranking.HANDLED), found without a scan of every match.
        self._latest: deque[Match] = deque(maxlen=ranking.HANDLED_EXCEPTION_LINES)
        self._candidates = self._new_pool()
        self._failing_candidates: ranking.Candidates | None = None
        # The whole log's, for a log whose failing step is not marked.
        self._log_candidates = self._new_pool()
        # The step GitHub's API says failed (its time span): the step of the log whose end
        # falls in it is the failing one, whatever failed after it (`if: failure()` steps).
        self._api_step = failing_step
        self._api_failing: int | None = None
        self._winners: list[tuple[int, str, dict[str, str]]] = []
        self._in_long_line = False
        self._timeouts: dict[str, PatternTimeout] = {}
        # CPU time spent classifying (summed per block: the feeding thread may change).
        self._max_cpu_s = max_cpu_s
        self._cpu_used = 0.0
        self._block_started = 0.0
        self._time_cut: TimeCut | None = None
        # The first line is checked (a budget already spent stops at once), then every Nth.
        self._unchecked_lines = _CPU_CHECK_LINES - 1

    def expect_size(self, log_size: int) -> None:
        """The log's size, learnt before its first byte (a download's Content-Length)."""
        if self.tail is not None:
            self.tail.expect_size(log_size)

    def feed(self, chunk: bytes) -> bool:
        """Take the next chunk; False once the CPU budget is spent and the rest is unwanted
        (a byte cap never stops the reading: the lines before the kept tail are counted)."""
        if self._time_cut is not None:
            return False
        if self.tail is not None:
            chunk = self.tail.take(chunk)
            if not chunk:
                return True
            self._begin_tail()
        self._take(chunk)
        return self._time_cut is None

    def _begin_tail(self) -> None:
        # The first bytes of the tail: the lines and step marks before it were counted.
        assert self.tail is not None
        if self._bytes_read == 0:
            self._lines_done = self.tail.skipped_lines
            self._groups = list(self.tail.groups)

    def _take(self, chunk: bytes) -> None:
        self._bytes_read += len(chunk)
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            self._carry += chunk
            if not self._carry_has_newline and len(self._carry) > MAX_LINE_BYTES:
                self._flush_long_line()
            return
        if len(self._carry) + cut < MIN_BLOCK_BYTES:
            # Small pieces (a socket's) are gathered: the cost of a block is mostly fixed.
            self._carry += chunk
            self._carry_has_newline = True
            return
        # One copy: what was gathered joined to this chunk's complete lines.
        block = (
            b"".join((self._carry, memoryview(chunk)[:cut]))
            if self._carry or cut < len(chunk)
            else chunk
        )
        self._carry = bytearray(chunk[cut:])
        self._carry_has_newline = False
        self._process(block)

    def finish(self) -> JobResult:
        if self.tail is not None and self._time_cut is None:
            held = self.tail.drain()
            self._begin_tail()
            self._take(held)
        if self._carry and self._time_cut is None:
            rest = bytes(self._carry)
            self._process(rest if rest.endswith(b"\n") else rest + b"\n")
            self._carry = bytearray()
        self._end_action_failure()
        self._sift()
        # Stable order first (priority, line, catalog rank), then as a person reads the log.
        found = sorted(
            self._matches.values(),
            key=lambda m: (-m.signature.priority, m.line, self._catalog.rank[m.signature.id]),
        )
        steps = Steps(dict(self._section_ends), self._failing_section)
        weighed = ranking.rank(found, steps, self._lines_done)
        for item in weighed:
            item.match.reason = item.reason
        matches = [item.match for item in weighed]
        root = matches[0] if matches else None
        fallback = self._fallback(root) if _needs_fallback(weighed) else []
        return JobResult(
            name=self._name,
            matches=matches,
            fallback_lines=fallback,
            lines=self._lines_done,
            bytes_read=self._bytes_read,
            truncated=self.tail is not None and self.tail.skipped,
            engine=self._catalog.prefilter.name,
            winners=self._winners,
            groups=self._groups,
            timeouts=list(self._timeouts.values()),
            time_cut=self._time_cut,
            weighed=weighed,
            steps=steps,
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
        self._block_started = time.thread_time()
        try:
            self._process_block(block)
        finally:
            self._cpu_used += time.thread_time() - self._block_started

    def _out_of_time(self, start: int, counter: LineCounter) -> bool:
        """Whether the job's CPU budget is spent; if so, where classification stopped.
        Asked every _CPU_CHECK_LINES lines: reading the clock costs a system call (~1 us)."""
        self._unchecked_lines += 1
        if self._unchecked_lines < _CPU_CHECK_LINES:
            return False
        self._unchecked_lines = 0
        if self._cpu_used + time.thread_time() - self._block_started < self._max_cpu_s:
            return False
        line = self._lines_done + counter.newlines_before(start) + 1
        self._time_cut = TimeCut(line=line, cpu_s=self._max_cpu_s)
        return True

    def _process_block(self, block: bytes) -> None:
        if self._in_long_line:
            # The rest of an overlong line: skip to its end.
            end = block.find(b"\n") + 1
            self._in_long_line = False
            self._lines_done += 1
            block = block[end:]
            if not block:
                return
        if self._pending_after:
            self._fill_pending_after(block)
        if self._pytest.reading:
            self._pytest.next_block(block)
        seen = self._catalog.lines_found(block)
        counter = LineCounter(block)
        for start in sorted(seen):
            if self._out_of_time(start, counter):
                break
            end = block.find(b"\n", start)
            self._examine_line(block, start, len(block) if end < 0 else end, counter, seen[start])
        self._lines_done += counter.newlines_before(len(block))
        self._remember(block)

    def _remember(self, block: bytes) -> None:
        if len(block) >= _RECENT_BYTES:
            self._recent = block[-_RECENT_BYTES:]
        else:
            self._recent = (self._recent + block)[-_RECENT_BYTES:]

    def _examine_line(
        self, block: bytes, start: int, end: int, counter: LineCounter, known: set[int] | None
    ) -> None:
        catalog = self._catalog
        raw = block[start:end]
        clean = logs.strip_ansi(raw)
        present = catalog.triggers_in(raw, clean, known)
        if not present:
            return  # a colour-tolerant part that was not the literal after all
        if raw.startswith(_SCRIPT_ECHO, logs.timestamp_length(raw)):
            return  # the step's script as GitHub echoes it: `echo "ERROR: ..."` is no error
        # Most candidate lines fail on a keyword: check them on the bytes, before decoding.
        candidates = catalog.regex_candidates(clean, present)
        travis_start = catalog.travis_start in present
        markers = catalog.error_marker in present or catalog.group_marker in present or travis_start
        step_end = markers or not catalog.step_ends.isdisjoint(present)
        error_words = not catalog.error_words.isdisjoint(present)
        pytest_line = not catalog.pytest_marks.isdisjoint(present)
        go_test_line = not catalog.go_test_marks.isdisjoint(present)
        decoded = candidates or step_end or error_words or pytest_line
        # A `go test -v` header (one per test) is read on its bytes, not decoded.
        if not decoded and (not go_test_line or self._go_header(clean)):
            return
        # Counted only now: most lines the scan finds end above, and lines come in order.
        number = self._lines_done + counter.newlines_before(start) + 1
        timestamp, text = logs.normalise(clean)
        if ranking.ignored_exception_header(text):
            self._ignored_from = number
        if text.startswith(ranking.HANDLING_HEADER):
            self._mark_handled(number)
        if catalog.error_marker in present:
            self._track_error(number, text)
        if catalog.group_marker in present and text.startswith("##[group]"):
            self._mark_group(number, timestamp, text)
            if text.startswith(ranking.GITHUB_STEP_START):
                self._start_section(number)
        if travis_start and self._section_start < number:
            self._start_section(number)
        if pytest_line:
            self._read_pytest_line(block, start, end, number, text)
        if go_test_line and not self._go_tests.header(text):
            self._go_tests.message(number, text, lambda wanted: lines_after(block, end, wanted))
        candidates.sort(key=lambda s: catalog.rank[s.id])
        matched = any(
            self._try_signature(signature, block, start, end, number, timestamp, text)
            for signature in candidates
        )
        if self._ignored_from != _NEVER:
            self._end_ignored_traceback(number, text)
        if not matched and error_words:
            score = ranking.line_score(text)
            if score:
                self._add_candidate(score, number, text)
        if step_end:
            failed = ranking.step_end(text)
            if failed is not None:
                if failed:
                    self._keep_last_words(block, start, number)
                    if self._api_failing is None and self._in_api_step(timestamp):
                        self._api_failing = self._section
                self._end_section(number, SectionEnd(number, failed, clip(text)))

    def _go_header(self, clean: bytes) -> bool:
        return self._go_tests.header_bytes(clean[logs.timestamp_length(clean) :])

    def _read_pytest_line(self, block: bytes, start: int, end: int, number: int, text: str) -> None:
        """A pytest section's header or `E` line: the first of a run of `E` lines is kept with
        the lines around it, for the test's summary line below (pytest_sections.py)."""
        if self._pytest.header(number, text):
            return
        limit = self._pytest.e_line(number, text)
        if limit is not None:
            self._pytest.start_run(
                number,
                clip(text),
                lambda wanted: self._lines_before(block, start, wanted) if wanted else [],
                limit,
                (block, end),
            )

    def _in_api_step(self, timestamp: str | None) -> bool:
        if self._api_step is None or timestamp is None:
            return False
        return self._api_step.holds(logs.parse_timestamp(timestamp))

    def _keep_last_words(self, block: bytes, start: int, number: int) -> None:
        """A failing step's last lines, which hold its error when no word says so
        (`install-jdk.sh: Permission denied`): kept only at the end of a failing step."""
        lines = self._lines_before(block, start, ranking.LAST_WORDS)
        first = number - len(lines)
        output_from = self._step_output_start(block, start, number)
        for offset, text in enumerate(lines):
            line = first + offset
            if line >= output_from and (score := ranking.last_words_score(text)):
                self._add_candidate(score, line, text)

    def _step_output_start(self, block: bytes, start: int, number: int) -> int:
        """The first line a step printed, for a step ending at line `number`: past the
        header GitHub writes under `##[group]Run` (its script, `shell:`, `env:` and each
        variable), which its first `##[endgroup]` closes. Looked for only in a step short
        enough for its header to reach its last words."""
        step_lines = number - self._section_start
        if step_lines > _HEADER_REACH:
            return self._section_start + 1
        lines = self._lines_before(block, start, step_lines)
        first = number - len(lines)
        for offset, text in enumerate(lines):
            if text == _END_GROUP:
                return first + offset + 1
        return self._section_start + 1

    def _add_candidate(self, score: int, number: int, text: str) -> None:
        """A best-guess line. With a passing run, its text is kept whole (as far as a
        comparison reads) until _sift asks the passing run about it."""
        compared = self._passing is not None
        line = FallbackLine(number, text[:MAX_LINE_CHARS] if compared else clip(text), None)
        self._candidates.add(score, line)
        self._log_candidates.add(score, line)

    def _sift(self) -> None:
        """Ask the passing run, once, about every line that may be reported: a match whose
        line it also printed is marked so (ranking demotes it), and the best-guess lines and
        annotations it also printed go (they are not what failed, and would crowd the
        bounded pools). The pools then hold what they would have held had only new lines
        been added to them, as long as the larger pools did not overflow (SIFTED_*)."""
        if self._passing is None:
            return
        pools = {id(pool): pool for pool in self._pools()}
        candidates = {f.line: f.text for pool in pools.values() for _s, f in pool.all()}
        keys = list(self._match_lines)
        texts = [
            *candidates.values(),
            *(f.text for f in self._annotations),
            *(self._match_lines[key] for key in keys),
        ]
        try:
            printed = self._passing.has_many(texts)
        except PassingUnreadable as error:
            self.passing_error = str(error)
            self._passing = None  # no comparison: every line as if there were none
            printed = None
        answers = _answers(printed, len(texts))
        annotations_at = len(candidates)
        matches_at = annotations_at + len(self._annotations)
        new = dict(zip(candidates, answers[:annotations_at], strict=True))
        sifted = {key: self._sifted_pool(pool, new) for key, pool in pools.items()}
        self._log_candidates = sifted[id(self._log_candidates)]
        self._candidates = sifted[id(self._candidates)]
        if self._failing_candidates is not None:
            self._failing_candidates = sifted[id(self._failing_candidates)]
        annotations = zip(self._annotations, answers[annotations_at:matches_at], strict=True)
        self._annotations = [
            FallbackLine(f.line, clip(f.text), is_new)
            for f, is_new in annotations
            if is_new is not False
        ][: ranking.FALLBACK_LINES]
        for key, is_new in zip(keys, answers[matches_at:], strict=True):
            self._matches[key].new = is_new

    def _pools(self) -> list[ranking.Candidates]:
        pools = [self._candidates, self._log_candidates]
        return pools if self._failing_candidates is None else [*pools, self._failing_candidates]

    def _sifted_pool(
        self, pool: ranking.Candidates, new: dict[int, bool | None]
    ) -> ranking.Candidates:
        sifted = ranking.Candidates()
        for score, line in pool.all():
            if new[line.line] is not False:
                sifted.add(score, FallbackLine(line.line, clip(line.text), new[line.line]))
        return sifted

    def _end_action_failure(self) -> None:
        """A GitHub job with no failed step whose steps printed an `##[error]`: the last step
        that did failed there, the way a JavaScript action fails (its message, then the
        post-job clean-up, or the `if: failure()` steps that ran after it). Only when no
        step is known to have failed: a step that printed an annotation and went on is told
        apart only by what failed after it."""
        if self._failing_section is not None or self._last_annotation is None:
            return
        step, line, text = self._last_annotation
        end = SectionEnd(line, True, clip(text))
        if step != self._section:
            if step in self._section_ends:  # ended as passed when the next step started
                self._section_ends[step] = end
                self._failing_section = step
            return
        self._end_section(line, end)
        # What it printed after its message is the post-job clean-up: the next step's.
        for match in self._matches.values():
            if match.section == step and match.line > line:
                match.section = self._section

    def _start_section(self, number: int) -> None:
        """A step starts at line `number` (GitHub's `##[group]Run`, Travis' marker) and the one
        before printed no end: it went on (a failed GitHub step ends with `##[error]`; Travis
        runs its set-up unmarked, and stops the job at a set-up command that fails), so it
        counts as passed."""
        self._end_section(number - 1, SectionEnd(number - 1, False, ""))

    def _end_section(self, number: int, end: SectionEnd) -> None:
        """The current step ended at line `number`; the next line starts another."""
        failing = end.failed and self._api_failing in (None, self._section)
        if len(self._section_ends) < ranking.MAX_SECTIONS:
            self._section_ends[self._section] = end
        elif failing:
            # Past the bound only the failing step's end is kept (the one it replaces goes).
            if self._failing_section is not None and self._failing_section >= self._cap_from:
                del self._section_ends[self._failing_section]
            self._cap_from = min(self._cap_from, self._section)
            self._section_ends[self._section] = end
        if failing:
            self._failing_section = self._section
            self._failing_candidates = self._candidates
        self._section += 1
        self._section_start = number + 1
        self._candidates = self._new_pool()

    def _new_pool(self) -> ranking.Candidates:
        if self._passing is None:
            return ranking.Candidates()
        return ranking.Candidates.sized(SIFTED_HEAD, SIFTED_TAIL)

    def _mark_group(self, number: int, timestamp: str | None, text: str) -> None:
        if len(self._groups) < MAX_GROUP_MARKS:
            self._groups.append(logs.GroupMark(number, timestamp, text[len("##[group]") :]))

    def _track_error(self, number: int, text: str) -> None:
        if ranking.github_step_end(text):
            return
        self._last_annotation = (self._section, number, text)
        if self._passing is None and len(self._annotations) >= ranking.FALLBACK_LINES:
            return
        if self._passing is None:
            self._annotations.append(FallbackLine(number, clip(text), None))
        elif len(self._annotations) < SIFTED_ANNOTATIONS:
            # Sifted once the log is read: one the passing run also printed is no best guess.
            self._annotations.append(FallbackLine(number, text[:MAX_LINE_CHARS], None))

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
        if signature.any_keywords and not any(k in text for k in signature.any_keywords):
            return False
        found = None
        for piece in _regex_pieces(text):
            if signature.id in self._catalog.untrusted:
                found = self._bounded_search(signature, piece, number)
            else:
                found = signature.pattern.search(piece)
            if found is not None:
                break
        if found is None:
            return False
        captures = {k: v for k, v in found.groupdict().items() if v is not None}
        if self._keep_winners:
            self._winners.append((number, signature.id, captures))
        key = group_key(signature, captures)
        known = self._matches.get(key)
        carried = 0
        if known is not None and known.section != self._section and self._passed(known.section):
            # Seen again after the step it was first seen in passed (a `|| true`, a retry
            # in a later step): this occurrence is the one that can have failed the job, so
            # the match starts over here, with its evidence, counting the earlier ones.
            carried = known.count
            self._forget(key, known)
            known = None
        if known is not None:
            known.count += 1
            known.last_line = number
            _add_variants(known, captures)
            self._latest.append(known)
            return True
        if len(self._matches) >= MAX_DISTINCT_MATCHES:
            self._make_room()
        match = Match(
            signature=signature,
            captures=captures,
            line=number,
            text=clip(text),
            timestamp=timestamp,
            before=self._lines_before(block, start, signature.before),
            after=lines_after(block, end, signature.after),
            last_line=number,
            section=self._section,
            level=ranking.low_level(text, found.start()) or self._ignored_level(number, text),
            explanation=self._pytest.window_for(text) or self._go_tests.window_for(text),
        )
        match.count += carried
        _add_variants(match, captures)
        self._matches[key] = match
        self._latest.append(match)
        self._keys_by_signature.setdefault(signature.id, []).append(key)
        if self._passing is not None:
            self._match_lines[key] = text[:MAX_LINE_CHARS]  # `new` is set by _sift
        if len(match.after) < signature.after:
            self._pending_after.append(match)
        return True

    def _passed(self, section: int) -> bool:
        end = self._section_ends.get(section)
        return end is not None and not end.failed

    def _forget(self, key: tuple[str, tuple[str, ...]], match: Match) -> None:
        del self._matches[key]
        self._match_lines.pop(key, None)
        self._keys_by_signature[match.signature.id].remove(key)
        self._pending_after = [pending for pending in self._pending_after if pending is not match]

    def _ignored_level(self, number: int, text: str) -> str | None:
        """IGNORED for a match in the traceback below `Exception ignored in: ...` (not for
        the runner's end of the step, which may follow it)."""
        since = number - self._ignored_from
        if not 0 < since <= ranking.IGNORED_EXCEPTION_LINES:
            return None
        return None if ranking.step_end(text) is not None else ranking.IGNORED

    def _mark_handled(self, number: int) -> None:
        """The exception just above `During handling of the above exception` was caught: its
        match ranks below the one raised while handling it (ranking.HANDLED)."""
        for match in self._latest:
            near = 0 < number - match.last_line <= ranking.HANDLED_EXCEPTION_LINES
            if near and match.level is None:
                match.level = ranking.HANDLED

    def _end_ignored_traceback(self, number: int, text: str) -> None:
        """A traceback ends at its first line back at the margin (the exception itself), past
        the headers a chained one repeats."""
        if number > self._ignored_from and ranking.ends_traceback(text):
            self._ignored_from = _NEVER

    def _make_room(self) -> None:
        """Drop one match: the second oldest of the signature with the most distinct ones
        (its first stays: the first of equals is the likeliest cause)."""
        signature_id, keys = max(self._keys_by_signature.items(), key=lambda item: len(item[1]))
        victim = keys.pop(1 if len(keys) > 1 else 0)
        if not keys:
            del self._keys_by_signature[signature_id]
        dropped = self._matches.pop(victim)
        self._match_lines.pop(victim, None)
        self._pending_after = [match for match in self._pending_after if match is not dropped]

    def _bounded_search(
        self, signature: Signature, text: str, number: int
    ) -> regex.Match[str] | None:
        known = self._timeouts.get(signature.id)
        if known is not None and known.count >= MAX_PATTERN_TIMEOUTS:
            return None  # given up on for the rest of this job
        try:
            return cpu_search(signature.pattern, text, REPO_PATTERN_TIMEOUT_S)
        except TimeoutError:
            if known is None:
                self._timeouts[signature.id] = PatternTimeout(signature, number)
            else:
                known.count += 1
            return None

    def _lines_before(self, block: bytes, start: int, wanted: int) -> list[str]:
        found = lines_ending_at(block, start, wanted)
        if len(found) < wanted:  # the block's start was reached: go on in what came before
            earlier = lines_ending_at(self._recent, len(self._recent), wanted - len(found))
            found = earlier + found
        return found

    def _fill_pending_after(self, block: bytes) -> None:
        still_pending: list[Match] = []
        for match in self._pending_after:
            wanted = match.signature.after - len(match.after)
            match.after.extend(lines_after(block, -1, wanted))
            if len(match.after) < match.signature.after:
                still_pending.append(match)
        self._pending_after = still_pending

    def _fallback(self, root: Match | None) -> list[FallbackLine]:
        """The best-guess error lines: of the failing step (the one a wrapper root cause
        ended, above it), else of the whole log, its last ones first; GitHub's annotations first."""
        annotations = [(3, line) for line in self._annotations]
        failing = self._failing_candidates
        below = root.line if root is not None and root.signature.wraps else None
        if below is not None and root is not None and root.section != self._failing_section:
            failing = self._candidates if root.section == self._section else None
        if failing is None:
            pool = self._log_candidates.all()
            return ranking.pick_fallback([*annotations, *pool], first=False, below=below)
        return ranking.pick_fallback([*annotations, *failing.all()], first=True, below=below)


def _answers(printed: list[bool] | None, count: int) -> list[bool | None]:
    """Whether each asked line is new: None for each when the passing run could not say."""
    if printed is None:
        return [None] * count
    return [not also_passing for also_passing in printed]


# GitHub prints a step's script under `##[group]Run`, each line in bold cyan: its source,
# not its output (the runner's own colour; a tool's output is never coloured so by GitHub).
_SCRIPT_ECHO = b"\x1b[36;1m"


def _needs_fallback(weighed: list[Weighed]) -> bool:
    """No root cause, a catch-all one, a wrapper line with no specific error matched above
    it (one that deferred ranks below that error), or one that ranked first only for want of
    better (a warning, a step that passed): the reader also gets the best-guess lines."""
    if not weighed:
        return True
    root = weighed[0]
    return root.match.signature.generic or root.match.signature.wraps or ranking.demoted(root)


def _regex_pieces(text: str) -> list[str]:
    """The text a pattern searches: the line, or the two ends of a line over MAX_REGEX_CHARS."""
    if len(text) <= MAX_REGEX_CHARS:
        return [text]
    half = MAX_REGEX_CHARS // 2
    return [text[:half], text[-half:]]


def _add_variants(match: Match, captures: dict[str, str]) -> None:
    for name, value in captures.items():
        if name in match.signature.group_by:
            continue
        values = match.variants.setdefault(name, [])
        if value not in values and len(values) < MAX_VARIANTS:
            values.append(value)
