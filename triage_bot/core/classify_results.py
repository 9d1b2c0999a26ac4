"""What the classifier finds in one job's log: its matches (the root cause first), its
best-guess error lines, what a repository's signatures ran out of time on, and where the
job's own time ran out."""

from __future__ import annotations

from dataclasses import dataclass, field

from triage_bot.core import logs
from triage_bot.core.catalog import Signature


@dataclass
class Window:
    """Lines of a log shown as evidence: the key line, its number, the lines around it."""

    line: int
    before: list[str]
    text: str
    after: list[str]


@dataclass
class Match:
    signature: Signature
    captures: dict[str, str]
    line: int
    text: str
    timestamp: str | None
    before: list[str]
    after: list[str]
    # How often the same failure (signature and group_by captures) occurs in this job.
    count: int = 1
    # The distinct values of the other captures across those occurrences (e.g. the tests
    # that failed with one error), a few of each.
    variants: dict[str, list[str]] = field(default_factory=dict)
    # The line of the last occurrence, the step (section of the log) of the first, and the
    # level it was printed at when below ERROR (ranking.low_level).
    last_line: int = 0
    section: int = 0
    level: str | None = None
    # Why it ranks where it does (the root cause: why it won); set by ranking.rank.
    reason: str = ""
    # Whether the passing run did not print its line (compare.py); None: no comparison made.
    new: bool | None = None
    # The lines that show the failure when the match's own line only names it: for a pytest
    # summary line (`FAILED tests/x.py::test_y - ...`), the `E` lines of the test's section
    # far above (pytest_sections.py). None: the match's own window shows it.
    explanation: Window | None = None

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return group_key(self.signature, self.captures)

    @property
    def evidence(self) -> Window:
        """The window a reader is shown: the explanation, else the match's own lines."""
        if self.explanation is not None:
            return self.explanation
        return Window(self.line, self.before, self.text, self.after)


@dataclass
class PatternTimeout:
    """A repository signature's pattern that ran out of time in a job."""

    signature: Signature
    line: int  # the first line it timed out on
    count: int = 1  # lines it timed out on


@dataclass(frozen=True)
class TimeCut:
    """Where a job's classification stopped: its CPU budget was spent at this line."""

    line: int
    cpu_s: float


@dataclass(frozen=True)
class FallbackLine:
    line: int
    text: str
    # Whether the passing run did not print it (compare.py); None: no comparison made.
    new: bool | None = None


# Ranking's verdicts (ranking.py makes them; they live here so that it imports this module
# and not the other way round).
@dataclass(frozen=True)
class SectionEnd:
    """How a step ended: its last line, whether it failed, and the line itself."""

    line: int
    failed: bool
    text: str


@dataclass(frozen=True)
class Weighed:
    """One match as ranked: its score (compared as a tuple, higher first) and why."""

    match: Match
    score: tuple[int, ...]
    reason: str


@dataclass(frozen=True)
class Steps:
    """What the classifier learnt of a job's steps: how each ended (those remembered) and
    which one is the failing step (None: the log marks none)."""

    ends: dict[int, SectionEnd]
    failing: int | None

    @property
    def failing_end(self) -> SectionEnd | None:
        return None if self.failing is None else self.ends.get(self.failing)


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
    # The `##[group]` lines, for mapping a line to its step in GitHub's log viewer.
    groups: list[logs.GroupMark] = field(default_factory=list)
    timeouts: list[PatternTimeout] = field(default_factory=list)
    # Set when the job's CPU budget ran out: the lines from there on were not classified.
    time_cut: TimeCut | None = None
    # Every match with its score and reason, best first (`--explain`); the steps seen.
    weighed: list[Weighed] = field(default_factory=list)
    steps: Steps | None = None

    @property
    def root_cause(self) -> Match | None:
        return self.matches[0] if self.matches else None

    @property
    def also(self) -> list[Match]:
        return self.matches[1:]


def group_key(signature: Signature, captures: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    return signature.id, tuple(captures.get(name, "") for name in signature.group_by)
