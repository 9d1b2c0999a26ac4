"""Check runs. Not in the OpenAPI subset: shaped after GitHub's REST docs for check runs."""

from __future__ import annotations

from ..http_types import JsonObject
from ..models import App, CheckRun, Repo
from .apps import app_payload
from .core import Urls, iso, node_id


def check_run_payload(urls: Urls, check: CheckRun, repo: Repo, app: App) -> JsonObject:
    api = f"{urls.repo_api(repo)}/check-runs/{check.id}"
    output = {
        "title": check.output.get("title"),
        "summary": check.output.get("summary"),
        "text": check.output.get("text"),
        "annotations_count": len(check.annotations),
        "annotations_url": f"{api}/annotations",
    }
    return {
        "id": check.id,
        "node_id": node_id("CheckRun", check.id),
        "head_sha": check.head_sha,
        "external_id": check.external_id,
        "url": api,
        "html_url": f"{urls.repo_web(repo)}/runs/{check.id}",
        "details_url": check.details_url,
        "status": check.status,
        "conclusion": check.conclusion,
        "started_at": iso(check.started_at),
        "completed_at": iso(check.completed_at),
        "output": output,
        "name": check.name,
        "check_suite": {"id": check.id + 1},
        "app": app_payload(urls, app, 1),
        "pull_requests": [],
    }
