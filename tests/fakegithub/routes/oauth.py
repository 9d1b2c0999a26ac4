"""The user's side: the OAuth web flow of github.com (authorize, access_token) and what a user
access token reads (/user, /user/installations, an installation's repositories).

The web flow's pages are not in the REST API's OpenAPI description; they follow GitHub's
"Authorizing OAuth apps" / "Generating a user access token for a GitHub App" documentation:
the authorize page redirects to redirect_uri with `code` and the `state` it was given, and
the token exchange answers 200 with an `error` field when it refuses, not an HTTP error.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode

from ..auth import UserCaller
from ..http_types import HttpError, JsonObject, Response, json_response
from ..models import App
from ..pagination import paginate
from ..payloads.users import (
    joined_at,
    private_user_payload,
    user_installations_payload,
    user_repositories_payload,
)
from ..routing import Route, RouteContext
from ..state_oauth import USER_TOKEN_LIFETIME

WEB_DOCS = "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app"
TROUBLESHOOTING = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
_ERRORS = {
    "incorrect_client_credentials": "The client_id and/or client_secret passed are incorrect.",
    "bad_verification_code": "The code passed is incorrect or expired.",
    "redirect_uri_mismatch": "The redirect_uri MUST match the registered callback URL for this "
    "application.",
}
REFRESH_TOKEN_LIFETIME = 15_897_600  # six months, in seconds, as GitHub says


def _app_by_client_id(ctx: RouteContext, client_id: str | None) -> App | None:
    with ctx.state.lock:
        return next((a for a in ctx.state.apps.values() if a.client_id == client_id), None)


def authorize(ctx: RouteContext) -> Response:
    """A signed-in user who authorized the App comes straight back with a code."""
    app = _app_by_client_id(ctx, ctx.request.query("client_id"))
    if app is None:
        return _page(404, "Not Found")
    redirect_uri = ctx.request.query("redirect_uri")
    if not redirect_uri:
        return _page(400, "The redirect_uri is missing (the fake has no registered callback URL)")
    login = ctx.state.signed_in
    if login is None:
        return _page(200, "Sign in to GitHub to continue to the App")
    code = ctx.state.issue_code(app, login, redirect_uri)
    back = {"code": code.value}
    state = ctx.request.query("state")
    if state is not None:
        back["state"] = state
    separator = "&" if "?" in redirect_uri else "?"
    return Response(302, [("Location", f"{redirect_uri}{separator}{urlencode(back)}")])


def access_token(ctx: RouteContext) -> Response:
    form = _form(ctx)
    app = _app_by_client_id(ctx, form.get("client_id"))
    if app is None or form.get("client_secret") != app.client_secret:
        return _token_answer(ctx, _error("incorrect_client_credentials"))
    redeemed = ctx.state.redeem_code(app, form.get("code", ""), form.get("redirect_uri"))
    if isinstance(redeemed, str):
        return _token_answer(ctx, _error(redeemed))
    answer: JsonObject = {
        "access_token": redeemed.value,
        "expires_in": int(USER_TOKEN_LIFETIME.total_seconds()),
        "refresh_token": "ghr_" + redeemed.value.removeprefix("ghu_"),
        "refresh_token_expires_in": REFRESH_TOKEN_LIFETIME,
        "scope": "",
        "token_type": "bearer",
    }
    return _token_answer(ctx, answer)


def _form(ctx: RouteContext) -> dict[str, str]:
    """The exchange's parameters: a form body, a JSON body, or the query string."""
    content_type = (ctx.request.header("Content-Type") or "").split(";")[0].strip().lower()
    if content_type == "application/json":
        return {k: str(v) for k, v in ctx.json_body().items()}
    source = ctx.request.body.decode("utf-8", "replace") or ctx.request.raw_query
    return {k: v[-1] for k, v in parse_qs(source, keep_blank_values=True).items()}


def _error(name: str) -> JsonObject:
    anchor = name.replace("_", "-")
    return {
        "error": name,
        "error_description": _ERRORS[name],
        "error_uri": TROUBLESHOOTING + anchor,
    }


def _token_answer(ctx: RouteContext, answer: JsonObject) -> Response:
    """JSON when asked for (Accept: application/json), else GitHub's form-encoded default."""
    if "application/json" in (ctx.request.header("Accept") or ""):
        return json_response(200, answer)
    body = urlencode({k: str(v) for k, v in answer.items()}).encode()
    return Response(200, [("Content-Type", "application/x-www-form-urlencoded")], body)


def _page(status: int, text: str) -> Response:
    body = f"<!doctype html><title>GitHub</title><p>{text}</p>".encode()
    return Response(status, [("Content-Type", "text/html; charset=utf-8")], body)


def _user_caller(ctx: RouteContext) -> UserCaller:
    assert isinstance(ctx.caller, UserCaller)  # guaranteed by the route's auth="user"
    return ctx.caller


def get_user(ctx: RouteContext) -> Response:
    caller = _user_caller(ctx)
    return json_response(200, private_user_payload(ctx.urls, caller.user, joined_at(caller.app)))


def list_user_installations(ctx: RouteContext) -> Response:
    caller = _user_caller(ctx)
    installations = ctx.state.user_installations(caller.app, caller.user)
    page = paginate(installations, ctx.request, f"{ctx.urls.api}/user/installations")
    payload = user_installations_payload(ctx.urls, page.items, caller.app, len(installations))
    return json_response(200, payload, page.headers())


def list_user_installation_repos(ctx: RouteContext) -> Response:
    caller = _user_caller(ctx)
    installation_id = ctx.int_param("installation_id")
    mine = ctx.state.user_installations(caller.app, caller.user)
    installation = next((i for i in mine if i.id == installation_id), None)
    if installation is None:
        raise HttpError(404, "Not Found")
    listed = ctx.state.readable_in(installation, caller.user)
    base = f"{ctx.urls.api}/user/installations/{installation_id}/repositories"
    page = paginate(listed, ctx.request, base)
    payload = user_repositories_payload(ctx.urls, installation, page.items, len(listed))
    return json_response(200, payload, page.headers())


ROUTES = [
    Route(
        "GET",
        "/login/oauth/authorize",
        authorize,
        auth="none",
        in_subset=False,
        counted=False,
        docs=WEB_DOCS,
    ),
    Route(
        "POST",
        "/login/oauth/access_token",
        access_token,
        auth="none",
        in_subset=False,
        counted=False,
        docs=WEB_DOCS,
    ),
    Route("GET", "/user", get_user, auth="user"),
    Route("GET", "/user/installations", list_user_installations, auth="user"),
    Route(
        "GET",
        "/user/installations/{installation_id}/repositories",
        list_user_installation_repos,
        auth="user",
    ),
]
