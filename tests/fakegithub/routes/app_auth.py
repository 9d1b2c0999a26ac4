"""Authenticating as the App: /app, installation tokens, the repo's installation, rate limits."""

from __future__ import annotations

from ..auth import AppCaller, has_permission
from ..http_types import HttpError, JsonObject, Response, json_response
from ..models import Installation, Repo
from ..payloads.apps import app_payload, installation_payload, rate_limit_payload, token_payload
from ..routing import Route, RouteContext


def _app_caller(ctx: RouteContext) -> AppCaller:
    assert isinstance(ctx.caller, AppCaller)  # guaranteed by the route's auth="jwt"
    return ctx.caller


def get_app(ctx: RouteContext) -> Response:
    app = _app_caller(ctx).app
    with ctx.state.lock:
        count = sum(1 for i in ctx.state.installations.values() if i.app_id == app.id)
        return json_response(200, app_payload(ctx.urls, app, count))


def create_installation_token(ctx: RouteContext) -> Response:
    app = _app_caller(ctx).app
    with ctx.state.lock:
        installation = ctx.state.installations.get(ctx.int_param("installation_id"))
        if installation is None or installation.app_id != app.id:
            raise HttpError(404, "Not Found")
        body = ctx.json_body()
        permissions = _narrowed_permissions(installation, body.get("permissions"))
        repos = _narrowed_repos(ctx, installation, body)
        token = ctx.state.issue_token(
            installation,
            permissions=permissions,
            repo_ids=frozenset(r.id for r in repos) if repos is not None else None,
        )
        return json_response(201, token_payload(ctx.urls, token, repos))


def _narrowed_permissions(installation: Installation, wanted: object) -> dict[str, str]:
    if not isinstance(wanted, dict) or not wanted:
        return dict(installation.permissions)
    for name, level in wanted.items():
        if not has_permission(installation.permissions, ((str(name), str(level)),)):
            raise HttpError(422, "The permissions requested are not granted to this installation.")
    return {str(name): str(level) for name, level in wanted.items()}


def _narrowed_repos(
    ctx: RouteContext, installation: Installation, body: JsonObject
) -> list[Repo] | None:
    names, ids = body.get("repositories"), body.get("repository_ids")
    if not names and not ids:
        return None
    reachable = ctx.state.installation_repos(installation)
    chosen = [r for r in reachable if r.name in (names or ()) or r.id in (ids or ())]
    if len(chosen) != len(set(names or ())) + len(set(ids or ())):
        raise HttpError(
            422,
            "There is at least one repository that does not exist or is not accessible to the "
            "parent installation.",
        )
    return chosen


def get_repo_installation(ctx: RouteContext) -> Response:
    app = _app_caller(ctx).app
    with ctx.state.lock:
        installation = ctx.state.installation_for_repo(app, ctx.repo())
        if installation is None:
            raise HttpError(404, "Not Found")
        return json_response(200, installation_payload(ctx.urls, installation, app))


def get_rate_limit(ctx: RouteContext) -> Response:
    return json_response(200, rate_limit_payload(ctx.quota))


ROUTES = [
    Route("GET", "/app", get_app, auth="jwt"),
    Route(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        create_installation_token,
        auth="jwt",
    ),
    Route("GET", "/repos/{owner}/{repo}/installation", get_repo_installation, auth="jwt"),
    Route("GET", "/rate_limit", get_rate_limit, counted=False),
]
