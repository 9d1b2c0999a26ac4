"""One run of GitHub from the command line: `triage RUN_URL [--post]` and `rerun RUN_URL`.

Both post through the queue's own handler (`pipeline.triage_job`) with the database the
settings name, so a comment edited from here takes the same lock as the workers' (never two
comments, never a lost edit), is skipped for a closed pull request or one whose head has moved
on, and the failures are recorded as a webhook's triage records them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from triage_bot.config import Settings
from triage_bot.core import sources
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.report import Report

if TYPE_CHECKING:
    from triage_bot.github_api.github import ClientOptions

# https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N]: github.com or any GitHub Enterprise
# Server host (its API URL comes from GITHUB_API_URL, not from the run's URL).
_RUN_URL = re.compile(
    r"https?://[^/\s]+/(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"/actions/runs/(?P<run>\d+)(?:/attempts/(?P<attempt>\d+))?/?"
)


class GitHubFailed(Exception):
    """GitHub or the database failed; the message is one line for the person at the terminal."""


@dataclass(frozen=True)
class RunUrl:
    repo: str
    run_id: int
    attempt: int | None  # None: the latest attempt


def parse_run_url(text: str) -> RunUrl:
    found = _RUN_URL.fullmatch(text.strip())
    if found is None:
        raise sources.InputError(
            f"{text}: not a run URL (https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N])"
        )
    attempt = found["attempt"]
    return RunUrl(found["repo"], int(found["run"]), int(attempt) if attempt else None)


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def job_payload(run: RunUrl) -> dict[str, Any]:
    """The queue's "triage" job for a run named by its URL: the pull requests are found the
    way a fork's run finds them (by the run's branch and commit)."""
    return {
        "kind": "triage",
        "trigger": "cli",
        "repo": run.repo,
        "installation_id": None,  # the App's installation on the repository is looked up
        "run_id": run.run_id,
        "run_attempt": run.attempt,
        "pull_requests": [],
        "find_pr": True,
    }


def retriage(
    settings: Settings,
    run: RunUrl,
    *,
    on_report: Callable[[Report], None] | None = None,
    options: ClientOptions | None = None,
) -> dict[str, Any]:
    """Triage the run and update its pull requests' comment, as a worker would; the job's
    result (what was posted where). Raises GitHubFailed."""
    from sqlalchemy.exc import SQLAlchemyError

    from triage_bot.github_api.github import GitHubError
    from triage_bot.store.store import LockTimeout, Store
    from triage_bot.triage.pipeline import triage_job

    try:
        store = Store(settings.database_url)
    except SQLAlchemyError as exc:
        raise GitHubFailed(f"database: {exc}".splitlines()[0]) from exc
    try:
        return triage_job(job_payload(run), settings, store, options=options, on_report=on_report)
    except GitHubError as exc:
        raise GitHubFailed(f"GitHub: {exc}") from exc
    except LockTimeout as exc:
        raise GitHubFailed(f"the comment is being edited by a worker: {exc}") from exc
    except SQLAlchemyError as exc:
        raise GitHubFailed(f"database: {exc}".splitlines()[0]) from exc
    finally:
        store.close()


def describe(run: RunUrl, result: dict[str, Any]) -> list[str]:
    """What `retriage` did, one line each."""
    where = f"{run.repo} run {run.run_id} attempt {result['run']['attempt']}"
    if "skipped" in result:
        return [f"{where}: not triaged: {result['skipped']}"]
    jobs = result.get("jobs", [])
    known = sum(1 for job in jobs if job.get("root_cause"))
    lines = [f"{where}: {len(jobs)} failed jobs, {known} with a known cause"]
    if not result["comments"]:
        lines.append(f"{where}: belongs to no open pull request; nothing posted")
    for comment in result["comments"]:
        number, action = comment["pr"], comment["action"]
        if "id" in comment:
            lines.append(f"{run.repo}#{number}: comment {comment['id']} {action}")
        else:
            lines.append(f"{run.repo}#{number}: comment not posted ({action})")
    return lines


def triage_url(
    settings: Settings,
    run: RunUrl,
    catalog: Callable[[], CompiledCatalog],
    show: Callable[[Report], None],
    *,
    post: bool,
    max_bytes: int | None,
) -> None:
    """`triage RUN_URL`: print the triage; with `post`, also update the comment (retriage)."""
    if max_bytes is not None:
        settings = replace(settings, max_log_bytes=max_bytes)
    if post:
        shown: list[Report] = []

        def show_once(report: Report) -> None:
            shown.append(report)
            show(report)

        result = retriage(settings, run, on_report=show_once)
        for line in describe(run, result):
            print(f"triage-bot: {line}", file=sys.stderr)
        if shown:
            return  # else nothing was triaged (every pull request was skipped): print it
    from triage_bot.github_api.github import GitHubError, client_for_repo
    from triage_bot.triage.pipeline import triage_run

    try:
        with client_for_repo(settings, run.repo) as client:
            report, _ = triage_run(
                client,
                run.repo,
                run.run_id,
                run.attempt,
                catalog(),
                max_log_bytes=settings.max_log_bytes,
            )
    except GitHubError as exc:
        raise GitHubFailed(f"GitHub: {exc}") from exc
    show(report)
