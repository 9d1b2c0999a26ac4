"""What a triage says of a run and its jobs beside their failures: links to the lines in
GitHub's log viewer (`#step:S:L`), why a log could not be read whole, cancelled jobs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from triage_bot.core import logs
from triage_bot.core.classify_results import JobResult
from triage_bot.github_api.github import LogOutcome, WorkflowRun
from triage_bot.github_api.github import WorkflowJob as GitHubJob


def line_urls(job_url: str, result: JobResult, steps: Iterable[Any]) -> dict[int, str]:
    """GitHub's `#step:S:L` link for every line the comment shows."""
    if not job_url:
        return {}
    timed = [logs.Step(s.number, s.started_at, s.completed_at) for s in steps]
    wanted = {m.line for m in result.matches} | {f.line for f in result.fallback_lines}
    urls = {}
    for line in sorted(wanted):
        place = logs.locate_step(line, result.groups, timed)
        if place is not None:
            urls[line] = f"{job_url}#step:{place[0]}:{place[1]}"
    return urls


def log_note(outcome: LogOutcome) -> str | None:
    if outcome.status == "ok":
        if outcome.capped:
            return f"only the first {outcome.bytes_read:,} bytes of the log were read"
        return None
    if outcome.status == "expired":
        return f"the log has expired, nothing could be read ({outcome.reason})"
    if outcome.status == "missing":
        return "GitHub has no log for this job"
    if outcome.partial:
        return f"the log download broke off after {outcome.bytes_read:,} bytes ({outcome.reason})"
    return f"the log could not be downloaded ({outcome.reason})"


def run_notes(run: WorkflowRun, cancelled: Sequence[GitHubJob]) -> list[str]:
    notes = []
    if run.status != "completed":
        notes.append("the run is still going: this comment is updated as more jobs fail")
    if cancelled:
        names = ", ".join(job.name for job in cancelled[:5])
        more = f" and {len(cancelled) - 5} more" if len(cancelled) > 5 else ""
        notes.append(f"{len(cancelled)} cancelled job(s) not triaged: {names}{more}")
    return notes
