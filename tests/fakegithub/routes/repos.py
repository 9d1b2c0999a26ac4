"""Repository look-ups: a pull request, a user's permission, and file contents."""

from __future__ import annotations

from ..http_types import HttpError, Response, json_response
from ..models import PullRequest, Repo
from ..payloads.contents import directory_payload, file_payload
from ..payloads.issues import permission_payload, pull_payload
from ..routing import Route, RouteContext


def pull_json(ctx: RouteContext, pull: PullRequest, repo: Repo) -> dict[str, object]:
    head = ctx.state.repos[pull.head_repo_id]
    association = ctx.association(repo, pull.author)
    return pull_payload(ctx.urls, pull, repo, head, association)


def get_pull(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        pull = ctx.state.pulls.get((repo.id, ctx.int_param("pull_number")))
        if pull is None:
            raise HttpError(404, "Not Found")
        return json_response(200, pull_json(ctx, pull, repo))


def get_permission(ctx: RouteContext) -> Response:
    """A user without a role reads a public repository ("read") and nothing private."""
    with ctx.state.lock:
        repo = ctx.repo()
        user = ctx.state.users.get(ctx.params["username"])
        if user is None:
            raise HttpError(404, "Not Found")
        role = ctx.state.roles.get((repo.id, user.login))
        if user.id == repo.owner.id:
            role = "admin"
        if role is None and not repo.private:
            role = "read"
        return json_response(200, permission_payload(ctx.urls, user, role))


def _normalised_ref(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def get_contents(ctx: RouteContext) -> Response:
    """A file, or a directory's children; `ref` defaults to the default branch."""
    with ctx.state.lock:
        repo = ctx.repo()
        ref = _normalised_ref(ctx.request.query("ref") or repo.default_branch)
        files = ctx.state.files.get((repo.id, ref), {})
        path = ctx.params["path"].strip("/")
        if path in files:
            return json_response(200, file_payload(ctx.urls, repo, ref, path, files[path]))
        listing = directory_payload(ctx.urls, repo, ref, path, files)
        if not listing:
            raise HttpError(404, "Not Found")
        return json_response(200, listing)


ROUTES = [
    Route(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        get_pull,
        permissions=(("pull_requests", "read"),),
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        get_permission,
        permissions=(("metadata", "read"),),
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/contents/{path}",
        get_contents,
        permissions=(("contents", "read"),),
    ),
]
