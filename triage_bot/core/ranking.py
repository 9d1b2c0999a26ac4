"""Which of a job's matches is its root cause, read as a person reads a log; and, where no
signature explains the job, which lines look most like its error.

A person reading a failed job's log goes to the end of the step that failed and reads up:

- a wrapper or summary line (`make: *** [all] Error 2`, `Failed to execute goal`, `✖ 3
  problems`; a signature with `wraps: true`) is not the cause when a specific error was
  printed shortly above it in the same step: it only repeats that the step failed (with
  none above, nor in an earlier failed step, one printed shortly below: a header such as
  ninja's `FAILED: target` comes before its command's output);
- a match inside the failing step beats one from a step that passed (its end said exit 0)
  or from after the failure (clean-up, `after_failure`);
- a line printed at DEBUG/INFO/WARN level (`W: Failed to fetch ...`, `level=warning`) is
  not the failure, unless the signature matched the level word itself (`WARNING: DATA RACE`);
  nor is an error in a traceback Python printed and went on past (`Exception ignored in:`);
- a failure seen again and again in a step that then passed was retried and recovered;
- before all of these, when a passing run of the same job was read (compare.py): a line the
  passing run also printed is not what failed this time, so any new line beats it (it stays
  listed, "also in the passing run"), and a wrapper never defers to such a line;
- then the signature's priority; among equals, the match nearest the failing step's end.

A step's end is `##[error]Process completed with exit code N` (GitHub Actions; from an
action, `##[error]The process '/usr/bin/git' failed with exit code N` or `##[error]Docker run
failed with exit code N`), `The command "..." exited with N.` (Travis CI, N = 0 for a step
that passed; `failed and exited with N during install.` or `failed 3 times.` in its set-up
phases and retries), `ERROR: Job failed` /
`Job succeeded` (GitLab CI) and `Finished: FAILURE` (Jenkins); a GitHub step also starts at
its `##[group]Run ...` line, a Travis one at its `travis_time:start:` marker (what ran before
it without an end line, Travis' own set-up, went on). The failing step is the last one whose
end said it failed; a log with no such end has none, and the step rules are not applied.

Only lines the prefilter found reach this module (matches, markers, and lines holding one
of FALLBACK_LITERALS), so the work per line is a regex search or
two on a few lines.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import regex

from triage_bot.core import surefire_order
from triage_bot.core.classify_results import FallbackLine, Match, Steps, Weighed
from triage_bot.core.logs import is_bookkeeping

# A wrapper defers to a specific error at most this many lines above it, in the same step:
# a compiler's or test runner's report is followed by the build tool's summary within a page.
WRAP_WINDOW = 100
# The best-guess lines shown for a job no signature explains.
FALLBACK_LINES = 8
# Candidate lines kept per step while the log streams: the first few (the first specific
# error is the likeliest cause) and the last ones (what led to the step's end).
HEAD_CANDIDATES = 24
TAIL_CANDIDATES = 40
# The lines before a failing step's end kept as candidates whatever words they hold.
LAST_WORDS = 4
# Steps whose end is remembered (for "in a step that passed"); the rest count as unknown.
MAX_SECTIONS = 5000

# Literals the prefilter scans for on top of the signatures' triggers: a line without any
# of them is never a best-guess line, so the fallback costs nothing on the others.
# Literals, not a regex: every engine scans literals fast (Python's `re` would try a regex
# without a literal prefix at every byte). A word after a space or bracket, or a word with
# its colon (which also finds it at a line's start); line_score then judges the line.
FALLBACK_WORD_LITERALS = (
    *(
        lead + word
        for lead in (" ", "[", "(", "'", '"', "*", "=", "\t")
        for word in ("error", "Error", "ERROR", "fatal", "Fatal", "FATAL", "FAIL", "failed")
    ),
    *(" " + word for word in ("Failed", "failure", "Failure", "panic", "Killed", "Aborted")),
    "FAIL",
)
# The same words as one regex, for an engine that scans a regex at its speed (Hyperscan): a
# word standing alone, as _STRONG and _WEAK take it, so that `errorhandler-utils`,
# `failed_login`, `FAILSAFE` and `errors.py` are not decoded (on a log of such names, 5 lines
# in 6 that held one of the literals). It finds every line the literals find that
# line_score can score; a word split by colour codes is found by the literals' colour parts.
FALLBACK_WORD_REGEX = (
    rb"(?:^|[^\w.\-/\\])(?:error|errors|Error|Errors|ERROR|ERRORS|fatal|Fatal|FATAL|FAIL|FAILED"
    rb"|FAILURE|failed|Failed|failure|Failure|failures|panic|Killed|Aborted)(?:[^\w\-.]|\.\W|\.?$)"
)
# Python's line between an exception that was being handled and the one raised while
# handling it: the first was caught (an `AttributeError` a fallback expected); the one below
# is what propagated.
HANDLING_HEADER = "During handling of the above exception"
FALLBACK_OTHER_LITERALS = (
    *(word + ":" for word in ("error", "Error", "ERROR", "fatal", "Fatal", "FATAL", "panic")),
    # At a line's start, followed by a space: `Failed asserting that ...` (PHPUnit), apt's
    # `Errors were encountered while processing:` (elsewhere the leads above find them).
    *(
        word + " "
        for word in ("Failed", "Failure", "FAILED", "Error", "ERROR", "Fatal", "Errors", "errors")
    ),
    "ERR!",
    "Traceback",
    "Exception",
    "aborted!",
    # A script's own failure line: `❌ Performance Budget Violations:`, `❌ Deploy failed`;
    # and a CLI's (Chromatic's `✖ Missing project token`, listr's failed task, Snyk's
    # `✗ Critical severity vulnerability found in ...`, AVA's and esbuild's `✘`).
    "\u274c",
    "\u2716",
    "\u2717",
    "\u2718",
    # Not an error word: the line that says the exception above it was being handled when
    # another one was raised (classify marks that one HANDLED).
    HANDLING_HEADER,
)
FALLBACK_LITERALS = FALLBACK_WORD_LITERALS + FALLBACK_OTHER_LITERALS
# The literals of the step ends (the `##[error]` and `##[group]` markers are scanned anyway).
STEP_END_LITERALS = (
    "exited with",
    '" failed ',
    "ERROR: Job failed",
    "Job succeeded",
    "Finished: ",
    "Exited with code ",
)

_TRAVIS_END = regex.compile(
    r'^(?:The command ".*)?" (?:(?:failed and )?exited with (?P<code>\d+)(?: during \w*)? ?\.'
    r"|failed (?P<tries>\d+) times\.)$"
)
# The runner ends a failed step with one of three lines: a `run:` script's exit, a JavaScript
# action's tool (@actions/exec: `The process '/usr/bin/git' failed with exit code 128`) and a
# Docker container action's exit.
_GITHUB_END = regex.compile(
    r"^##\[error\](?:Process completed|The process '[^'\n]*' failed|Docker run failed)"
    r" with exit code \d+"
)
_GITLAB_END = regex.compile(r"^(?:ERROR: Job failed\b|Job succeeded$)")
_JENKINS_END = regex.compile(r"^Finished: (?P<result>SUCCESS|FAILURE|UNSTABLE|ABORTED)$")
# CircleCI ends a failed step with `Exited with code exit status 1` (`Exited with code 1`
# before 2019), then `CircleCI received exit code 1`.
_CIRCLECI_END = regex.compile(r"^Exited with code (?:exit status )?(?P<code>\d+)\s*$")
GITHUB_STEP_START = "##[group]Run "
GITHUB_ERROR = "##[error]"
# Travis' marker before each command it runs, glued to the line (logs.normalise drops it).
TRAVIS_STEP_START = "travis_time:start:"

# The level a line was printed at, when it is below ERROR: a prefix (`W: `, `WARNING:`,
# `[WARN]`, `INFO `, `npm WARN`, after an optional timestamp) or logfmt's `level=`.
_LOW_LEVEL = regex.compile(
    r"^\s*(?:\[?[\d:.,T/ -]{8,}Z?\]?\s+)?(?:npm |yarn )?"
    r"(?P<prefix>\[?(?P<word>DEBUG|INFO|WARN|WARNING|TRACE|NOTICE|W)\]?(?::|\s))"
    r"|\blevel=(?P<logfmt>debug|info|warn|warning)\b",
    regex.IGNORECASE,
)
# An error word standing as a word: not part of a name (`Error.swift`, `ErrorHandler`,
# `Text.Pandoc.Error`, `t3020-ls-files-error-unmatch.sh`, `-Werror`, `errors.New`).
_STRONG = regex.compile(
    r"(?<![\w.\-/\\])(?:error|errors|Error|Errors|ERROR|ERRORS|fatal|Fatal|FATAL|FAIL|FAILED"
    r"|FAILURE|panic|Traceback|Killed|Aborted|aborted!)(?![\w\-]|\.\w)"
    r"|ERR!|\u274c|\u2716|\u2717|\u2718"
    r"|\b[A-Z]\w*(?:Error|Exception)(?=: )"
)
_WEAK = regex.compile(r"(?<![\w.\-/\\])(?:failed|Failed|failure|Failure|failures)(?![\w\-]|\.\w)")
# "specific": the error word starts a message (`error: x`, `Error: x`, `FAILED: x`, an
# exception with its message), or sits next to a place (`file.c:12:`).
_SPECIFIC = regex.compile(
    r"(?:error|Error|ERROR|fatal|Fatal|FATAL|FAIL|FAILED|panic|Exception)(?:\[\w+\])?:\s*\S"
    r"|\b[A-Z]\w*(?:Error|Exception): \S"
    r"|[\w./-]+\.\w+:\d+"
    r"|^\s*(?:FAIL|not ok|\d+\) )\s*\S"
)
# Counts of nothing: "0 failures", "0 Error(s)", "Errors: 0", "failed=0".
_ZERO_COUNT = regex.compile(
    r"\b0 (?:\w+ )?(?:errors?|failures?|failed|fatal)(?:\(s\))?"
    r"|(?:errors?|failures?|failed)(?:\(s\))?\s*[:=]\s*0\b",
    regex.IGNORECASE,
)
# Lines that only close a failed step, print help or a licence, or report a pass: they say
# that something failed, or nothing, never what.
_BOILERPLATE = regex.compile(
    r"^\s*-{1,2}[\w-]+(?:[ ,=]|$)"  # a help text's option
    r"|warranty|\blicen[cs]e\b"
    r"|^Done\. Your build exited with"
    r"|^npm ERR! (?:A complete log|This is probably not|Failed at the|Tell the author"
    r"|You can get|Make sure you|\s*$|code E|errno|syscall|path|\S+@\S+ \S+:)"
    r"|\bok\s*$|\bPASS(?:ED)?\b|✓"
    r"|Your build has been stopped|^\[ERROR\] (?:-> \[Help|Re-run Maven|To see the full"
    r"|For more information|\s*$)",
    regex.IGNORECASE,
)
# Lines that end a step without saying why: a person reads past them, up to the error.
_CLOSING = regex.compile(
    r"exited with (?:code |status )?\d+|Process completed with exit code|Error \d+\s*$|BUILD FAIL"
    r"|^Exited with code (?:exit status )?\d+|^CircleCI received exit code \d+"
    r"|Command failed with exit code|ERROR: Job failed|Finished: FAILURE|ELIFECYCLE"
    r"|Test failed\.|tests? failed|FAILED \(|\bfailed with exit|non-zero exit"
    # A shell's trace (`set -x`) of the script's own `exit 1`: the message is above it.
    r"|^\++ exit [1-9]\d{0,2}\s*$"
)


def github_step_end(text: str) -> bool:
    """Whether a normalised line is the runner's own end of a failed GitHub Actions step."""
    return text.startswith(GITHUB_ERROR) and _GITHUB_END.match(text) is not None


def step_end(text: str) -> bool | None:
    """Whether a normalised line ends a step that failed (True) or passed (False); None
    when it ends none."""
    if text.startswith("The command ") or (text.startswith('" ') and text.endswith(".")):
        # A command of several lines ends on a line of its own: `" exited with 1.`.
        found = _TRAVIS_END.match(text)
        if found is None:
            return None
        return found.group("tries") is not None or found.group("code") != "0"
    if text.startswith(GITHUB_ERROR):
        return True if github_step_end(text) else None
    if text.startswith(("ERROR: Job failed", "Job succeeded")):
        return text.startswith("ERROR") if _GITLAB_END.match(text) else None
    if text.startswith("Finished: "):
        found = _JENKINS_END.match(text)
        return None if found is None else found.group("result") != "SUCCESS"
    if text.startswith("Exited with code "):
        found = _CIRCLECI_END.match(text)
        return None if found is None else found.group("code") != "0"
    return None


# Python's report of an exception it could not raise and went on past (a `__del__`, a
# callback at exit: `Exception ignored in: <function _ProactorBasePipeTransport.__del__>`
# over asyncio's `RuntimeError: Event loop is closed`), and pytest's warning that carries one.
# The traceback printed below it is no failure: its matches count as printed below ERROR.
_IGNORED_EXCEPTION = regex.compile(
    r"^Exception ignored (?:in|while)\b|\bPytest(?:Unraisable|UnhandledThread)ExceptionWarning\b"
)
# How far below such a line its traceback may reach (a deep stack and a chained exception).
IGNORED_EXCEPTION_LINES = 40
IGNORED = "IGNORED"
# An exception printed just above HANDLING_HEADER ranks below, like a warning: how far above
# it the exception's line may be (pytest puts a blank line between them).
HANDLED_EXCEPTION_LINES = 3
HANDLED = "HANDLED"


def ignored_exception_header(text: str) -> bool:
    """Whether a normalised line opens a traceback Python printed and went on past."""
    return "xception" in text and _IGNORED_EXCEPTION.search(text) is not None


def ends_traceback(text: str) -> bool:
    """Whether a line below a traceback's header is its exception, back at the margin (not
    `Traceback (most recent call last):` nor the lines that chain another one)."""
    return bool(text) and not text[0].isspace() and not text.startswith(_TRACEBACK_HEADERS)


_TRACEBACK_HEADERS = (
    "Traceback ",
    "During handling of the above exception",
    "The above exception was the direct cause",
    "Exception ignored",
)


def low_level(text: str, match_start: int) -> str | None:
    """The level (`WARN`, `INFO`, ...) a line was printed at when it is below ERROR and the
    signature matched the message after it (not the level word: `WARNING: DATA RACE`)."""
    found = _LOW_LEVEL.search(text)
    if found is None:
        return None
    if found.group("logfmt"):
        return found.group("logfmt").upper()
    if match_start < found.end("prefix"):
        return None
    word = found.group("word").upper()
    return "WARN" if word in ("W", "WARNING") else word


def line_score(text: str) -> int:
    """How much a line no signature matched looks like a failing step's error: 3 a
    specific error, 2 an error word, 1 a closing or warning line, 0 not an error at all
    (bookkeeping, a name holding "error", a zero count, boilerplate)."""
    if not text.strip() or len(text) > 2000 or text.startswith(("travis_", "##[group]")):
        return 0
    if _BOILERPLATE.search(text):
        return 0
    counted = _ZERO_COUNT.sub(" ", text) if "0" in text else text
    strong = _STRONG.search(counted) or _WEAK.search(counted)
    if strong is None:
        return 0
    if _CLOSING.search(counted) or low_level(text, strong.start()):
        return 1
    return 3 if _SPECIFIC.search(counted) else 2


def best_guess_index(texts: Sequence[str]) -> int | None:
    """Which of a job's best-guess lines the comment shows as its failure when nothing
    explains it: the first of the most error-like; or, when none names an error (at most a
    warning or a line that only closes the step), the last that does not only close it: a
    failing step's last words, read up past `step exited with code 1` to the message above.
    None for no lines."""
    if not texts:
        return None
    scores = [line_score(text) for text in texts]
    best = max(scores)
    if best >= 2:
        return scores.index(best)
    talking = [index for index, text in enumerate(texts) if not closing(text)]
    return talking[-1] if talking else len(texts) - 1


def closing(text: str) -> bool:
    """Whether a line only ends a failed step (`exited with 1`, `Process completed with exit
    code 2`, `make: *** [all] Error 2`), saying that something failed but not what."""
    return _CLOSING.search(text) is not None


def last_words_score(text: str) -> int:
    """A failing step's last lines: at least 1 unless blank, bookkeeping or boilerplate."""
    if not text.strip() or is_bookkeeping(text) or _BOILERPLATE.search(text):
        return 0
    if text.startswith("$ ") or step_end(text) is not None:
        return 0  # the command that ran (Travis echoes it), or an end
    return max(1, line_score(text))


@dataclass
class Candidates:
    """The best-guess lines of one step, bounded: its first and its last scored lines."""

    head: list[tuple[int, FallbackLine]] = field(default_factory=list)
    tail: deque[tuple[int, FallbackLine]] = field(
        default_factory=lambda: deque(maxlen=TAIL_CANDIDATES)
    )
    head_max: int = HEAD_CANDIDATES

    @classmethod
    def sized(cls, head: int, tail: int) -> Candidates:
        """Pools larger than a step's, for lines still to be sifted (a comparison's)."""
        return cls(tail=deque(maxlen=tail), head_max=head)

    def add(self, score: int, line: FallbackLine) -> None:
        if len(self.head) < self.head_max:
            self.head.append((score, line))
        else:
            self.tail.append((score, line))

    def all(self) -> list[tuple[int, FallbackLine]]:
        return [*self.head, *self.tail]


def pick_fallback(
    scored: Sequence[tuple[int, FallbackLine]], *, first: bool, below: int | None = None
) -> list[FallbackLine]:
    """At most FALLBACK_LINES of the best-scored lines, in log order: among equals the
    first ones (`first`: the step is known to have failed, and its first error is the
    likeliest cause) or the last ones (a log with no step marked: its tail). `below`: only
    lines above this one (those a wrapper line stands for)."""
    pool = [(s, f) for s, f in scored if s > 0 and (below is None or f.line < below)]
    unique = {f.line: (s, f) for s, f in pool}.values()
    ranked = sorted(unique, key=lambda item: (-item[0], item[1].line if first else -item[1].line))
    return sorted((f for _s, f in ranked[:FALLBACK_LINES]), key=lambda f: f.line)


def demoted(item: Weighed) -> bool:
    """Whether a match ranked low for what it is: also in the passing run, a wrapper that
    deferred, a step that passed, a warning, a retry that recovered."""
    return 0 in item.score[:_DEMOTING_PARTS]


# The categories of error a step can go on from to run its tests (not a crash, a resource or
# a time limit: those can be why a test failed).
_GONE_ON_FROM = frozenset({"build", "config", "dependency", "infra", "lint", "network"})
# A test runner's report of a failed test names the test or its assertion. A test-category
# match that names neither is an error that can be the one above going on: a build script's
# panic after the compiler failed, the harness' AssertionError after a refused connection.
_TEST_REPORT_CAPTURES = frozenset(
    {"test", "testid", "testcase", "example", "scenario", "suite", "assertion"}
)
# The parts of a score, in the order they are compared.
SCORE_PARTS = (
    "new",
    "not_deferred",
    "step",
    "not_low_level",
    "not_recovered",
    "not_gone_on",
    "priority",
    "says_what",
    "nearness",
    "first",
)
# The parts that demote a match when 0 (those before "priority"), and where they sit.
_DEMOTING_PARTS = SCORE_PARTS.index("priority")
_NOT_DEFERRED = SCORE_PARTS.index("not_deferred")
_NEARNESS = SCORE_PARTS.index("nearness")
ALSO_IN_PASSING = "also in the passing run"


def rank(matches: Sequence[Match], steps: Steps, last_line: int) -> list[Weighed]:
    """The matches best first, each with its score and the reason for its place."""
    failing_end = steps.failing_end
    end_line = failing_end.line if failing_end is not None else last_line
    deferred = {
        id(w): _specific_above(w, matches)
        or _earlier_failure(w, matches, steps)
        or _specific_below(w, matches)
        or _anywhere_above_in_step(w, matches)
        for w in matches
        if w.signature.wraps
    }
    heads: list[tuple[Match, tuple[int, ...], str]] = []
    for match in matches:
        above = deferred.get(id(match)) or _child_of(match, matches)
        step, step_reason = _step_rank(match, steps)
        recovered = _recovered(match, steps)
        tests_below = _failing_tests_below(match, matches)
        head: tuple[int, ...] = (
            0 if match.new is False else 1,
            0 if above is not None else 1,
            step,
            0 if match.level else 1,
            0 if recovered else 1,
            0 if tests_below is not None else 1,
            match.signature.priority,
            # At equal priority, a line that says what failed (opam's `The compilation of x
            # failed`) before a wrapper that stands for nothing (Docker's `The command ...
            # returned a non-zero code`), however near the end the wrapper is.
            0 if match.signature.wraps and above is None else 1,
        )
        reasons = []
        if match.new is False:
            reasons.append(ALSO_IN_PASSING)
        if above is not None:
            kind = "a wrapper line" if match.signature.wraps else "a parent"
            reasons.append(
                f"{kind}: defers to `{_short(above.text)}` below it"
                if above.line > match.line
                else f"{kind}: defers to `{_short(above.text)}` above it"
            )
        if match.level == IGNORED:
            reasons.append("in a traceback Python ignored and went on past (`Exception ignored`)")
        elif match.level == HANDLED:
            reasons.append(
                "an exception being handled when another was raised (`During handling of the"
                " above exception`)"
            )
        elif match.level:
            reasons.append(f"printed at {match.level} level")
        if recovered:
            reasons.append("seen again and again in a step that then passed: retried")
        if tests_below is not None:
            reasons.append(
                f"the step went on to run tests, which failed: `{_short(tests_below.text)}`"
            )
        reasons.append(step_reason)
        heads.append((match, head, "; ".join(reasons)))
    # Among equals, the nearest to the failing step's end; but a signature's matches count
    # from its first: of a run of compiler errors the first is the cause, the rest follow.
    # A final report (`final_report: true`) counts from its last, which is the report.
    first_of: dict[tuple[str, tuple[int, ...]], int] = {}
    # Surefire's summary entries count from where their test class first failed.
    failed_at = surefire_order.failure_order(matches)
    for match, head_of, _reason in heads:
        key = (match.signature.id, head_of)
        pick = max if match.signature.final_report else min
        first_of[key] = pick(first_of.get(key, match.line), match.line)
    weighed = [
        Weighed(
            match,
            (
                *head,
                -abs(end_line - first_of[(match.signature.id, head)]),
                match.line
                if match.signature.final_report
                else -failed_at.get(id(match), match.line),
            ),
            reason,
        )
        for match, head, reason in heads
    ]
    weighed.sort(key=lambda w: w.score, reverse=True)
    if weighed:
        weighed[0] = _winner(weighed, deferred, matches, steps)
    return weighed


def _failing_tests_below(match: Match, matches: Sequence[Match]) -> Match | None:
    """A failing test below a build, lint, set-up or network error of the same step: the step
    went on past that error and ran its tests, so what its exit reports is the tests' failure
    (a `tsc` error a script ignores, a `fatal:` from a build helper, a refused connection
    logged while the server starts). Not for a crash, a resource or a time limit, which can
    be why the test failed."""
    if match.signature.category not in _GONE_ON_FROM or match.signature.wraps:
        return None
    for other in matches:
        if other.signature.category != "test" or other.signature.wraps:
            continue
        if _TEST_REPORT_CAPTURES.isdisjoint(other.captures):
            continue
        if other.section == match.section and other.line > match.line and other.new is not False:
            return other
    return None


def _child_of(parent: Match, matches: Sequence[Match]) -> Match | None:
    """A failure nested in this one, of the same signature and step: a captured name `A/B`
    where this one has `A` (Go's subtests, `--- FAIL: TestAlpha/Meetups` in `TestAlpha`)."""
    names = [value + "/" for value in parent.captures.values() if value]
    if not names:
        return None
    for match in matches:
        if match is parent or match.signature.id != parent.signature.id or match.new is False:
            continue
        if match.section != parent.section:
            continue
        if any(v.startswith(name) for v in match.captures.values() for name in names):
            return match
    return None


def _specific_above(wrapper: Match, matches: Sequence[Match]) -> Match | None:
    """The error a wrapper line stands for: the nearest match above it, in the same step and
    within WRAP_WINDOW lines, that is no catch-all nor a warning; a specific error if there
    is one, else an inner wrapper (`make[1]: *** [prove] Error 1` under `make: *** [test]`)."""
    return _nearest_above(wrapper, matches, wrappers=False) or _nearest_above(
        wrapper, matches, wrappers=True
    )


def _specific_below(wrapper: Match, matches: Sequence[Match]) -> Match | None:
    """With nothing to stand for above it nor in an earlier failed step, a wrapper stands for
    the nearest specific error below it in its step, within WRAP_WINDOW lines: a header that
    a tool prints before the output of the command that failed (ninja's `FAILED: target`,
    Bazel's `ERROR: BUILD:12:8: Compiling x.cc failed: (Exit 1)`), whose error may be one only
    a catch-all of lower priority knows (a code generator's Python traceback)."""
    best: Match | None = None
    for match in matches:
        if not _can_stand_for(match, wrapper, wrappers=False) or match.new is False:
            continue
        if match.section != wrapper.section or match.line <= wrapper.line:
            continue
        if match.line - wrapper.line <= WRAP_WINDOW and (best is None or match.line < best.line):
            best = match
    return best


def _anywhere_above_in_step(wrapper: Match, matches: Sequence[Match]) -> Match | None:
    """With nothing nearer, the nearest specific error above a wrapper in its step, however
    far: a step is one command, so an error it printed is what its wrapper ends (pip's failure
    inside a Docker build's RUN, 200 lines of the package's build output above BuildKit's
    summary). Only in a step the log marks: in a log without steps, the window holds."""
    if wrapper.section == 0:
        return None
    return _nearest_above(wrapper, matches, wrappers=False, window=None)


def _earlier_failure(wrapper: Match, matches: Sequence[Match], steps: Steps) -> Match | None:
    """With nothing to stand for in its own step, a wrapper stands for the specific error of
    the nearest earlier step that failed: CI went on past that step (Travis runs every
    `script` command), and its error is the first cause. Without a specific error there, an
    inner wrapper of that step (Maven's `Failed to execute goal ...` under Travis' `The
    command "mvn install" failed 3 times.`), as _specific_above does in the same step."""
    return (
        _earlier_in_failed_step(wrapper, matches, steps, wrappers=False)
        or _earlier_in_failed_step(wrapper, matches, steps, wrappers=True)
        or _earlier_new_error(wrapper, matches)
    )


def _earlier_new_error(wrapper: Match, matches: Sequence[Match]) -> Match | None:
    """With no earlier step that failed on an error, the nearest specific error above that
    the passing run did not print (compare.py), though its step went on: a command whose
    failure the script ignored (`git describe` in `VERSION=$(...)`) leaves a later step
    failing on its consequence, with nothing of its own to show. Only with a comparison:
    without one, every error of a passing step would be a candidate."""
    best: Match | None = None
    for match in matches:
        if match.new is not True or match.section >= wrapper.section:
            continue
        if not _can_stand_for(match, wrapper, wrappers=False):
            continue
        if best is None or match.line > best.line:
            best = match
    return best


def _earlier_in_failed_step(
    wrapper: Match, matches: Sequence[Match], steps: Steps, *, wrappers: bool
) -> Match | None:
    best: Match | None = None
    for match in matches:
        end = steps.ends.get(match.section)
        if end is None or not end.failed or match.section >= wrapper.section:
            continue
        if not _can_stand_for(match, wrapper, wrappers=wrappers) or match.new is False:
            continue
        if best is None or (match.section, -match.line) > (best.section, -best.line):
            best = match
    return best


def _can_stand_for(match: Match, wrapper: Match, *, wrappers: bool) -> bool:
    """Whether a wrapper may stand for `match`: a specific error (or, asked for, an inner
    wrapper that says at least as much: `make[1]: *** [prove]` under `make: *** [test]`, or
    the message a tool gave GitHub as an annotation under the `npm error Lifecycle script`
    that ran it; not Gradle's `FAILURE: Build failed` above its `Execution failed for task`),
    neither a catch-all nor a line printed below ERROR level."""
    if match.signature.wraps != wrappers or match.signature.generic or match.level:
        return False
    if not wrappers or match.signature.priority >= wrapper.signature.priority:
        return True
    return _annotation(match) and not _annotation(wrapper)


def _annotation(match: Match) -> bool:
    """An `##[error]` line: the message a step gave GitHub to show on the run's page (an
    action's, or a tool's `::error::`), which says what failed where a tool runner's wrapper
    says only that its command did."""
    return match.text.startswith(GITHUB_ERROR)


def _nearest_above(
    wrapper: Match, matches: Sequence[Match], *, wrappers: bool, window: int | None = WRAP_WINDOW
) -> Match | None:
    """The nearest match above a wrapper in its step that it may stand for, within `window`
    lines (None: anywhere in the step)."""
    best: Match | None = None
    best_line = 0
    for match in matches:
        if not _can_stand_for(match, wrapper, wrappers=wrappers):
            continue
        if match.new is False:  # the passing run printed it too: not what this wrapper ends
            continue
        if match is wrapper or match.section != wrapper.section or match.line >= wrapper.line:
            continue
        nearest = max(n for n in (match.line, match.last_line) if n <= wrapper.line)
        near = window is None or wrapper.line - nearest <= window
        if near and (best is None or nearest > best_line):
            best, best_line = match, nearest
    return best


def _step_rank(match: Match, steps: Steps) -> tuple[int, str]:
    end = steps.ends.get(match.section)
    if end is not None and not end.failed and match.section != steps.failing:
        # Also when no step is marked failing (a log cut short): this one said it passed.
        return 0, f"in a step that passed (ended at line {end.line})"
    if steps.failing is None:
        return 2, "no failing step is marked in the log"
    if match.section == steps.failing:
        failing = steps.ends[steps.failing]
        return 2, f"in the failing step (ended at line {failing.line}: `{_short(failing.text)}`)"
    if match.section > steps.failing:
        return 1, "after the failing step"
    return 1, "in an earlier step that failed"


def _recovered(match: Match, steps: Steps) -> bool:
    end = steps.ends.get(match.section)
    return match.count > 1 and end is not None and not end.failed


def _winner(
    weighed: list[Weighed],
    deferred: dict[int, Match | None],
    matches: Sequence[Match],
    steps: Steps,
) -> Weighed:
    """The root cause's reason: why it beat the others."""
    top = weighed[0]
    parts = []
    wrapper = next((w for w in matches if deferred.get(id(w)) is top.match), None)
    if wrapper is not None:
        parts.append(f"specific error above the wrapper `{_short(wrapper.text)}`")
    if top.match.signature.wraps and top.score[_NOT_DEFERRED] == 1:
        parts.append("a wrapper line with no error matched above it (see the best-guess lines)")
    elif demoted(top):
        parts.append(f"first only for want of better: {top.reason}")
    parts.append(top.reason.split("; ")[-1])
    rivals = [w for w in weighed[1:] if w.score[:_NEARNESS] == top.score[:_NEARNESS]]
    same = [w for w in rivals if w.score[_NEARNESS] == top.score[_NEARNESS]]
    if same:
        which = "last" if top.match.signature.final_report else "first"
        parts.append(f"the {which} of {len(same) + 1} `{top.match.signature.id}` matches")
    elif rivals:
        end = "the failing step's end" if steps.failing is not None else "the end of the log"
        parts.append(
            f"nearest {end} of {len(rivals) + 1} of priority {top.match.signature.priority}"
        )
    else:
        parts.append(f"priority {top.match.signature.priority}")
    return Weighed(top.match, top.score, ", ".join(parts))


def _short(text: str, limit: int = 80) -> str:
    text = text.strip().replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"
