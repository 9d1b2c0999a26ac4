"""Matches of many jobs -> one report: failures grouped across jobs, and the JSON contract.

A failure is a signature plus its `group_by` captures: the same failure in 20 matrix jobs is
one group naming the 20 jobs. Only root causes are grouped; what else a job showed stays with
the job. Every string that came from a log is redacted here, once, so that no output (the
comment, the terminal view, the JSON) can show a secret.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from triage_bot.core.catalog import Signature, signature_line
from triage_bot.core.classify import MAX_PATTERN_TIMEOUTS, REPO_PATTERN_TIMEOUT_S
from triage_bot.core.classify_results import (
    FallbackLine,
    JobResult,
    Match,
    PatternTimeout,
    Window,
)
from triage_bot.core.redact import redact, redact_capture, redact_lines, redact_window

JSON_VERSION = 1


@dataclass(frozen=True)
class Reference:
    """The passing run of the same job that a failed job's log was compared with."""

    label: str  # "run #812, job test (3.11), passing", or a file name on the command line
    url: str | None = None


@dataclass
class Job:
    """One failed job as shown: its classification plus where it lives, when known."""

    result: JobResult
    url: str | None = None
    # Link to a line: a function of the job's line number (GitHub: #step:S:L), when known.
    line_urls: dict[int, str] = field(default_factory=dict)
    # Why the log could not be read whole (capped, expired, missing), when it could not.
    note: str | None = None
    # The passing log it was compared with (None: no comparison was made).
    reference: Reference | None = None

    @property
    def name(self) -> str:
        return self.result.name


@dataclass(frozen=True)
class BaseRun:
    """The base branch's run that a pull request's failures were compared with."""

    branch: str
    run_url: str
    conclusion: str


@dataclass(frozen=True)
class Occurrence:
    """One job of the recorded history, as a proof links it."""

    url: str | None
    commit_sha: str
    run_id: int
    run_attempt: int
    pr_number: int | None = None


@dataclass(frozen=True)
class FlakyProof:
    """A failure of the same key and the pass of the same job on the same code after it."""

    rule: str  # "re-run" or "elsewhere" (store/flaky.py)
    failed: Occurrence
    passed: Occurrence


@dataclass(frozen=True)
class FlakyVerdict:
    """What the recorded history says of a failure (store/flaky.py `judge`)."""

    likely_flaky: bool
    why: str
    proofs: tuple[FlakyProof, ...] = ()


@dataclass
class Group:
    signature: Signature
    captures: dict[str, str]
    jobs: list[Job]
    # The first job's match: the evidence and the captures the summary and fix use.
    example: Match
    # Set when the same failure is in the base branch's run: likely not the pull request's.
    base: BaseRun | None = None
    # What the recorded history says of it (None: not judged, no store at hand).
    flaky: FlakyVerdict | None = None

    @property
    def likely_flaky(self) -> bool:
        return self.flaky is not None and self.flaky.likely_flaky


@dataclass
class Report:
    jobs: list[Job]
    groups: list[Group]
    title: str = ""
    url: str | None = None
    head_sha: str | None = None
    footer_notes: list[str] = field(default_factory=list)
    # The base branch's run the groups were compared with (None: no comparison was made).
    base: BaseRun | None = None
    # What is wrong with the repository's config or signatures: "file:line: reason" each.
    setup_problems: list[str] = field(default_factory=list)

    @property
    def unmatched(self) -> list[Job]:
        """Jobs with no root cause, only a catch-all one, or only lines the passing run also
        printed: shown with best-guess lines."""
        return [j for j in self.jobs if not explained(j.result.root_cause)]


def explained(root: Match | None) -> bool:
    """Whether a root cause explains its job: not a catch-all, not a line the passing run
    printed too (then every match was, and what failed is among the new lines), and not a
    wrapper (`make: *** Error 1`, `The command '/bin/sh -c ...' returned a non-zero code`):
    a wrapper is the root cause only when no error it could stand for was matched, and it
    says no more than that something failed, so the job's best-guess lines are what the
    comment shows as its failure."""
    return (
        root is not None
        and not root.signature.generic
        and not root.signature.wraps
        and root.new is not False
    )


def build_report(jobs: Sequence[Job | JobResult], **details: Any) -> Report:
    wrapped = [job if isinstance(job, Job) else Job(job) for job in jobs]
    for job in wrapped:
        _redact_result(job.result)
    groups: dict[tuple[str, tuple[str, ...]], Group] = {}
    for job in wrapped:
        root = job.result.root_cause
        if root is None or not explained(root):
            continue
        group = groups.get(root.key)
        if group is None:
            captures = {name: root.captures.get(name, "") for name in root.signature.group_by}
            groups[root.key] = Group(root.signature, captures, [job], root)
        else:
            group.jobs.append(job)
    ordered = sorted(groups.values(), key=lambda g: (-len(g.jobs), -g.signature.priority))
    report = Report(jobs=wrapped, groups=ordered, **details)
    report.setup_problems = [*report.setup_problems, *timeout_problems(wrapped)]
    return report


def timeout_problems(jobs: Sequence[Job]) -> list[str]:
    """One footer line per repository signature whose pattern ran out of time, in any job, and
    one per job whose classification ran out of time."""
    found: dict[str, list[tuple[Job, PatternTimeout]]] = {}
    for job in jobs:
        for timeout in job.result.timeouts:
            found.setdefault(timeout.signature.id, []).append((job, timeout))
    problems = []
    for sid, seen in found.items():
        job, first = seen[0]
        signature = first.signature
        where = f"{signature.path}:{signature_line(signature, ['pattern']) or 1}"
        more = sum(t.count for _, t in seen) - 1
        skipped = any(t.count >= MAX_PATTERN_TIMEOUTS for _, t in seen)
        problems.append(
            f"{where}: the pattern of {sid!r} took over {REPO_PATTERN_TIMEOUT_S} s of CPU time "
            f"on line {first.line} of job {job.name!r}"
            + (f" and {more} more line(s)" if more else "")
            + ", taken as no match there"
            + (" (then skipped for the rest of the job)" if skipped else "")
            + "; avoid nested quantifiers and overlapping alternatives"
        )
    problems += [
        f"job {job.name!r}: classification stopped at line {cut.line} after "
        f"{cut.cpu_s:g} s of CPU time; the rest of its log was not read"
        for job in jobs
        if (cut := job.result.time_cut) is not None
    ]
    return problems


def _redact_result(result: JobResult) -> None:
    """Secrets out of what the report keeps of a log; each evidence window as one run of
    consecutive lines (a private key spans lines), captures against the line they came from."""
    for match in result.matches:
        window, secrets = redact_window([*match.before, match.text, *match.after])
        at = len(match.before)
        match.before, match.text, match.after = window[:at], window[at], window[at + 1 :]
        match.captures = {k: redact_capture(v, secrets) for k, v in match.captures.items()}
        if match.explanation is not None:
            _redact_window(match.explanation)
        # Other occurrences' captures: their lines are not kept, so each value on its own.
        match.variants = {k: [redact(v) for v in vs] for k, vs in match.variants.items()}
    result.fallback_lines = _redacted_fallback(result.fallback_lines)


def _redact_window(window: Window) -> None:
    lines, _secrets = redact_window([*window.before, window.text, *window.after])
    at = len(window.before)
    window.before, window.text, window.after = lines[:at], lines[at], lines[at + 1 :]


def _redacted_fallback(lines: list[FallbackLine]) -> list[FallbackLine]:
    """Best-guess lines, redacted by runs of consecutive line numbers."""
    runs: list[list[FallbackLine]] = []
    for line in lines:
        if runs and runs[-1][-1].line + 1 == line.line:
            runs[-1].append(line)
        else:
            runs.append([line])
    redacted = []
    for run in runs:
        texts = redact_lines([f.text for f in run])
        redacted += [FallbackLine(f.line, text, f.new) for f, text in zip(run, texts, strict=True)]
    return redacted


def match_json(match: Match) -> dict[str, Any]:
    return {
        "signature": match.signature.id,
        "title": match.signature.title,
        "category": match.signature.category,
        "priority": match.signature.priority,
        "captures": match.captures,
        "line": match.line,
        "text": match.text,
        "count": match.count,
        "before": match.before,
        "after": match.after,
        "retry": match.signature.retry,
        # The root cause: why it won; the others: why they rank below it.
        "reason": match.reason,
        # Whether the passing run did not print the line (null: no comparison was made).
        "new": match.new,
        # The lines shown as evidence: the match's own window, or the lines that explain it
        # (a pytest summary line: the `E` lines of its test's section).
        "evidence": window_json(match.evidence),
    }


def window_json(window: Window) -> dict[str, Any]:
    return {
        "line": window.line,
        "before": window.before,
        "text": window.text,
        "after": window.after,
    }


def texts_json(match: Match) -> dict[str, Any]:
    """What the comment says of a failure: the signature's summary and fix rendered with the
    match's captures (markdown, as in the comment), and the distinct values of its other
    captures across its occurrences (the failing tests), by capture name."""
    # Imported here: render (jinja2) imports this module.
    from triage_bot.core.render import signature_text
    from triage_bot.core.report_text import failing_values

    text = signature_text(match.signature, match.captures)
    return {"summary": text.summary, "fix": text.fix, "variants": failing_values(match)}


def root_cause_json(match: Match) -> dict[str, Any]:
    return {**match_json(match), **texts_json(match)}


def report_json(report: Report) -> dict[str, Any]:
    """The documented JSON contract (README, "JSON output"); fields are only ever added."""
    jobs = []
    for job in report.jobs:
        result = job.result
        root = result.root_cause
        jobs.append(
            {
                "name": job.name,
                "root_cause": root_cause_json(root) if root else None,
                "explains": explained(root),
                "also": [match_json(m) for m in result.also],
                "fallback_lines": [
                    {"line": f.line, "text": f.text, "new": f.new} for f in result.fallback_lines
                ],
                "lines": result.lines,
                "bytes": result.bytes_read,
                "truncated": result.truncated,
                "note": job.note,
                "reference": reference_json(job.reference),
            }
        )
    groups = [
        {
            "signature": group.signature.id,
            "title": group.signature.title,
            "captures": group.captures,
            "jobs": [job.name for job in group.jobs],
            "base": base_json(group.base),
            "flaky": flaky_json(group.flaky),
            **texts_json(group.example),
            "reason": group.example.reason,
        }
        for group in report.groups
    ]
    return {
        "version": JSON_VERSION,
        "jobs": jobs,
        "groups": groups,
        "base": base_json(report.base),
    }


def reference_json(reference: Reference | None) -> dict[str, str | None] | None:
    if reference is None:
        return None
    return {"label": reference.label, "url": reference.url}


def base_json(base: BaseRun | None) -> dict[str, str] | None:
    if base is None:
        return None
    return {"branch": base.branch, "run_url": base.run_url, "conclusion": base.conclusion}


def flaky_json(verdict: FlakyVerdict | None) -> dict[str, Any] | None:
    """A group's flaky verdict and the occurrences that prove it (null: not judged)."""
    if verdict is None:
        return None
    return {
        "likely_flaky": verdict.likely_flaky,
        "why": verdict.why,
        "proofs": [
            {
                "rule": p.rule,
                "failed": occurrence_json(p.failed),
                "passed": occurrence_json(p.passed),
            }
            for p in verdict.proofs
        ],
    }


def occurrence_json(occurrence: Occurrence) -> dict[str, Any]:
    return {
        "url": occurrence.url,
        "commit": occurrence.commit_sha,
        "run_id": occurrence.run_id,
        "attempt": occurrence.run_attempt,
        "pr": occurrence.pr_number,
    }
