"""The base-branch comparison: which failures of a pull request's run also fail on its base.

Every triage records each failed job's root cause and the run itself (`record_triage`). For a
pull request's run, the base branch's latest finished run of the same workflow says what was
failing before this pull request: if it passed, every failure is new; if it failed, its
failures come from that record, and a base run never triaged (or triaged only while it ran) is
triaged now, once, with the same catalog. A failure of the pull request (signature and
`group_by` captures) that is there too is marked with that run, and new failures come first.

Nothing that goes wrong here fails the pull request's triage: its comment then says, in the
footer, that the comparison could not be made.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace

from triage_bot.config import Settings
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.render import render_comment_section
from triage_bot.core.report import BaseRun, Group, Report
from triage_bot.github_api.github import GitHubClient, WorkflowJob, WorkflowRun
from triage_bot.store.failure_records import JobFailure, TriagedRun
from triage_bot.store.store import Store
from triage_bot.triage.outcomes import captures_key, run_outcomes
from triage_bot.triage.run import triage_run
from triage_bot.triage.same_job import base_job_name, base_runs

log = logging.getLogger(__name__)

# The conclusions that say whether the base branch fails; a cancelled or skipped run says
# nothing, so the run before it is looked at instead.
_DECIDING = frozenset({"success", "failure", "timed_out"})
# Two pull requests triaged at once wait for one download of the base run's logs; the lease
# outlasts a triage of many large logs, and a holder that died frees it when it runs out.
BASE_LOCK_WAIT = 120.0
BASE_LOCK_TTL = 600.0


# ---- what a triage leaves behind ------------------------------------------------------------


def record_triage(
    store: Store,
    repo: str,
    run: WorkflowRun,
    attempt: int,
    report: Report,
    jobs: Sequence[WorkflowJob] = (),
    pr_number: int | None = None,
) -> None:
    """Keep the root cause of each failed job of this attempt, and the run as triaged; and
    the outcome of each of `jobs` (the attempt's listing), passing or failing (outcomes.py)."""
    failures = [
        JobFailure(
            repo,
            run.name or None,
            base_job_name(job.name),
            root.signature.id,
            captures_key(root.key[1]),
            run.head_sha,
            run.id,
        )
        for job in report.jobs
        if (root := job.result.root_cause) is not None
    ]
    triaged = TriagedRun(
        repo,
        run.id,
        attempt,
        run.workflow_id,
        run.head_sha,
        # An earlier attempt than the run's latest has finished, whatever the run is doing.
        complete=run.status == "completed" or attempt < run.run_attempt,
        partial_logs=sum(1 for job in report.jobs if job.note),
    )
    store.failures.record(triaged, failures)
    if jobs:
        store.outcomes.record(run_outcomes(run, attempt, jobs, report, pr_number))


# ---- the comparison -------------------------------------------------------------------------


class Compared:
    """A run's report compared with each base branch of its pull requests (usually one)."""

    def __init__(self, report: Report, by_base: dict[str, Report]) -> None:
        self.plain = report
        self.by_base = by_base
        self._bodies: dict[str, str] = {}

    @property
    def report(self) -> Report:
        """The report as compared with the first base (the plain one when there is none)."""
        return next(iter(self.by_base.values()), self.plain)

    def section(self, base_ref: str) -> str:
        """The run's section of the comment of a pull request into `base_ref`."""
        if base_ref not in self._bodies:
            self._bodies[base_ref] = render_comment_section(self.by_base.get(base_ref, self.plain))
        return self._bodies[base_ref]


def compare(
    client: GitHubClient,
    store: Store,
    run: WorkflowRun,
    report: Report,
    base_refs: Iterable[str],
    catalog: CompiledCatalog,
    settings: Settings,
) -> Compared:
    """The report compared with each base branch named; never raises."""
    by_base = {
        ref: compare_with_base(client, store, run, report, ref, catalog, settings.max_log_bytes)
        for ref in dict.fromkeys(base_refs)
        if ref
    }
    return Compared(report, by_base)


def compare_with_base(
    client: GitHubClient,
    store: Store,
    run: WorkflowRun,
    report: Report,
    base_ref: str,
    catalog: CompiledCatalog,
    max_log_bytes: int,
) -> Report:
    """The report with its failures marked against `base_ref`'s latest run; never raises."""
    if not report.groups:
        return report  # nothing to compare: spare GitHub the look-up and the base's logs
    try:
        base = latest_base_run(client, run, base_ref)
        if base is None:
            return report  # a new workflow, or a branch with no runs: nothing to tell
        compared = BaseRun(base_ref, base.html_url, base.conclusion or "")
        if base.conclusion == "success":
            return mark(report, compared, set())
        triaged, failures = base_failures(client, store, base, catalog, max_log_bytes)
        marked = mark(report, compared, {(f.signature, f.captures_key) for f in failures})
        if triaged.partial_logs:
            return _noted(
                marked,
                f"{triaged.partial_logs} failed job log(s) of the run on {base_ref} could not "
                "be read whole: a failure shown as new may be failing there too",
            )
        return marked
    except Exception as error:  # the comparison is extra: the triage stands without it
        repo = run.repository.full_name
        log.warning("%s run %d: no comparison with %s", repo, run.id, base_ref, exc_info=True)
        return _noted(report, f"the comparison with {base_ref} could not be made: {error}")


def latest_base_run(client: GitHubClient, run: WorkflowRun, base_ref: str) -> WorkflowRun | None:
    """The base branch's latest finished run of the run's workflow that passed or failed."""
    return next((r for r in base_runs(client, run, base_ref) if r.conclusion in _DECIDING), None)


def base_failures(
    client: GitHubClient,
    store: Store,
    base: WorkflowRun,
    catalog: CompiledCatalog,
    max_log_bytes: int,
) -> tuple[TriagedRun, list[JobFailure]]:
    """The base run's recorded failures; a run not yet triaged in full is triaged now, once."""
    repo, attempt = base.repository.full_name, base.run_attempt
    triaged = _triaged(store, base)
    if triaged is None:
        with store.lock(f"base:{repo}:{base.id}", wait=BASE_LOCK_WAIT, ttl=BASE_LOCK_TTL):
            triaged = _triaged(store, base)  # another triage may have done it while we waited
            if triaged is None:
                log.info(
                    "%s: triaging run %d of %s for the comparison", repo, base.id, base.head_branch
                )
                listed = client.list_jobs(repo, base.id, attempt)
                report, _ = triage_run(
                    client, repo, base.id, attempt, catalog,
                    max_log_bytes=max_log_bytes, run=base, listed=listed,
                )  # fmt: skip
                record_triage(store, repo, base, attempt, report, listed.jobs)
                triaged = _triaged(store, base)
    if triaged is None:
        raise RuntimeError(f"run {base.id} was triaged but its record is not there")
    return triaged, store.failures.of_run(repo, base.id)


def _triaged(store: Store, base: WorkflowRun) -> TriagedRun | None:
    found = store.failures.run(base.repository.full_name, base.id)
    if found is None or not found.complete or found.run_attempt < base.run_attempt:
        return None
    return found


def mark(report: Report, base: BaseRun, failing: set[tuple[str, str]]) -> Report:
    """A copy of the report whose groups failing on the base are marked, new ones first."""
    groups = [replace(g, base=base if group_key(g) in failing else None) for g in report.groups]
    groups.sort(key=lambda group: group.base is not None)  # stable: each part keeps its order
    return replace(report, groups=groups, base=base)


def group_key(group: Group) -> tuple[str, str]:
    """How a failure is named in the store: its signature and its `group_by` captures."""
    return group.signature.id, captures_key(group.example.key[1])


def _noted(report: Report, note: str) -> Report:
    return replace(report, footer_notes=[*report.footer_notes, note])
