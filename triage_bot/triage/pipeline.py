"""The triage pipeline: a run's failed jobs -> one report -> the sticky comment.

`triage_run` (run.py) is the one pipeline (DESIGN.md: webhook, CLI and `/triage` share it); it
posts nothing. `triage_job` is what the queue's handler (service/handler.py) runs for a
"triage" job: the pipeline, then the run's section in the pull request's one comment
(sticky_comment.py), the check run and the automatic re-run. Every step is idempotent,
which is what lets the queue simply run a job again after a worker died half-way through it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from triage_bot.config import Settings
from triage_bot.core.render import compose_comment
from triage_bot.core.report import Report, report_json
from triage_bot.github_api.github import ClientOptions, GitHubClient, WorkflowRun, client_for_job
from triage_bot.repo.repo_config import RepoConfig, repo_setup, skip_reason
from triage_bot.store.comment_sections import Section
from triage_bot.store.store import Store
from triage_bot.triage import baseline, check_run
from triage_bot.triage.flaky_marks import judge_report
from triage_bot.triage.passing_cache import PassingCache
from triage_bot.triage.reference import CompareWith
from triage_bot.triage.retry import auto_retry
from triage_bot.triage.run import triage_run
from triage_bot.triage.sticky_comment import Target, put_section, target_for

log = logging.getLogger(__name__)


def triage_job(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    options: ClientOptions | None = None,
    on_report: Callable[[Report], None] | None = None,
    config: RepoConfig | None = None,
    lease_lost: threading.Event | None = None,
    retry_logs: bool = False,
) -> dict[str, Any]:
    """A "triage" job: triage the run, post or edit the comment, record the failures, and
    re-run the jobs a re-run cures when the repository's config asks for it.

    `on_report` sees the report before anything is posted (the command line prints it);
    `config`, when given, stands for the repository's `.github/triage-bot.yml`; `lease_lost`
    set means another worker took the job over (this one stalled past its lease): it posts,
    this one does not. `retry_logs`: see outage.check_log (the queue's jobs: True)."""
    repo, run_id, attempt = str(payload["repo"]), int(payload["run_id"]), payload["run_attempt"]
    with client_for_job(settings, payload, options) as client:
        run = client.get_run(repo, run_id)
        attempt = int(run.run_attempt if attempt is None else attempt)  # None: the latest (CLI)
        targets = _targets(client, repo, run, payload)
        summary: dict[str, Any] = {
            "run": {
                "id": run.id,
                "attempt": attempt,
                "workflow": run.name,
                "head_sha": run.head_sha,
                "url": run.html_url,
            },
            "dry_run": dry_run,
        }
        if targets and all(t.skip for t in targets):
            log.info("run %s of %s: not triaged: %s", run_id, repo, _skips(targets))
            return {**summary, "skipped": _skips(targets), "comments": []}
        setup = repo_setup(client, repo)  # .github/triage-bot.yml and the repo's signatures
        config = config or setup.config
        skip = skip_reason(config, run.name, run.path)
        if skip:
            log.info("run %s of %s: not triaged: %s", run_id, repo, skip)
            return {**summary, "skipped": skip, "comments": []}
        listed = client.list_jobs(repo, run_id, attempt)  # all of them: the passing recorded too
        report, _ = triage_run(
            client,
            repo,
            run_id,
            attempt,
            setup.catalog,
            max_log_bytes=settings.max_log_bytes,
            run=run,
            setup_problems=setup.problems,
            retry_logs=retry_logs,
            compare=compare_with(settings, targets),
            listed=listed,
        )
        pr_number = next((t.number for t in targets), None)
        baseline.record_triage(store, repo, run, attempt, report, listed.jobs, pr_number)
        # After the record: a failure judged flaky is judged on its history, this run's too.
        report = judge_report(store, repo, report, pr_number=pr_number)
        bases = (t.base_ref for t in targets if not t.skip)
        compared = baseline.compare(client, store, run, report, bases, setup.catalog, settings)
        if on_report is not None:
            on_report(compared.report)
        if lease_lost is not None and lease_lost.is_set():
            log.warning(
                "run %s of %s: the job was taken over; this worker posts nothing", run_id, repo
            )
            return {**summary, "skipped": "taken over by another worker", "comments": []}
        posts = targets if config.wants_comment else []
        workflow = str(run.workflow_id) if run.workflow_id else f"name:{run.name}"
        # Each pull request's section: this one with its number and its base's comparison.
        section = Section(
            repo, 0, workflow[:255], (run.name or "")[:255], run.id, attempt, run.head_sha,
            body="", problems=tuple(compared.report.setup_problems),
        )  # fmt: skip
        comments = [
            _post(
                client,
                store,
                t,
                replace(section, pr_number=t.number, body=compared.section(t.base_ref)),
                dry_run,
            )
            for t in posts
        ]
        if config.wants_check_run:
            summary["check_run"] = check_run.publish(
                client, store, repo, run, compared.report, dry_run=dry_run
            )
        retried = auto_retry(client, store, repo, run, attempt, report, config, dry_run=dry_run)
    result = {**report_json(compared.report), **summary, "comments": comments}
    return result if retried is None else {**result, "auto_retry": retried}


def compare_with(settings: Settings, targets: Sequence[Target]) -> CompareWith:
    """Each failed job is compared with its passing run on the base branch of the (first)
    pull request, else on earlier commits of its own branch."""
    return compare_with_bases(settings, [t.base_ref for t in targets if not t.skip])


def compare_with_bases(settings: Settings, base_refs: Sequence[str | None]) -> CompareWith:
    """The comparison with the first of `base_refs` (the pull requests' base branches)."""
    return CompareWith(
        base_ref=next((ref for ref in base_refs if ref), None),
        cache=PassingCache(max_bytes=settings.compare_cache_bytes),
        timeout=settings.compare_timeout,
        max_log_bytes=settings.max_log_bytes,
    )


def _targets(
    client: GitHubClient, repo: str, run: WorkflowRun, payload: dict[str, Any]
) -> list[Target]:
    numbers = [n for n in payload.get("pull_requests") or [] if isinstance(n, int)]
    if not numbers and payload.get("find_pr"):
        numbers = [ref.number for ref in client.pulls_for_run(repo, run)]
    return [target_for(client, repo, run.head_sha, number) for number in numbers]


def _skips(targets: Sequence[Target]) -> str:
    return "; ".join(f"#{t.number}: {t.skip}" for t in targets if t.skip)


def _post(
    client: GitHubClient, store: Store, target: Target, section: Section, dry_run: bool
) -> dict[str, Any]:
    """Put the run's `section` in the pull request's comment, beside the sections of the
    head commit's other failing workflows."""
    if target.skip:
        return {"pr": target.number, "action": target.skip}
    if dry_run:
        body = compose_comment([section.body], section.problems)
        log.info("dry run: the comment for %s#%d would be:\n%s", section.repo, target.number, body)
        return {"pr": target.number, "action": "dry_run"}
    return put_section(client, store, section)
