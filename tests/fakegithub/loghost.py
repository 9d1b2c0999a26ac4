"""The log host: raw job logs at signed, expiring URLs, on another address than the API.

Like a blob store it speaks plain text, wants no credentials and refuses any: a request that
carries an Authorization header is answered 400, so a bot that leaks its token here fails.
Like Azure blob storage it honours a single `Range: bytes=A-B`, `bytes=A-` or `bytes=-N`
(206 with Content-Range; 416 with `Content-Range: bytes */SIZE` when A is past the end) and
ignores a Range it cannot parse or one of several ranges (200 with the whole blob).
"""

from __future__ import annotations

import re
import threading
import time
import traceback

from .faults import Faults
from .http_types import Request, Response
from .loglinks import LogLinks
from .models import RecordedRequest
from .problems import Problems
from .state import State

_TEXT = [("Content-Type", "text/plain; charset=utf-8")]
AUTHORIZATION_REFUSED = "Authorization header is not allowed on a pre-signed URL"
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def _text(status: int, message: str) -> Response:
    return Response(status, list(_TEXT), message.encode())


class LogHostApp:
    def __init__(
        self,
        state: State,
        faults: Faults,
        links: LogLinks,
        problems: Problems,
        stopping: threading.Event,
    ) -> None:
        self.state, self.faults, self.links = state, faults, links
        self.problems, self.stopping = problems, stopping

    def __call__(self, request: Request) -> Response:
        record = self.state.record(
            RecordedRequest(
                "logs",
                request.method,
                request.path,
                request.raw_query,
                request.headers,
                request.body,
                time.time(),
            )
        )
        try:
            response = self._respond(request, record)
        except Exception:  # a bug in the fake: answer 500 and fail the test later
            self.problems.add(f"log host {request.path} crashed:\n{traceback.format_exc()}")
            response = _text(500, "fake log host crashed")
        record.status = response.status
        return response

    def _respond(self, request: Request, record: RecordedRequest) -> Response:
        delay = self.faults.take_delay("logs", request.method, request.path)
        if delay:
            record.notes.append(f"fault: delayed {delay}s")
            self.stopping.wait(delay)
        injected = self.faults.take_error("logs", request.method, request.path)
        if injected is not None:
            record.notes.append(f"fault: {injected.status}")
            return _text(injected.status, injected.message)
        if request.method != "GET":
            return _text(405, "Method Not Allowed")
        if request.header("Authorization") is not None:
            record.notes.append("refused: Authorization header sent to the log host")
            return _text(400, AUTHORIZATION_REFUSED)
        verdict = self.links.verify(request.path, request.raw_query)
        if verdict.job_id is None:
            return _text(403, f"AuthenticationFailed: {verdict.reason}")
        with self.state.lock:
            job = self.state.jobs.get(verdict.job_id)
            log = job.log if job is not None and not job.log_expired else None
        if log is None:
            return _text(404, "BlobNotFound")
        trickle = self.faults.take_trickle(request.method, request.path)
        response = _ranged(log, request.header("Range"))
        response.trickle = trickle
        if response.status == 206:
            record.notes.append(f"range: {response.header('Content-Range')}")
        return response


def _ranged(blob: bytes, asked: str | None) -> Response:
    """The blob, or the part of it that a single well-formed Range asks for."""
    whole = Response(200, [*_TEXT, ("Accept-Ranges", "bytes")], blob)
    found = _RANGE.fullmatch((asked or "").strip())
    if found is None or found.group(1) == found.group(2) == "":
        return whole
    first, last = found.group(1), found.group(2)
    size = len(blob)
    if first == "":  # the last N bytes
        start, end = max(0, size - int(last)), size - 1
    else:
        start = int(first)
        end = min(int(last), size - 1) if last else size - 1
        if last and int(last) < start:
            return whole  # not a valid range: ignored, as RFC 9110 says
    if start >= size or end < start:
        return Response(416, [*_TEXT, ("Content-Range", f"bytes */{size}")], b"")
    headers = [*_TEXT, ("Accept-Ranges", "bytes"), ("Content-Range", f"bytes {start}-{end}/{size}")]
    return Response(206, headers, blob[start : end + 1])
