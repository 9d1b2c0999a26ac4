"""Endpoints NOT in the OpenAPI subset, shaped after GitHub's REST docs; not validated.

GET /repos/{owner}/{repo}/pulls, GET /repos/{owner}/{repo}/actions/runs,
GET /repos/{owner}/{repo}/compare/{basehead} (the merge base only), and
POST/PATCH /repos/{owner}/{repo}/check-runs[/{check_run_id}].
"""

from __future__ import annotations

import datetime as dt

from ..http_types import HttpError, JsonObject, Response, json_response
from ..models import CheckRun, Repo
from ..pagination import paginate
from ..payloads.actions import run_payload
from ..payloads.checks import check_run_payload
from ..routing import Route, RouteContext
from .actions import pulls_of
from .repos import pull_json

MAX_ANNOTATIONS_PER_REQUEST = 50
MAX_OUTPUT_CHARACTERS = 65535
_CHECK_STATUSES = {"queued", "in_progress", "completed", "waiting", "requested", "pending"}
_ANNOTATION_LEVELS = {"notice", "warning", "failure"}
_ANNOTATION_FIELDS = ("path", "start_line", "end_line", "annotation_level", "message")


def list_pulls(ctx: RouteContext) -> Response:
    """`head` filters only in its documented `owner:branch` form; GitHub ignores a bare branch."""
    with ctx.state.lock:
        repo = ctx.repo()
        wanted_state = ctx.request.query("state") or "open"
        head, base = ctx.request.query("head") or "", ctx.request.query("base")
        pulls = []
        for (repo_id, _), pull in ctx.state.pulls.items():
            head_repo = ctx.state.repos[pull.head_repo_id]
            if repo_id != repo.id or wanted_state not in ("all", pull.state):
                continue
            if ":" in head and head.lower() != f"{head_repo.owner.login}:{pull.head_ref}".lower():
                continue
            if base is not None and pull.base_ref != base:
                continue
            pulls.append(pull)
        pulls.sort(key=lambda pull: pull.number, reverse=True)  # newest first, as GitHub sorts
        page = paginate(pulls, ctx.request, ctx.urls.repo_link_base(repo, "pulls"))
        payload = [pull_json(ctx, pull, repo) for pull in page.items]
        return json_response(200, payload, page.headers())


def list_runs(ctx: RouteContext) -> Response:
    """`status` matches a status or a conclusion, as GitHub's does."""
    with ctx.state.lock:
        repo = ctx.repo()
        query = ctx.request.query
        wanted = {
            "head_branch": query("branch"),
            "event": query("event"),
            "head_sha": query("head_sha"),
        }
        status = query("status")
        runs = [
            run
            for run in ctx.state.runs.values()
            if run.repo_id == repo.id
            and all(v is None or getattr(run, k) == v for k, v in wanted.items())
            and (status is None or status in (run.status, run.conclusion))
        ]
        runs.sort(key=lambda run: run.id, reverse=True)
        page = paginate(runs, ctx.request, ctx.urls.repo_link_base(repo, "actions/runs"))
        payload = {
            "total_count": len(runs),
            "workflow_runs": [
                run_payload(
                    ctx.urls, run, repo, ctx.state.repos[run.head_repo_id], pulls_of(ctx, run, repo)
                )
                for run in page.items
            ],
        }
        return json_response(200, payload, page.headers())


def compare_commits(ctx: RouteContext) -> Response:
    """`BASE...HEAD`: the fake keeps no commit graph, so the one merge base it knows is a pull
    request's: `base_sha` of the pull request into BASE whose head commit is HEAD (404 for
    any other pair, as GitHub answers refs it cannot compare). Only the fields the bot reads
    are served: `merge_base_commit.sha` and the status, with empty commit and file lists."""
    with ctx.state.lock:
        repo = ctx.repo()
        base, sep, head = ctx.params["basehead"].partition("...")
        pull = next(
            (
                p
                for (repo_id, _), p in ctx.state.pulls.items()
                if repo_id == repo.id and sep and p.base_ref == base and p.head_sha == head
            ),
            None,
        )
        if pull is None:
            raise HttpError(404, "Not Found")
        commit_url = f"{ctx.urls.repo_api(repo)}/commits/{pull.base_sha}"
        merge_base = {"sha": pull.base_sha, "url": commit_url}
        payload = {
            "status": "ahead",
            "ahead_by": 1,
            "behind_by": 0,
            "total_commits": 1,
            "base_commit": merge_base,
            "merge_base_commit": merge_base,
            "commits": [],
            "files": [],
        }
        return json_response(200, payload)


def _invalid(message: str) -> HttpError:
    return HttpError(422, "Invalid request.\n\n" + message)


def _checked_annotations(output: JsonObject) -> list[JsonObject]:
    annotations = output.get("annotations") or []
    if len(annotations) > MAX_ANNOTATIONS_PER_REQUEST:
        raise _invalid(f"Only {MAX_ANNOTATIONS_PER_REQUEST} annotations are allowed per request.")
    for annotation in annotations:
        missing = [name for name in _ANNOTATION_FIELDS if name not in annotation]
        if missing:
            raise _invalid(f"{missing[0]} wasn't supplied.")
        if annotation["annotation_level"] not in _ANNOTATION_LEVELS:
            raise _invalid(f"{annotation['annotation_level']!r} is not a valid annotation_level.")
    return list(annotations)


def _apply(check: CheckRun, body: JsonObject, now: dt.datetime) -> None:
    if "conclusion" in body and body["conclusion"] is not None:
        check.status, check.conclusion = "completed", str(body["conclusion"])  # implied by GitHub
    elif "status" in body:
        if body["status"] not in _CHECK_STATUSES:
            raise _invalid(f"{body['status']!r} is not a valid status.")
        check.status = str(body["status"])
    if check.status == "completed" and check.conclusion is None:
        raise _invalid("conclusion is required when status is completed.")
    if check.status == "completed" and check.completed_at is None:
        check.completed_at = now
    for name in ("details_url", "external_id", "name"):
        if name in body:
            setattr(check, name, body[name])
    output = body.get("output")
    if isinstance(output, dict):
        if "title" not in output or "summary" not in output:
            raise _invalid("output needs both a title and a summary.")
        if any(len(str(output.get(k) or "")) > MAX_OUTPUT_CHARACTERS for k in ("summary", "text")):
            raise _invalid(
                f"output.summary and output.text are limited to {MAX_OUTPUT_CHARACTERS}."
            )
        check.annotations.extend(_checked_annotations(output))  # GitHub appends on every update
        check.output = {k: output.get(k) for k in ("title", "summary", "text")}


def _check_json(ctx: RouteContext, check: CheckRun, repo: Repo, status: int) -> Response:
    app = ctx.state.apps[check.app_id]
    return json_response(status, check_run_payload(ctx.urls, check, repo, app))


def create_check_run(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        body = ctx.json_body()
        if not body.get("name") or not body.get("head_sha"):
            raise _invalid("name and head_sha are required.")
        now = ctx.state.now()
        check = CheckRun(
            id=ctx.state.next_id("job"),
            repo_id=repo.id,
            app_id=ctx.installation_caller().app.id,
            name=str(body["name"]),
            head_sha=str(body["head_sha"]),
            status="queued",
            conclusion=None,
            started_at=now,
            completed_at=None,
            details_url=None,
            external_id=None,
            output={},
            annotations=[],
        )
        _apply(check, body, now)
        ctx.state.check_runs[check.id] = check
        return _check_json(ctx, check, repo, 201)


def check_run_of(ctx: RouteContext, repo: Repo) -> CheckRun:
    """The path's check run, of this repository (404 otherwise)."""
    check = ctx.state.check_runs.get(ctx.int_param("check_run_id"))
    if check is None or check.repo_id != repo.id:
        raise HttpError(404, "Not Found")
    return check


def update_check_run(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        check = check_run_of(ctx, repo)
        _apply(check, ctx.json_body(), ctx.state.now())
        return _check_json(ctx, check, repo, 200)


_DOCS = "https://docs.github.com/rest"
ROUTES = [
    Route(
        "GET",
        "/repos/{owner}/{repo}/pulls",
        list_pulls,
        permissions=(("pull_requests", "read"),),
        in_subset=False,
        docs=f"{_DOCS}/pulls/pulls#list-pull-requests",
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/actions/runs",
        list_runs,
        permissions=(("actions", "read"),),
        in_subset=False,
        docs=f"{_DOCS}/actions/workflow-runs#list-workflow-runs-for-a-repository",
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/compare/{basehead}",
        compare_commits,
        permissions=(("contents", "read"),),
        in_subset=False,
        docs=f"{_DOCS}/commits/commits#compare-two-commits",
    ),
    Route(
        "POST",
        "/repos/{owner}/{repo}/check-runs",
        create_check_run,
        permissions=(("checks", "write"),),
        in_subset=False,
        docs=f"{_DOCS}/checks/runs#create-a-check-run",
    ),
    Route(
        "PATCH",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        update_check_run,
        permissions=(("checks", "write"),),
        in_subset=False,
        docs=f"{_DOCS}/checks/runs#update-a-check-run",
    ),
]
