"""The transport: requests to GitHub's API host under the retry policy (github_retry.py).

Credentials are asked for an Authorization value on every attempt, so a renewed installation
token is picked up mid-retry; a 401 makes them drop a cached token once. The token never
travels to another host: see the redirect note in Transport.
"""

from __future__ import annotations

import logging
import re
import ssl
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

import httpx

from triage_bot.config import Settings
from triage_bot.github_api.github_retry import (
    GitHubError,
    GitHubStatusError,
    GitHubUnavailable,
    RateLimited,
    Retry,
    RetryPolicy,
    count_call,
    count_retry,
    describe,
    pause,
    request_unsent,
)

JsonObject = dict[str, Any]
# Methods that do the same thing however often they are sent (RFC 9110), so safe to resend
# after an ambiguous failure. PATCH is not in general (check-run annotations append).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
USER_AGENT = "triage-bot"
API_VERSION = "2022-11-28"


class _UrlsWithoutQuery(logging.Filter):
    """httpx logs every request's URL at INFO. A log download's URL is signed in its query
    string (whoever holds it can read the log for a minute), so URLs are logged as scheme,
    host and path only: for every URL, not just the blob host's, so none can slip by."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(without_query(arg) for arg in record.args)
        return True


_QUERY_IN_TEXT = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s?#\"'<>]+)[?#][^\s\"'<>]*")


def without_query(value: object) -> object:
    """A URL (httpx.URL or text holding URLs) without query strings and fragments."""
    if isinstance(value, httpx.URL):
        return value.copy_with(query=None, fragment=None) if value.query else value
    if isinstance(value, str) and "://" in value:
        return _QUERY_IN_TEXT.sub(r"\1", value)
    return value


logging.getLogger("httpx").addFilter(_UrlsWithoutQuery())


@cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client of the process: loading the CA bundle costs tens of
    milliseconds of CPU, which each new httpx client would otherwise pay (two per triage)."""
    return httpx.create_ssl_context()


class Credentials(Protocol):
    def authorization(self) -> str:
        """The Authorization header value, asked for on every attempt (tokens get renewed)."""
        ...

    def invalidate(self) -> bool:
        """Forget a cached secret GitHub refused (401); True if a new one can be had."""
        ...


@dataclass(frozen=True)
class ClientOptions:
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 30.0  # seconds per connect, read or write (a log body may take longer)
    per_page: int = 100  # GitHub's maximum: fewest requests per listing
    # GitHub asks for serial requests and at least 1 s between writes ("best practices for
    # using the REST API"); reads need no spacing. Tests set both to 0.
    seconds_between_requests: float = 0.0
    seconds_between_writes: float = 1.0
    user_agent: str = USER_AGENT

    @classmethod
    def from_settings(cls, settings: Settings) -> ClientOptions:
        """The defaults, with the retry policy's pauses from the settings (TRIAGE_GITHUB_*)."""
        return cls(retry=RetryPolicy.from_settings(settings))


class _Throttle:
    def __init__(self, between_requests: float, between_writes: float) -> None:
        self._between_requests, self._between_writes = between_requests, between_writes
        self._lock = threading.Lock()
        self._last_request = self._last_write = float("-inf")

    def wait(self, method: str) -> None:
        if not self._between_requests and not self._between_writes:
            return
        write = method not in ("GET", "HEAD", "OPTIONS")
        with self._lock:  # held while sleeping: concurrent callers queue up, as GitHub asks
            due = self._last_request + self._between_requests
            if write:
                due = max(due, self._last_write + self._between_writes)
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
                now = due
            self._last_request = now
            if write:
                self._last_write = now


class Transport:
    """Requests to one GitHub API host with one set of credentials, under the retry policy."""

    def __init__(
        self, api_url: str, credentials: Credentials | None, options: ClientOptions
    ) -> None:
        self.options = options
        self._credentials = credentials
        self._throttle = _Throttle(options.seconds_between_requests, options.seconds_between_writes)
        # Redirects are followed per request: GitHub answers 301/307 for a renamed
        # repository, on its own host; httpx drops Authorization on any hop to another origin.
        # The log download asks for its 302 unfollowed and fetches the blob without a token.
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"),
            verify=tls_context(),
            timeout=httpx.Timeout(options.timeout),
            headers={
                "Accept": "application/vnd.github+json",
                "User-Agent": options.user_agent,
                "X-GitHub-Api-Version": API_VERSION,
            },
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        url: str,
        *,
        endpoint: str,
        params: Mapping[str, str | int] | None = None,
        json: JsonObject | None = None,
        idempotent: bool | None = None,
        allow: Collection[int] = (),
        follow_redirects: bool = True,
    ) -> httpx.Response:
        """Send with retries; return a response below 400 or with a status in `allow`.

        `endpoint` is the path template (for metrics and errors), `url` a path or a full URL
        (pagination Link URLs are followed verbatim). Raises GitHubStatusError,
        GitHubUnavailable or RateLimited.
        """
        label = f"{method} {endpoint}"
        safe = method in IDEMPOTENT_METHODS if idempotent is None else idempotent
        policy = self.options.retry
        renewed = False
        attempt = 0
        while True:
            attempt += 1
            self._throttle.wait(method)
            headers = {}
            if self._credentials is not None:
                headers["Authorization"] = self._credentials.authorization()
            try:
                response = self._http.request(
                    method,
                    url,
                    params=params,
                    json=json,
                    headers=headers,
                    follow_redirects=follow_redirects,
                )
            except httpx.TransportError as error:
                count_call(label, None)
                retry = policy.after_error(error, attempt, idempotent=safe)
                if retry is None or attempt >= policy.attempts:
                    ambiguous = not safe and not request_unsent(error)
                    raise GitHubUnavailable(label, describe(error), ambiguous=ambiguous) from error
                pause(retry)
                continue
            count_call(label, response.status_code)
            status = response.status_code
            if status < 400 or status in allow:
                return response
            if status == 401 and not renewed and self._credentials is not None:
                # A cached token GitHub no longer takes (revoked, or clocks apart): once.
                renewed = True
                if self._credentials.invalidate():
                    count_retry(Retry(0.0, "auth"))
                    continue
            message = error_message(response)
            retry = policy.after_response(
                status,
                response.headers,
                message,
                attempt,
                idempotent=safe,
                now=time.time(),
                endpoint=label,
            )
            if retry is None:
                if status >= 500:
                    raise GitHubUnavailable(
                        label, f"{status} {message}", status=status, ambiguous=not safe
                    )
                raise GitHubStatusError(label, status, message)
            if attempt >= policy.attempts:
                if retry.rate_limited:
                    raise RateLimited(label, time.time() + retry.delay, retry.reason)
                raise GitHubUnavailable(label, f"{status} {message}", status=status)
            pause(retry)

    def json(self, method: str, url: str, *, endpoint: str, **kwargs: Any) -> Any:
        return self.request(method, url, endpoint=endpoint, **kwargs).json()

    def paginate(
        self,
        path: str,
        *,
        endpoint: str,
        params: Mapping[str, str | int] | None = None,
        key: str | None = None,
        limit: int | None = None,
    ) -> Iterator[JsonObject]:
        """Every item of a listing, page by page; `key` names the list in an object body."""
        url: str | None = path
        query: Mapping[str, str | int] | None = {
            **(params or {}),
            "per_page": self.options.per_page,
        }
        seen = 0
        while url is not None:
            response = self.request("GET", url, endpoint=endpoint, params=query)
            body = response.json()
            for item in body if key is None else body[key]:
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            # The Link URL carries every parameter (and names the repository by id): as is.
            url = response.links.get("next", {}).get("url")
            query = None
            if url is not None and httpx.URL(url).host != self._http.base_url.host:
                raise GitHubError(f"{endpoint}: next page on another host: {url}")


def error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    return str(body.get("message", "")) if isinstance(body, dict) else ""
