"""Workflow runs and jobs, as the Actions API returns them."""

from __future__ import annotations

from ..http_types import JsonObject
from ..models import Job, PullRequest, Repo, Step, WorkflowRun
from .core import Urls, iso, iso_required, minimal_repo_payload, node_id, user_payload


def run_html_url(urls: Urls, repo: Repo, run: WorkflowRun) -> str:
    return run.html_url or f"{urls.repo_web(repo)}/actions/runs/{run.id}"


def job_html_url(urls: Urls, repo: Repo, job: Job) -> str:
    """GitHub's job page; the bot appends `#step:S:L` to link to a log line."""
    return job.html_url or f"{urls.repo_web(repo)}/actions/runs/{job.run_id}/job/{job.id}"


def pull_minimal_payload(urls: Urls, pull: PullRequest, repo: Repo, head: Repo) -> JsonObject:
    def side(ref: str, sha: str, where: Repo) -> JsonObject:
        return {
            "ref": ref,
            "sha": sha,
            "repo": {"id": where.id, "url": urls.repo_api(where), "name": where.name},
        }

    return {
        "id": pull.id,
        "number": pull.number,
        "url": f"{urls.repo_api(repo)}/pulls/{pull.number}",
        "head": side(pull.head_ref, pull.head_sha, head),
        "base": side(pull.base_ref, pull.base_sha, repo),
    }


def run_payload(
    urls: Urls,
    run: WorkflowRun,
    repo: Repo,
    head_repo: Repo,
    pulls: list[JsonObject],
) -> JsonObject:
    api = f"{urls.repo_api(repo)}/actions/runs/{run.id}"
    previous = f"{api}/attempts/{run.run_attempt - 1}" if run.run_attempt > 1 else None
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WorkflowRun", run.id),
        "check_suite_id": run.id + 1,
        "check_suite_node_id": node_id("CheckSuite", run.id + 1),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "display_title": run.display_title,
        "run_number": run.run_number,
        "run_attempt": run.run_attempt,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "url": api,
        "html_url": run_html_url(urls, repo, run),
        "pull_requests": pulls,
        "created_at": iso_required(run.created_at),
        "updated_at": iso_required(run.updated_at),
        "run_started_at": iso_required(run.run_started_at),
        "actor": user_payload(urls, run.actor),
        "triggering_actor": user_payload(urls, run.actor),
        "referenced_workflows": [],
        "jobs_url": f"{api}/jobs",
        "logs_url": f"{api}/logs",
        "check_suite_url": f"{urls.repo_api(repo)}/check-suites/{run.id + 1}",
        "artifacts_url": f"{api}/artifacts",
        "cancel_url": f"{api}/cancel",
        "rerun_url": f"{api}/rerun",
        "previous_attempt_url": previous,
        "workflow_url": f"{urls.repo_api(repo)}/actions/workflows/{run.workflow_id}",
        "head_commit": _head_commit(run),
        "repository": minimal_repo_payload(urls, repo),
        "head_repository": minimal_repo_payload(urls, head_repo),
        "head_repository_id": head_repo.id,
    }


def _head_commit(run: WorkflowRun) -> JsonObject:
    person = {"name": run.actor.login, "email": f"{run.actor.id}+{run.actor.login}@example.com"}
    return {
        "id": run.head_sha,
        "tree_id": run.head_sha[::-1],
        "message": run.display_title,
        "timestamp": iso_required(run.created_at),
        "author": person,
        "committer": {"name": "GitHub", "email": "noreply@github.com"},
    }


def _step_payload(step: Step) -> JsonObject:
    return {
        "name": step.name,
        "status": step.status,
        "conclusion": step.conclusion,
        "number": step.number,
        "started_at": iso(step.started_at),
        "completed_at": iso(step.completed_at),
    }


def job_payload(urls: Urls, job: Job, run: WorkflowRun, repo: Repo) -> JsonObject:
    api = urls.repo_api(repo)
    return {
        "id": job.id,
        "run_id": job.run_id,
        "run_url": f"{api}/actions/runs/{job.run_id}",
        "run_attempt": job.run_attempt,
        "node_id": node_id("WorkflowJob", job.id),
        "head_sha": run.head_sha,
        "url": f"{api}/actions/jobs/{job.id}",
        "html_url": job_html_url(urls, repo, job),
        "status": job.status,
        "conclusion": job.conclusion,
        "created_at": iso_required(job.created_at),
        "started_at": iso_required(job.started_at),
        "completed_at": iso(job.completed_at),
        "name": job.name,
        "steps": [_step_payload(step) for step in job.steps],
        "check_run_url": f"{api}/check-runs/{job.id}",
        "labels": list(job.labels),
        "runner_id": 2 if job.runner_name else None,
        "runner_name": job.runner_name,
        "runner_group_id": 2 if job.runner_name else None,
        "runner_group_name": "GitHub Actions" if job.runner_name else None,
        "workflow_name": run.name,
        "head_branch": run.head_branch,
    }
