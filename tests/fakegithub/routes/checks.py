"""Reading check runs back: a commit's check runs and a check run's annotations. Not in the
OpenAPI subset: shaped after GitHub's REST docs for check runs (creating and updating them is
in extra.py)."""

from __future__ import annotations

from ..http_types import Response, json_response
from ..pagination import paginate
from ..payloads.checks import check_run_payload
from ..routing import Route, RouteContext
from .extra import check_run_of

_DOCS = "https://docs.github.com/rest/checks/runs"
_READ = (("checks", "read"),)
_ANNOTATION_DEFAULTS = {
    "start_column": None,
    "end_column": None,
    "title": None,
    "raw_details": None,
}


def list_for_ref(ctx: RouteContext) -> Response:
    """`check_name` filters by name; `filter` (latest or all) is accepted: the fake keeps
    one check run per creation and returns all of them, newest first."""
    with ctx.state.lock:
        repo = ctx.repo()
        ref, name = ctx.params["ref"], ctx.request.query("check_name")
        found = [
            check
            for check in ctx.state.check_runs.values()
            if check.repo_id == repo.id
            and check.head_sha == ref
            and (name is None or check.name == name)
        ]
        found.sort(key=lambda check: check.id, reverse=True)
        rest = f"commits/{ref}/check-runs"
        page = paginate(found, ctx.request, ctx.urls.repo_link_base(repo, rest))
        payload = {
            "total_count": len(found),
            "check_runs": [
                check_run_payload(ctx.urls, c, repo, ctx.state.apps[c.app_id]) for c in page.items
            ],
        }
        return json_response(200, payload, page.headers())


def list_annotations(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        check = check_run_of(ctx, repo)
        rest = f"check-runs/{check.id}/annotations"
        page = paginate(check.annotations, ctx.request, ctx.urls.repo_link_base(repo, rest))
        blob = f"{ctx.urls.repo_web(repo)}/blob/{check.head_sha}"
        payload = [
            {**_ANNOTATION_DEFAULTS, **a, "blob_href": f"{blob}/{a['path']}"} for a in page.items
        ]
        return json_response(200, payload, page.headers())


ROUTES = [
    Route(
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        list_for_ref,
        permissions=_READ,
        in_subset=False,
        docs=f"{_DOCS}#list-check-runs-for-a-git-reference",
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations",
        list_annotations,
        permissions=_READ,
        in_subset=False,
        docs=f"{_DOCS}#list-check-run-annotations",
    ),
]
