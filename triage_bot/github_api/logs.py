"""A job's log, streamed to a consumer while it downloads, never raising for a lost log.

GitHub answers the logs endpoint with a 302 to a pre-signed blob URL (valid about a minute) on
another host. We ask the API for that redirect with our token and without following it
(PyGithub, client.py), then fetch the blob here with httpx, to stream it, from a client that
has no credentials at all: the token never leaves the API host. The body is handed over chunk
by chunk as it arrives, so the classifier works while the rest downloads, and reading stops
(the connection is closed) as soon as the byte cap (if any) is reached or the consumer declines
more. The App gives no cap here: its classifier keeps the log's tail (log_tail.py), and is told
the log's size (Content-Length) before the first byte so that it can count the head as it
passes instead of holding the tail.

A connection that drops mid-body is resumed, not restarted: the consumer has already seen N
bytes and cannot un-see them, so we fetch a fresh signed URL and ask for `Range: bytes=N-`; a
host that ignores Range answers 200 with the whole log, and we skip the first N bytes
ourselves. A finished job's log does not change, so the consumer sees one seamless stream
either way. If the attempts run out, the outcome is "unavailable" with `bytes_read` > 0
(`partial`): what was fed is valid, just incomplete, and the caller may say so.

An "unavailable" outcome is `temporary` when the retry policy would have tried again but its
attempts ran out (5xx, timeouts, dropped connections, from the API or the log host): the
queue's job may then come back later (pipeline.py raises LogsUnavailable) rather than say the
log is missing. "expired" (410) and "missing" (404) are final, and so is any other refusal.
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal

import httpx

from triage_bot import metrics
from triage_bot.github_api.retry import (
    ClientOptions,
    GitHubStatusError,
    GitHubUnavailable,
    RetryPolicy,
    RetryReason,
    count_call,
    describe,
    pause,
)

LogStatus = Literal["ok", "expired", "missing", "unavailable"]
Consumer = Callable[[bytes], bool]  # True: send more; False: enough
SizeHint = Callable[[int], None]  # told the log's size in bytes, before its first byte
SignedUrl = Callable[[], str]  # asks the API for the log's blob URL; raises GitHubError

BLOB_ENDPOINT = "GET log-blob"  # the metrics label of downloads from the blob host
_CONTENT_RANGE = re.compile(r"bytes (\d+)-")
_QUERY_IN_TEXT = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s?#\"'<>]+)[?#][^\s\"'<>]*")


class _UrlsWithoutQuery(logging.Filter):
    """httpx logs every request's URL at INFO, PyGithub each answer's headers at DEBUG (the
    log endpoint's `location` among them). A log download's URL is signed in its query
    string (whoever holds it can read the log for a minute), so URLs are logged as scheme,
    host and path only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                without_query(str(arg) if isinstance(arg, dict) else arg) for arg in record.args
            )
        return True


def without_query(value: object) -> object:
    """A URL (httpx.URL or text holding URLs) without query strings and fragments."""
    if isinstance(value, httpx.URL):
        return value.copy_with(query=None, fragment=None) if value.query else value
    if isinstance(value, str) and "://" in value:
        return _QUERY_IN_TEXT.sub(r"\1", value)
    return value


for _name in ("httpx", "github.Requester"):
    logging.getLogger(_name).addFilter(_UrlsWithoutQuery())


@cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every log client of the process: loading the CA bundle costs tens
    of milliseconds of CPU, which each new httpx client would otherwise pay."""
    return httpx.create_ssl_context()


def blob_client(options: ClientOptions) -> httpx.Client:
    """The client for the log host: no credentials to leak; may redirect."""
    return httpx.Client(
        verify=tls_context(),
        timeout=httpx.Timeout(options.timeout),
        follow_redirects=True,
        headers={"User-Agent": options.user_agent},
    )


@dataclass(frozen=True)
class LogOutcome:
    status: LogStatus
    bytes_read: int = 0  # bytes handed to the consumer
    capped: bool = False  # "ok", but reading stopped early: max_bytes, or the consumer's wish
    reason: str = ""  # for expired/missing/unavailable: what went wrong, fit for the comment
    resumed: int = 0  # how often a dropped download was picked up where it stopped
    temporary: bool = False  # "unavailable" for now (5xx, timeout): trying later may work

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def partial(self) -> bool:
        """Unavailable after some bytes were consumed: the consumer saw a prefix of the log."""
        return self.status == "unavailable" and self.bytes_read > 0


class Feed:
    """The consumer's side: how much it has been given, and whether it wants more."""

    def __init__(
        self, consumer: Consumer, max_bytes: int | None, size_hint: SizeHint | None = None
    ) -> None:
        self.consumer, self.max_bytes, self.size_hint = consumer, max_bytes, size_hint
        self.consumed = 0
        self.capped = False

    def tell_size(self, response: httpx.Response) -> None:
        """The log's size, from the first answer: Content-Length counts the bytes we get
        only when the body is not encoded (httpx decodes a gzip body)."""
        length = response.headers.get("content-length", "")
        if self.size_hint is None or self.consumed or "content-encoding" in response.headers:
            return
        if response.status_code == 200 and length.isdigit():
            self.size_hint(int(length))

    def give(self, chunk: bytes) -> bool:
        if self.max_bytes is None:
            return self._pass_on(chunk)
        room = self.max_bytes - self.consumed
        if len(chunk) > room:  # includes room == 0: more bytes exist past the cap
            chunk, self.capped = chunk[:room], True
        return self._pass_on(chunk)

    def _pass_on(self, chunk: bytes) -> bool:
        if chunk:
            self.consumed += len(chunk)
            metrics.LOG_BYTES.inc(len(chunk))
            if not self.consumer(chunk):
                self.capped = True
        return not self.capped


class _BlobRefused(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.status = response.status_code
        self.message = response.text[:200]


def stream(ask: SignedUrl, blobs: httpx.Client, feed: Feed, policy: RetryPolicy) -> LogOutcome:
    """Download a job's log into `feed`; see the module docstring.

    `ask` gets a fresh signed URL from the API (each resume needs one); `blobs` must be a
    client without credentials. Raises only RateLimited (from the API: the whole triage
    should come back later) and programming errors.
    """
    resumed = 0
    attempt = 0
    while True:
        attempt += 1
        location = _signed_url(ask)
        if isinstance(location, LogOutcome):
            return _with(location, feed, resumed)
        if feed.consumed:
            resumed += 1  # this attempt picks up a dropped download
        retry: tuple[RetryReason, float] | None
        try:
            _pour(blobs, location, feed)
            return LogOutcome("ok", feed.consumed, capped=feed.capped, resumed=resumed)
        except httpx.TransportError as error:
            retry = _after_error(error, attempt, policy)
            reason = f"log download failed after {feed.consumed} bytes: {describe(error)}"
        except _BlobRefused as refused:
            final = _final_blob_status(refused)
            if final is not None:
                return _with(final, feed, resumed)
            retry = _after_refusal(refused, attempt, policy)
            reason = f"log host answered {refused.status}"
        if retry is None or attempt >= policy.attempts:
            # Temporary when only the attempts ran out: the host would have been asked again.
            temporary = retry is not None
            return LogOutcome(
                "unavailable", feed.consumed, reason=reason, resumed=resumed, temporary=temporary
            )
        pause(*retry)


def _with(outcome: LogOutcome, feed: Feed, resumed: int) -> LogOutcome:
    return LogOutcome(
        outcome.status,
        feed.consumed,
        reason=outcome.reason,
        resumed=resumed,
        temporary=outcome.temporary,
    )


def _signed_url(ask: SignedUrl) -> str | LogOutcome:
    """The blob URL from the API's 302, or the outcome when there is no log to fetch."""
    try:
        location = ask()
    except GitHubUnavailable as error:  # the API's own retries ran out: 5xx, timeouts
        return LogOutcome("unavailable", reason=str(error), temporary=True)
    except GitHubStatusError as error:
        if error.status == 410:
            return LogOutcome("expired", reason=error.message or "the log has expired")
        if error.status == 404:
            return LogOutcome("missing", reason="GitHub has no log for this job")
        return LogOutcome("unavailable", reason=str(error))
    if not location:
        return LogOutcome("unavailable", reason="no log redirect")
    return location


def _pour(blobs: httpx.Client, url: str, feed: Feed) -> None:
    """Stream the blob into `feed`, resuming at feed.consumed; raise on any failure."""
    offset = feed.consumed
    # identity: a Range counts bytes of the encoding sent, which must be the bytes we counted
    headers = {"Range": f"bytes={offset}-", "Accept-Encoding": "identity"} if offset else {}
    with blobs.stream("GET", url, headers=headers) as response:
        count_call(BLOB_ENDPOINT, response.status_code)
        if response.status_code == 416 and offset:
            return  # the drop came right at the end: nothing is left to read
        if response.status_code not in (200, 206):
            response.read()
            raise _BlobRefused(response)
        feed.tell_size(response)
        skip = offset if response.status_code == 200 else _range_gap(response, offset)
        for chunk in response.iter_bytes():
            if skip:
                dropped = min(skip, len(chunk))
                chunk, skip = chunk[dropped:], skip - dropped
            if chunk and not feed.give(chunk):
                return  # leaving the block closes the response: the rest is never read


def _range_gap(response: httpx.Response, offset: int) -> int:
    found = _CONTENT_RANGE.match(response.headers.get("content-range", ""))
    start = int(found.group(1)) if found else offset
    if start > offset:
        raise httpx.RemoteProtocolError(f"asked for bytes from {offset}, got from {start}")
    return offset - start


def _final_blob_status(refused: _BlobRefused) -> LogOutcome | None:
    if refused.status == 404:
        return LogOutcome("missing", reason="the log host has no log for this job")
    if refused.status == 410:
        return LogOutcome("expired", reason="the log has expired")
    return None


def _after_error(
    error: httpx.TransportError, attempt: int, policy: RetryPolicy
) -> tuple[RetryReason, float] | None:
    if isinstance(error, httpx.UnsupportedProtocol | httpx.ProxyError):
        return None  # configuration, not weather
    reason: RetryReason = "timeout" if isinstance(error, httpx.TimeoutException) else "connection"
    return reason, policy.backoff_for(attempt)


def _after_refusal(
    refused: _BlobRefused, attempt: int, policy: RetryPolicy
) -> tuple[RetryReason, float] | None:
    if refused.status == 403:
        # The signed URL lapsed (it lives a minute, and retries may have waited longer):
        # the next attempt asks the API for a fresh one, at once.
        return "auth", 0.0
    if refused.status == 429 or refused.status >= 500:
        return "5xx", policy.backoff_for(attempt)
    return None
