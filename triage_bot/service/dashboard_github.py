"""The dashboard's sign-in on GitHub's side: the App's OAuth web flow and what the user may read.

Plain httpx rather than an OAuth library: the flow is one redirect (built in dashboard_auth.py)
and one POST here, GitHub answers a refused code with 200 and an `error` field that a generic
client does not map, and the three REST calls after it (the user, their installations of this
App, each installation's repositories, paginated) are ours to write either way.

The user access token lives only inside `readable_repositories`: it is used for those calls
and dropped; the session keeps the login and the repository names (dashboard_auth.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

# GitHub's sign-in answers within seconds; a page that waits longer says "GitHub is down".
TIMEOUT = httpx.Timeout(10.0)
PER_PAGE = 100
# Bounds the work of one sign-in: 100 pages of 100 is 10,000 installations or repositories.
MAX_PAGES = 100
API_HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "triage-bot-dashboard",
}


class GitHubUnavailable(Exception):
    """GitHub could not be reached, timed out, or answered with a server error: a 503 page."""


class CodeRefused(Exception):
    """GitHub refused the sign-in code (expired, used, forged): the user signs in again."""


class ClientRefused(Exception):
    """GitHub refused the App's own OAuth client (id, secret or callback URL): the operator's
    setting is wrong, not the user's doing."""


@dataclass(frozen=True)
class SignedIn:
    login: str
    repos: tuple[str, ...]  # owner/name of each repository the user can read, as GitHub spells it


@dataclass(frozen=True)
class OAuthClient:
    client_id: str
    client_secret: str
    web_url: str  # https://github.com: authorize and access_token
    api_url: str  # https://api.github.com: /user and /user/installations

    def authorize_url(self, redirect_uri: str, state: str) -> str:
        query = httpx.QueryParams(
            {"client_id": self.client_id, "redirect_uri": redirect_uri, "state": state}
        )
        return f"{self.web_url}/login/oauth/authorize?{query}"

    async def sign_in(self, code: str, redirect_uri: str) -> SignedIn:
        """Exchange the code for a user access token, then learn who it is and what it reads."""
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=API_HEADERS) as client:
            try:
                token = await self._exchange(client, code, redirect_uri)
                return await _readable(client, self.api_url, token)
            except httpx.HTTPError as error:
                raise GitHubUnavailable(_describe(error)) from None

    async def _exchange(self, client: httpx.AsyncClient, code: str, redirect_uri: str) -> str:
        response = await client.post(
            f"{self.web_url}/login/oauth/access_token",
            data={
                "client_id": self.client_id,
                "client_secret": self.client_secret,
                "code": code,
                "redirect_uri": redirect_uri,
            },
            headers={"Accept": "application/json"},
        )
        answer = _json_object(response, "the access token exchange")
        token = answer.get("access_token")
        if isinstance(token, str) and token:
            return token
        error = str(answer.get("error", "no access_token"))
        if error in ("bad_verification_code", "access_denied"):
            raise CodeRefused(error)
        raise ClientRefused(f"{error}: {answer.get('error_description', '')}"[:300])


async def _readable(client: httpx.AsyncClient, api_url: str, token: str) -> SignedIn:
    auth = {"Authorization": f"Bearer {token}"}
    user = _json_object(await client.get(f"{api_url}/user", headers=auth), "GET /user")
    login = user.get("login")
    if not isinstance(login, str) or not login:
        raise GitHubUnavailable("GET /user answered without a login")
    repos: dict[str, str] = {}  # lowercased -> as GitHub spells it: an installation may repeat
    async for installation in _pages(client, api_url, "/user/installations", auth):
        installation_id = installation.get("id") if isinstance(installation, dict) else None
        if not isinstance(installation_id, int):
            raise GitHubUnavailable("GET /user/installations listed one without an id")
        path = f"/user/installations/{installation_id}/repositories"
        async for repo in _pages(client, api_url, path, auth):
            if _can_read(repo):
                repos.setdefault(str(repo["full_name"]).lower(), str(repo["full_name"]))
    return SignedIn(login, tuple(sorted(repos.values(), key=str.lower)))


def _can_read(repo: Any) -> bool:
    """A listed repository the user can pull; GitHub's `permissions` says so where present."""
    if not isinstance(repo, dict) or not isinstance(repo.get("full_name"), str):
        return False
    permissions = repo.get("permissions")
    return not isinstance(permissions, dict) or bool(permissions.get("pull", True))


async def _pages(
    client: httpx.AsyncClient, api_url: str, path: str, auth: dict[str, str]
) -> AsyncIterator[Any]:
    """The items of a paginated listing, following Link rel="next" on the API's own origin
    only (the token goes nowhere else)."""
    key = "installations" if path.endswith("/installations") else "repositories"
    url: str | None = f"{api_url}{path}?per_page={PER_PAGE}"
    for _ in range(MAX_PAGES):
        if url is None:
            return
        response = await client.get(url, headers=auth)
        items = _json_object(response, f"GET {path}").get(key)
        if not isinstance(items, list):
            raise GitHubUnavailable(f"GET {path} answered without {key}")
        for item in items:
            yield item
        url = next_page_url(response, api_url)


def next_page_url(response: httpx.Response, api_url: str) -> str | None:
    following = response.links.get("next", {}).get("url")
    if not following:
        return None
    same_origin = urlsplit(following)[:2] == urlsplit(api_url)[:2]
    return following if same_origin else None


def _json_object(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code >= 500 or response.status_code in (401, 403, 429):
        # 401/403 on a token GitHub just issued, or a rate limit: nothing the user can fix.
        raise GitHubUnavailable(f"{what} answered {response.status_code}")
    try:
        answer = response.json()
    except ValueError:
        raise GitHubUnavailable(f"{what} answered {response.status_code}, not JSON") from None
    if not isinstance(answer, dict) or response.status_code >= 400:
        raise GitHubUnavailable(f"{what} answered {response.status_code}")
    return answer


def _describe(error: httpx.HTTPError) -> str:
    """One line without the URL's query (the code) and without the token."""
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]
