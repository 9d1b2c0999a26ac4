"""The dashboard's routes, sign-in and access check: no data of a repository without a check.

Served by `triage-bot serve` only when the App's OAuth client is set (GITHUB_CLIENT_ID and
GITHUB_CLIENT_SECRET); otherwise none of these paths exist (404).

  GET /dashboard                  the repositories the signed-in user can read (index)
  GET /dashboard/{owner}/{repo}   one repository's page; 403 unless the user can read it
  GET /dashboard/login            to GitHub's authorize page, with a random `state`
  GET /dashboard/callback         back from GitHub: state checked (400 when forged or missing),
                                  code exchanged, the user's readable repositories listed
  GET|POST /dashboard/logout      the session cookie cleared

The session is a cookie signed with itsdangerous (DASHBOARD_SESSION_KEY, else a key derived
from the client secret; config.Settings.session_key) that holds the user's login, the names of
the repositories they can read and when GitHub said so; never the access token, which
dashboard_github.py drops after use. After ACCESS_TTL the next page sends the user through
GitHub's sign-in again (GitHub returns at once for a user who already authorized the App), so
a repository taken from the user stops showing within ACCESS_TTL. A list too large for a cookie
stays in this process's memory for ACCESS_TTL, keyed by a random reference in the cookie.

Not signed in, a tampered or expired cookie: a redirect to the sign-in. A repository not in the
list, whether or not it exists or has data: the same 403 page, which names nothing of it.
GitHub down during the sign-in: a 503 page. Every answer is `Cache-Control: no-store`.
"""

from __future__ import annotations

import hmac
import html
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import sqlalchemy
from cachetools import TTLCache
from itsdangerous import BadData, URLSafeTimedSerializer
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from triage_bot.config import Settings
from triage_bot.service import dashboard_page
from triage_bot.service.dashboard_github import (
    ClientRefused,
    CodeRefused,
    GitHubUnavailable,
    OAuthClient,
    SignedIn,
)

log = logging.getLogger(__name__)

SESSION_COOKIE = "triage_dashboard"
SIGN_IN_COOKIE = "triage_dashboard_sign_in"
# How long GitHub's word on what a user can read is trusted before it is asked again.
ACCESS_TTL = 600.0
# The cookie's own bound: past it the signature is refused even if the browser kept it.
SESSION_MAX_AGE = 8 * 3600
# Between the redirect to GitHub and the callback.
SIGN_IN_MAX_AGE = 600
# Browsers keep cookies to 4096 bytes with the name and attributes; a longer session spills.
MAX_COOKIE_VALUE = 3800
# Sessions remembered in memory (spilled repository lists, logged-out ids), oldest out first.
MAX_REMEMBERED = 10_000
DEFAULT_DAYS, MAX_DAYS = 30, 365
_SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    # The pages carry no script and no remote asset; their only styles are inline <style>
    # blocks (the page's and pygal's in each SVG). The same policy as the pages' meta tag,
    # sent as a header so that it also covers the message pages.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
}


@dataclass(frozen=True)
class Session:
    login: str
    repos: tuple[str, ...]
    checked: float  # time.time() when GitHub listed `repos`
    sid: str  # random: what logout revokes, so a copy of the cookie ends with it

    def readable(self, owner: str, name: str) -> str | None:
        """The repository as GitHub spells it when the user can read it; GitHub's names are
        case-insensitive, so the URL's case does not matter."""
        wanted = f"{owner}/{name}".lower()
        return next((repo for repo in self.repos if repo.lower() == wanted), None)


class _Cookies:
    """Signed, timestamped cookie values; a sign-in value never passes for a session."""

    def __init__(self, key: bytes, clock: Callable[[], float]) -> None:
        self._session = URLSafeTimedSerializer(key, salt="triage-bot dashboard session")
        self._sign_in = URLSafeTimedSerializer(key, salt="triage-bot dashboard sign-in")
        self._spilled: TTLCache[str, tuple[str, ...]] = TTLCache(
            MAX_REMEMBERED, ACCESS_TTL, timer=clock
        )
        self._revoked: TTLCache[str, bool] = TTLCache(MAX_REMEMBERED, ACCESS_TTL, timer=clock)

    def dump_session(self, session: Session) -> str:
        value = {
            "login": session.login,
            "repos": list(session.repos),
            "checked": session.checked,
            "sid": session.sid,
        }
        text = self._session.dumps(value)
        if len(text) <= MAX_COOKIE_VALUE:
            return text
        reference = secrets.token_urlsafe(24)
        self._spilled[reference] = session.repos
        return self._session.dumps({**value, "repos": None, "spilled": reference})

    def load_session(self, text: str | None) -> Session | None:
        """The session, or None when absent, tampered with, too old or of another kind."""
        value = self._loaded(self._session, text, SESSION_MAX_AGE)
        if value is None:
            return None
        login, repos, checked = value.get("login"), value.get("repos"), value.get("checked")
        sid = value.get("sid")
        if repos is None and isinstance(value.get("spilled"), str):
            repos = self._spilled.get(value["spilled"])
        if not isinstance(login, str) or not isinstance(checked, int | float):
            return None
        if not isinstance(sid, str) or sid in self._revoked:
            return None
        if not isinstance(repos, list | tuple) or not all(isinstance(r, str) for r in repos):
            return None
        return Session(login, tuple(repos), float(checked), sid)

    def revoke(self, session: Session) -> None:
        """Refuse this session from now on, in this process; past ACCESS_TTL it is stale
        anyway, so that is as long as the refusal needs to be remembered."""
        self._revoked[session.sid] = True

    def dump_sign_in(self, state: str, next_path: str) -> str:
        return self._sign_in.dumps({"state": state, "next": next_path})

    def load_sign_in(self, text: str | None) -> dict[str, Any] | None:
        return self._loaded(self._sign_in, text, SIGN_IN_MAX_AGE)

    def _loaded(
        self, serializer: URLSafeTimedSerializer, text: str | None, max_age: int
    ) -> dict[str, Any] | None:
        if not text:
            return None
        try:
            # itsdangerous reads the time through time.time; the clock only shifts TTLs in tests
            value = serializer.loads(text, max_age=max_age)
        except BadData:
            return None
        return value if isinstance(value, dict) else None


class Dashboard:
    """The dashboard's request handlers over one database engine."""

    def __init__(
        self,
        settings: Settings,
        engine: sqlalchemy.Engine,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert settings.github_client_id is not None and settings.github_client_secret is not None
        self.engine, self.clock = engine, clock
        self.oauth = OAuthClient(
            settings.github_client_id,
            settings.github_client_secret,
            settings.github_web_url,
            settings.github_api_url,
        )
        self.cookies = _Cookies(settings.session_key, clock)
        dashboard_page.warm_up()  # the catalog read at start, not at the first page

    def routes(self) -> list[Route]:
        return [
            Route("/dashboard", self.index, methods=["GET"]),
            Route("/dashboard/login", self.login, methods=["GET"]),
            Route("/dashboard/callback", self.callback, methods=["GET"]),
            Route("/dashboard/logout", self.logout, methods=["GET", "POST"]),
            Route("/dashboard/{owner}/{repo}", self.repository, methods=["GET"]),
        ]

    # ---- pages --------------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        session = self._session(request)
        if session is None:
            return self._to_sign_in(request)
        now = datetime.fromtimestamp(self.clock(), UTC)
        page = await run_in_threadpool(dashboard_page.render_index, self.engine, session.repos, now)
        return _html(200, page)

    async def repository(self, request: Request) -> Response:
        session = self._session(request)
        if session is None:
            return self._to_sign_in(request)
        repo = session.readable(request.path_params["owner"], request.path_params["repo"])
        if repo is None:
            # The same page whether the repository exists, has data, or neither.
            return _message(
                403,
                "Not yours to see",
                f"You are signed in as {session.login}, and GitHub does not list this "
                "repository among those you can read through this App's installations.",
                ("/dashboard", "Your repositories"),
            )
        now = datetime.fromtimestamp(self.clock(), UTC)
        days = _days(request.query_params.get("days"))
        page = await run_in_threadpool(self._render, repo, now, days)
        return _html(200, page)

    def _render(self, repo: str, now: datetime, days: int) -> str:
        return dashboard_page.render_dashboard(self.engine, repo, now, days=days)

    # ---- sign-in ------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        state = secrets.token_urlsafe(32)
        next_path = _local_path(request.query_params.get("next"))
        response = RedirectResponse(self.oauth.authorize_url(_callback_url(request), state), 302)
        self._set_cookie(
            request, response, SIGN_IN_COOKIE, self.cookies.dump_sign_in(state, next_path)
        )
        return _secured(response)

    async def callback(self, request: Request) -> Response:
        pending = self.cookies.load_sign_in(request.cookies.get(SIGN_IN_COOKIE))
        state = request.query_params.get("state", "")
        expected = pending.get("state") if pending else None
        if not isinstance(expected, str) or not hmac.compare_digest(
            expected.encode(), state.encode("utf-8", "surrogatepass")
        ):
            return _message(
                400,
                "Sign-in refused",
                "This sign-in did not start here, or took too long (its state does not match).",
                ("/dashboard/login", "Sign in again"),
            )
        assert pending is not None
        response = await self._signed_in(request, str(pending.get("next", "/dashboard")))
        self._delete_cookie(request, response, SIGN_IN_COOKIE)
        return response

    async def _signed_in(self, request: Request, next_path: str) -> Response:
        code = request.query_params.get("code")
        if not code:
            return _message(
                403,
                "Sign-in cancelled",
                "GitHub did not sign you in (the App was not authorized).",
                ("/dashboard/login", "Sign in again"),
            )
        try:
            found: SignedIn = await self.oauth.sign_in(code, _callback_url(request))
        except CodeRefused:
            return _message(
                400,
                "Sign-in refused",
                "GitHub did not accept the sign-in code (expired or already used).",
                ("/dashboard/login", "Sign in again"),
            )
        except ClientRefused as refused:
            log.error("dashboard sign-in: GitHub refused the App's OAuth client: %s", refused)
            return _message(
                500,
                "Sign-in is misconfigured",
                "GitHub refused this server's OAuth client (GITHUB_CLIENT_ID, "
                "GITHUB_CLIENT_SECRET or the App's callback URL). Tell whoever runs it.",
                None,
            )
        except GitHubUnavailable as down:
            log.warning("dashboard sign-in: GitHub unavailable: %s", down)
            return _unavailable(next_path)
        session = Session(found.login, found.repos, self.clock(), secrets.token_urlsafe(16))
        log.info("dashboard: %s signed in, reads %d repositories", found.login, len(found.repos))
        response = RedirectResponse(_local_path(next_path), 303)
        self._set_cookie(request, response, SESSION_COOKIE, self.cookies.dump_session(session))
        return _secured(response)

    async def logout(self, request: Request) -> Response:
        session = self.cookies.load_session(request.cookies.get(SESSION_COOKIE))
        if session is not None:
            self.cookies.revoke(session)
        response = _message(
            200, "Signed out", "You are signed out of the dashboard.", ("/dashboard", "Sign in")
        )
        self._delete_cookie(request, response, SESSION_COOKIE)
        return response

    # ---- the check ----------------------------------------------------------------------------

    def _session(self, request: Request) -> Session | None:
        """The session when it is genuine and GitHub's word on it is fresh; else None."""
        session = self.cookies.load_session(request.cookies.get(SESSION_COOKIE))
        if session is None:
            return None
        age = self.clock() - session.checked
        return session if 0 <= age < ACCESS_TTL else None

    def _to_sign_in(self, request: Request) -> Response:
        target = _return_path(request)
        return _secured(RedirectResponse(f"/dashboard/login?next={target}", 302))

    def _set_cookie(self, request: Request, response: Response, name: str, value: str) -> None:
        max_age = SIGN_IN_MAX_AGE if name == SIGN_IN_COOKIE else SESSION_MAX_AGE
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path="/dashboard",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="lax",
        )

    @staticmethod
    def _delete_cookie(request: Request, response: Response, name: str) -> None:
        secure = request.url.scheme == "https"
        response.delete_cookie(
            name, path="/dashboard", secure=secure, httponly=True, samesite="lax"
        )


def _return_path(request: Request) -> str:
    """The request's path and query, percent-encoded to ride in `next=`."""
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return quote(path, safe="")


def _callback_url(request: Request) -> str:
    # The App's "Callback URL" must be this: https://HOST/dashboard/callback (README).
    return str(request.url_for("callback"))


def _local_path(raw: str | None) -> str:
    """Where to go after sign-in: a path of the dashboard only, never another site."""
    if not raw or not raw.startswith("/dashboard") or "//" in raw or "\\" in raw:
        return "/dashboard"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in raw):
        return "/dashboard"
    return raw


def _days(raw: str | None) -> int:
    if raw is None or not raw.isdigit():
        return DEFAULT_DAYS
    return min(max(int(raw), 1), MAX_DAYS)


def _html(status: int, page: str) -> Response:
    return _secured(HTMLResponse(page, status))


def _secured(response: Response) -> Response:
    for name, value in _SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


def _unavailable(next_path: str) -> Response:
    again = f"/dashboard/login?next={quote(_local_path(next_path), safe='')}"
    return _message(
        503,
        "GitHub is unavailable",
        "GitHub did not answer the sign-in, so this server cannot tell which repositories you "
        "can read, and shows none. Try again in a few minutes.",
        (again, "Try again"),
    )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - triage-bot</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;
color:#1f2328}}h1{{font-size:1.5rem}}a{{color:#0969da}}</style></head>
<body><main><h1>{title}</h1><p>{text}</p>{link}</main></body></html>
"""


def _message(status: int, title: str, text: str, link: tuple[str, str] | None) -> Response:
    anchor = f'<p><a href="{html.escape(link[0])}">{html.escape(link[1])}</a></p>' if link else ""
    page = _PAGE.format(title=html.escape(title), text=html.escape(text), link=anchor)
    return _html(status, page)
