"""The only HTTP-serving code: the webhook endpoint, /healthz and /metrics (starlette, uvicorn).

POST /api/github/webhooks, in order (each refusal is JSON with a `reason`):
  413 when Content-Length or the bytes read pass the cap (25 MiB: GitHub's own payload cap);
      the body is not read past the cap.
  401 when X-Hub-Signature-256 is missing or is not the HMAC-SHA256 of the raw body with
      WEBHOOK_SECRET (compared in constant time).
  400 when X-GitHub-Event or X-GitHub-Delivery is missing or unusable, or the body is not a
      JSON object (JSON, or form-encoded with a `payload` field as GitHub's form option sends).
  422 when the payload is well signed but a field the decision needs is missing or odd.
  200 for ping ("pong") and for a redelivery ("duplicate": no work is done twice).
  202 for everything else: the job was recorded and queued, the installation recorded, or the
      event ignored (the reason says which). Nothing slow happens before the answer: one
      transaction (delivery + job row) and one queue push.
  503 when the database cannot be written (down, full, read-only, failing: GitHub
      redelivers later); one log line says why, with no traceback.

GET /dashboard and below: the dashboard, only when the App's OAuth client is set
(GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET); its sign-in and access check are dashboard_auth.py.

GET /healthz writes: the database's heartbeat row and the queue's heartbeat key must commit
within HEALTH_TIMEOUT, and a SQLite data directory needs its minimum free space
(store_sqlite.py). 200 {"ok": true, "database": "ok", "queue": "ok"}, else 503 with what
failed for each: "full: ...", "unwritable: ...", "unreachable: ...", "timed out ..." or
"failed: ...", in one line without SQL, URL or directory (store_errors.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import hashlib
import hmac
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from anyio import to_thread
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from triage_bot import metrics
from triage_bot.config import Settings, configure_logging
from triage_bot.service import events
from triage_bot.service.dashboard_auth import Dashboard
from triage_bot.service.handler import Handler
from triage_bot.service.queue import JobQueue, QueueOptions
from triage_bot.service.queue_transport import check_writable
from triage_bot.service.worker import EmbeddedWorker
from triage_bot.store.ledger import NewJob
from triage_bot.store.store import Acceptance, Store
from triage_bot.store.store_errors import describe, storage_failure, verdict

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/api/github/webhooks"
MAX_BODY_BYTES = 25 * 1024 * 1024
HEALTH_TIMEOUT = 3.0
_EVENT_NAME = re.compile(r"[a-z][a-z0-9_]{0,99}")
_DELIVERY_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
# Metric labels: a bounded set, whatever event names a client invents.
_KNOWN_EVENTS = events.HANDLED_EVENTS | {"check_run", "check_suite"}
_STATUS = {"job": 202, "record": 202, "ignored": 202, "pong": 200, "refused": 422}


class _Refusal(Exception):
    def __init__(self, status: int, outcome: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.outcome, self.reason = status, outcome, reason


def create_app(
    settings: Settings,
    store: Store,
    queue: JobQueue,
    *,
    max_body: int = MAX_BODY_BYTES,
    worker: EmbeddedWorker | None = None,
    clock: Callable[[], float] = time.time,
) -> Starlette:
    """The ASGI app; refuses to exist without a webhook secret.

    `clock` is the dashboard's (when on): how old GitHub's word on a user's access is.

    `worker`, when given, runs for the app's lifetime (started and stopped by the ASGI
    lifespan, so a SIGTERM to uvicorn lets running jobs finish before the process exits).
    """
    settings.require("server")
    assert settings.webhook_secret is not None
    webhook = _Webhook(settings.webhook_secret.encode("utf-8"), store, queue, max_body)
    health = _Health(store, queue)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if worker is not None:
            worker.start()
        try:
            yield
        finally:
            if worker is not None:
                await run_in_threadpool(worker.stop)

    routes = [
        Route(WEBHOOK_PATH, webhook.handle, methods=["POST"]),
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/metrics", health.metrics, methods=["GET"]),
    ]
    if settings.dashboard_enabled:
        # Off unless the App's OAuth client is set: then /dashboard... are 404 like any path.
        routes += Dashboard(settings, store.engine, clock=clock).routes()
    return Starlette(routes=routes, lifespan=lifespan)


def _json(status: int, body: dict[str, Any]) -> Response:
    # ensure_ascii: text echoed from a payload (even an unpaired surrogate) always encodes.
    return Response(json.dumps(body), status_code=status, media_type="application/json")


class _Webhook:
    def __init__(self, secret: bytes, store: Store, queue: JobQueue, max_body: int) -> None:
        self.secret, self.store, self.queue, self.max_body = secret, store, queue, max_body

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        event = "unverified"
        try:
            body = await self._verified_body(request)
            event, delivery = _headers(request)
            payload = _payload(body, request.headers.get("content-type", ""))
            status, answer = await self._decide(event, delivery, payload)
        except _Refusal as refusal:
            status, answer = refusal.status, {"outcome": refusal.outcome, "reason": refusal.reason}
        label = event if event in _KNOWN_EVENTS or event == "unverified" else "other"
        metrics.DELIVERIES.labels(label, answer["outcome"]).inc()
        metrics.WEBHOOK_SECONDS.observe(time.perf_counter() - started)
        return _json(status, answer)

    async def _verified_body(self, request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length is not None and not length.isdigit():
            raise _Refusal(400, "malformed", "Content-Length is not a number")
        if length is not None and int(length) > self.max_body:
            raise _Refusal(413, "too_large", f"body is over {self.max_body} bytes")
        signature = request.headers.get("x-hub-signature-256")
        if not signature:
            raise _Refusal(401, "unauthorized", "X-Hub-Signature-256 is missing")
        body = await self._read(request)
        expected = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected.encode(), signature.strip().encode("latin-1")):
            raise _Refusal(401, "unauthorized", "X-Hub-Signature-256 does not match the body")
        return body

    async def _read(self, request: Request) -> bytes:
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body:
                    raise _Refusal(413, "too_large", f"body is over {self.max_body} bytes")
                chunks.append(chunk)
        except ClientDisconnect:
            raise _Refusal(400, "malformed", "the client went away mid-body") from None
        return b"".join(chunks)

    async def _decide(
        self, event: str, delivery: str, payload: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        decision = events.decide(event, payload)
        answer: dict[str, Any] = {
            "delivery": delivery,
            "event": event,
            "outcome": decision.outcome,
            "reason": decision.reason,
        }
        if decision.outcome in ("job", "record"):
            try:
                accepted = await run_in_threadpool(self._accept, delivery, event, payload, decision)
            except SQLAlchemyError as error:
                # One line: SQLAlchemy's text carries the SQL and the payload as parameters.
                log.error(
                    "delivery %s answered 503, database unavailable: %s", delivery, describe(error)
                )
                return 503, {**answer, "outcome": "unavailable", "reason": "database unavailable"}
            if not accepted.new:
                return 200, {**answer, "outcome": "duplicate", "reason": "delivery already seen"}
            if decision.outcome == "job":
                answer["job"] = accepted.job_id
                if not accepted.job_created:
                    answer["outcome"] = "coalesced"
        return _STATUS[decision.outcome], answer

    def _accept(
        self, delivery: str, event: str, payload: dict[str, Any], decision: events.Decision
    ) -> Acceptance:
        job = None
        if decision.job is not None:
            job = NewJob(decision.job["kind"], decision.job, decision.coalesce_key)
        accepted = self.store.accept_delivery(
            delivery,
            event,
            _action(payload),
            decision.outcome,
            job=job,
            installation=decision.installation,
        )
        if accepted.job_created and accepted.job_id is not None and decision.job is not None:
            try:
                self.queue.push(accepted.job_id, decision.job["kind"], decision.job)
            except Exception as error:
                # The job is in the ledger: the sweep pushes it once the queue is back. An
                # outage is one line; anything else keeps its traceback.
                if not storage_failure(error):
                    log.exception("job %s recorded but not pushed; the sweep will", accepted.job_id)
                else:
                    log.warning(
                        "job %s recorded but not pushed (the sweep will): queue unavailable: %s",
                        accepted.job_id,
                        describe(error),
                    )
        return accepted


def _headers(request: Request) -> tuple[str, str]:
    event = request.headers.get("x-github-event", "")
    delivery = request.headers.get("x-github-delivery", "")
    if not event:
        raise _Refusal(400, "malformed", "X-GitHub-Event is missing")
    if not _EVENT_NAME.fullmatch(event):
        raise _Refusal(400, "malformed", "X-GitHub-Event is not an event name")
    if not delivery:
        raise _Refusal(400, "malformed", "X-GitHub-Delivery is missing")
    if not _DELIVERY_ID.fullmatch(delivery):
        raise _Refusal(400, "malformed", "X-GitHub-Delivery is not a delivery id")
    return event, delivery


def _payload(body: bytes, content_type: str) -> dict[str, Any]:
    try:
        if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            form = parse_qs(body.decode("utf-8"))
            if "payload" not in form:
                raise _Refusal(400, "malformed", "form body has no payload field")
            body = form["payload"][0].encode("utf-8")
        payload = json.loads(body)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeError are both
        reason = f"body is not JSON: {error}" if isinstance(error, ValueError) else "too deep"
        raise _Refusal(400, "malformed", reason[:200]) from None
    if not isinstance(payload, dict):
        raise _Refusal(400, "malformed", "body is JSON but not an object")
    return payload


def _action(payload: dict[str, Any]) -> str | None:
    action = payload.get("action")
    if isinstance(action, str) and events.is_storable_text(action, 100):
        return action
    return None


class _Health:
    def __init__(self, store: Store, queue: JobQueue) -> None:
        self.store, self.queue = store, queue
        self.probes = {
            "database": _Probe(store.check_writable),
            "queue": _Probe(lambda: check_writable(queue.huey)),
        }

    async def healthz(self, _request: Request) -> Response:
        names = list(self.probes)
        found = await asyncio.gather(*(self.probes[name].run() for name in names))
        checks = dict(zip(names, found, strict=True))
        ok = all(value == "ok" for value in checks.values())
        return _json(200 if ok else 503, {"ok": ok, **checks})

    async def metrics(self, _request: Request) -> Response:
        await run_in_threadpool(self._read_gauges)
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    def _read_gauges(self) -> None:
        # Read at scrape time so they are right whichever process ran the jobs; a scrape still
        # answers while the database or queue is down, with the gauges it could read.
        try:
            metrics.QUEUE_DEPTH.set(self.queue.depth())
            metrics.QUEUE_SCHEDULED.set(self.queue.scheduled())
        except Exception as error:
            log.warning("metrics: queue unreadable: %s", error)
        try:
            for status, count in self.store.jobs.counts().items():
                metrics.JOBS.labels(status).set(count)
            metrics.read_outages(self.store.jobs.outage_counts())
        except Exception as error:
            log.warning("metrics: job ledger unreadable: %s", error)


class _Probe:
    """One check of /healthz, run in a thread and answered within HEALTH_TIMEOUT.

    A check still running when the next request comes (a database that hangs rather than
    fails) is not started again: the answer says so, and threads do not pile up.
    """

    def __init__(self, check: Callable[[], None]) -> None:
        self.check = check
        self._busy = threading.Lock()

    async def run(self) -> str:
        # abandon_on_cancel: the answer does not wait for a thread stuck in the driver.
        checking = to_thread.run_sync(self._checked, abandon_on_cancel=True)
        try:
            return await asyncio.wait_for(checking, HEALTH_TIMEOUT)
        except TimeoutError:
            return f"timed out: no answer within {HEALTH_TIMEOUT:g}s"

    def _checked(self) -> str:
        if not self._busy.acquire(blocking=False):
            return f"timed out: the previous check is still running (over {HEALTH_TIMEOUT:g}s)"
        try:
            self.check()
        except Exception as error:
            return f"{verdict(error)}: {describe(error)}"[:300]
        finally:
            self._busy.release()
        return "ok"


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int | None = None,
    worker: bool = True,
    *,
    workers: int = 2,
    dry_run: bool = False,
    handler: Handler | None = None,
    options: QueueOptions | None = None,
) -> None:
    """`triage-bot serve`: the web server, and unless worker=False the worker, until signalled."""
    settings.require("server", *(("worker",) if worker else ()))
    configure_logging(settings.log_level)
    # A fatal signal (SIGBUS from a mapped file the disk cannot back, see store_sqlite.py)
    # still kills the process, but leaves each thread's Python stack in stderr.
    faulthandler.enable()
    store = Store(settings.database_url)
    queue = JobQueue.from_settings(settings, store, options, handler=handler, dry_run=dry_run)
    embedded = EmbeddedWorker(queue, workers) if worker else None
    app = create_app(settings, store, queue, worker=embedded)
    config = uvicorn.Config(
        app,
        host=host,
        port=port or settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        timeout_keep_alive=75,
        server_header=False,
        lifespan="on",
    )
    log.info("serving on %s:%s, worker %s", host, config.port, "on" if worker else "off")
    uvicorn.Server(config).run()
    store.close()
