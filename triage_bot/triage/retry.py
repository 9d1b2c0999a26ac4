"""Re-running only the failed jobs that a re-run cures: those whose root cause is a signature
marked `retry: true` (a runner lost, a registry's hiccup), and, for `/triage retry`, those
whose failure the recorded history calls likely flaky (flaky_marks.py). Any other job is
never re-run.

`plan` says, for each failed job of a triaged run, whether to re-run it or why not; `rerun`
carries a plan out; `auto_retry` is what a triage does when the repository's config asks for
it: at most one automatic re-run per run, claimed in the store before anything is sent, so
neither two workers nor a redelivered webhook can re-run a run twice.

GitHub refuses to re-run a job while its run is running, and re-running one job starts the
run again: when every failed job is to be re-run, one "re-run failed jobs" request does it;
otherwise each job is asked for, and a refusal is reported with the job, not raised.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from triage_bot.core.report import Job, Report
from triage_bot.core.sanitize import escape_text
from triage_bot.github_api.github import (
    GitHubClient,
    GitHubError,
    GitHubStatusError,
    RunJobs,
    WorkflowRun,
)
from triage_bot.github_api.github import WorkflowJob as GitHubJob
from triage_bot.repo.repo_config import RepoConfig
from triage_bot.store.store import Store

log = logging.getLogger(__name__)

STILL_RUNNING = "the run is still in progress"
NO_SIGNATURE = "no signature matched"
# Every match was printed by the passing run too (issue #11): none of them is why it failed.
ONLY_OLD = "what matched, the passing run also printed"
NOT_FOUND = "GitHub no longer lists this job"


@dataclass(frozen=True)
class Verdict:
    """One failed job: re-run (or to be), or why not."""

    job: str  # the job's name
    job_id: int | None
    rerun: bool
    reason: str = ""  # why not: plain words, a signature id in backticks
    signature: str | None = None  # the root cause's id, when a signature matched

    def json(self) -> dict[str, Any]:
        return {"job": self.job, "id": self.job_id, "rerun": self.rerun, "reason": self.reason}


def retryable(job: Job) -> bool:
    root = job.result.root_cause
    return root is not None and root.signature.retry


def plan(report: Report, jobs: RunJobs, *, flaky: bool = False) -> list[Verdict]:
    """For each job of a triaged, completed run: re-run it or not, and why. `flaky`: re-run
    too the jobs of the groups the recorded history calls likely flaky (`/triage retry`)."""
    flaky_jobs = (
        {id(job) for group in report.groups if group.likely_flaky for job in group.jobs}
        if flaky
        else set()
    )
    verdicts = []
    for job in report.jobs:
        root = job.result.root_cause
        found = _github_job(job, jobs.failed)
        job_id = found.id if found else None
        if root is None:
            verdicts.append(Verdict(job.name, job_id, False, NO_SIGNATURE))
        elif root.new is False:
            verdicts.append(Verdict(job.name, job_id, False, ONLY_OLD, root.signature.id))
        elif not root.signature.retry and id(job) not in flaky_jobs:
            reason = f"the root cause `{root.signature.id}` is not one a re-run cures"
            verdicts.append(Verdict(job.name, job_id, False, reason, root.signature.id))
        elif job_id is None:
            verdicts.append(Verdict(job.name, None, False, NOT_FOUND, root.signature.id))
        else:
            verdicts.append(Verdict(job.name, job_id, True, signature=root.signature.id))
    return verdicts


def still_running(jobs: RunJobs) -> list[Verdict]:
    """The failed jobs of a run that has not finished: none can be re-run yet."""
    return [Verdict(job.name, job.id, False, STILL_RUNNING) for job in jobs.failed]


def _github_job(job: Job, failed: Sequence[GitHubJob]) -> GitHubJob | None:
    # The job's page is unique; names are unique in practice but GitHub does not insist.
    if job.url:
        by_url = [j for j in failed if j.html_url == job.url]
        if by_url:
            return by_url[0]
    by_name = [j for j in failed if j.name == job.name]
    return by_name[0] if len(by_name) == 1 else None


def rerun(
    client: GitHubClient, repo: str, run_id: int, verdicts: list[Verdict], jobs: RunJobs
) -> list[Verdict]:
    """Ask GitHub to re-run the jobs the plan chose; the verdicts, with what GitHub refused
    (said, not raised: the other jobs' re-runs stand)."""
    chosen = {v.job_id for v in verdicts if v.rerun}
    if not chosen:
        return verdicts
    if chosen == {job.id for job in jobs.failed} and not jobs.cancelled:
        try:
            client.rerun_failed_jobs(repo, run_id)
        except GitHubError as error:
            return [_refused(v, error) if v.rerun else v for v in verdicts]
        return verdicts
    done = []
    for verdict in verdicts:
        if verdict.rerun and verdict.job_id is not None:
            try:
                client.rerun_job(repo, verdict.job_id)
            except GitHubError as error:
                verdict = _refused(verdict, error)
        done.append(verdict)
    return done


def _refused(verdict: Verdict, error: GitHubError) -> Verdict:
    if isinstance(error, GitHubStatusError):
        said = f"GitHub refused the re-run ({error.status}: {error.message})"
    else:
        said = f"GitHub gave no usable answer to the re-run ({error})"
    log.warning("job %s: %s", verdict.job_id, said)
    return replace(verdict, rerun=False, reason=escape_text(said))


def auto_retry(
    client: GitHubClient,
    store: Store,
    repo: str,
    run: WorkflowRun,
    attempt: int,
    report: Report,
    config: RepoConfig,
    *,
    dry_run: bool = False,
) -> dict[str, Any] | None:
    """After a triage: re-run the run's retry-able jobs, once per run at the most.

    None when the config does not ask for it; otherwise what was done, or why nothing.
    GitHub's refusal of a re-run is in the answer, not raised: the triage has succeeded.
    """
    if not config.auto_retry:
        return None
    if run.status != "completed":
        return _nothing(STILL_RUNNING)  # the run's completion triggers a triage of its own
    if run.run_attempt != attempt:
        return _nothing("a newer attempt of the run exists")
    if not any(retryable(job) for job in report.jobs):
        return _nothing("no failure here is one a re-run cures")
    jobs = client.list_jobs(repo, run.id, attempt)
    verdicts = plan(report, jobs)
    if dry_run:
        return {"action": "dry_run", "jobs": [v.json() for v in verdicts]}
    # Claimed before the request: a crash right after it loses the re-run, never doubles it.
    if not store.claim_once(f"auto-retry:{repo}:{run.id}"):
        return _nothing("the run was already re-run automatically once")
    verdicts = rerun(client, repo, run.id, verdicts, jobs)
    log.info(
        "run %s of %s: re-ran %s automatically",
        run.id,
        repo,
        ", ".join(v.job for v in verdicts if v.rerun) or "nothing",
    )
    return {"action": "rerun", "jobs": [v.json() for v in verdicts]}


def _nothing(reason: str) -> dict[str, Any]:
    return {"action": "none", "reason": reason}
