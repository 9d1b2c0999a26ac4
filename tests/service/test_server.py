"""The webhook server over HTTP: signatures, refusals with reasons, dedupe, the queue, health,
metrics, a real uvicorn on loopback, `serve` as a real process, and property-based abuse."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from helpers import SERVE, WEBHOOKS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from services import create_database, drop_database, free_port, queue_url, start_postgres
from starlette.applications import Starlette
from starlette.testclient import TestClient

from triage_bot.config import Settings, SettingsError, load_settings
from triage_bot.service.queue import JobQueue
from triage_bot.service.queue_transport import huey_for_url, redis_huey
from triage_bot.service.server import MAX_BODY_BYTES, WEBHOOK_PATH, create_app
from triage_bot.store.store import Store

__all__ = ["queue_url"]  # fixture

SECRET = "It's a Secret to Everybody"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = WEBHOOKS


def example(event: str, name: str) -> dict[str, Any]:
    path = EXAMPLES / event / name
    if not path.exists():
        pytest.fail(f"GitHub's example payloads are missing: {path}")
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def failed_run() -> dict[str, Any]:
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"]["conclusion"] = "failure"
    payload["installation"] = {"id": 42, "node_id": "x"}
    return payload


def signature(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers(event: str, body: bytes, delivery: str | None = None, **extra: str) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature(body),
        "Content-Type": "application/json",
        **extra,
    }


# starlette's TestClient answers with httpx2's responses, a live server's client with httpx's.
Response = httpx.Response | httpx2.Response


def latin1(sent: dict[str, str]) -> dict[bytes, bytes]:
    # HTTP header values are bytes; httpx would refuse non-ASCII str, servers see Latin-1.
    return {name.encode("latin-1"): value.encode("latin-1") for name, value in sent.items()}


def post(client: TestClient | httpx.Client, event: str, payload: Any, **kw: Any) -> Response:
    body = json.dumps(payload).encode()
    return client.post(WEBHOOK_PATH, content=body, headers=headers(event, body, **kw))


class Server:
    def __init__(self, tmp_path: Path, max_body: int = MAX_BODY_BYTES) -> None:
        self.settings = load_settings({"WEBHOOK_SECRET": SECRET, "TRIAGE_DATA_DIR": str(tmp_path)})
        self.store = Store(self.settings.database_url)
        self.queue = JobQueue.from_settings(self.settings, self.store)
        self.app = create_app(self.settings, self.store, self.queue, max_body=max_body)
        self.client = TestClient(self.app, raise_server_exceptions=False)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path)
    yield server
    server.store.close()


def test_signed_ping_gets_pong(server: Server) -> None:
    response = post(server.client, "ping", example("ping", "payload.json"))
    assert response.status_code == 200
    assert response.json()["outcome"] == "pong"
    assert response.json()["reason"] == "Anything added dilutes everything else."


def test_failed_run_is_queued_and_redelivery_is_not(server: Server) -> None:
    delivery = str(uuid.uuid4())
    started = time.perf_counter()
    response = post(server.client, "workflow_run", failed_run(), delivery=delivery)
    assert time.perf_counter() - started < 0.5
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["outcome"] == "job" and body["job"] and body["delivery"] == delivery
    assert server.queue.depth() == 1
    record = server.store.jobs.get(body["job"])
    assert record is not None and record.payload["run_id"] == 289782451

    again = post(server.client, "workflow_run", failed_run(), delivery=delivery)
    assert again.status_code == 200 and again.json()["outcome"] == "duplicate"
    assert server.queue.depth() == 1

    merged = post(server.client, "workflow_run", failed_run())  # a new delivery, same run
    assert merged.status_code == 202 and merged.json()["outcome"] == "coalesced"
    assert merged.json()["job"] == body["job"] and server.queue.depth() == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"X-Hub-Signature-256": None}, "X-Hub-Signature-256 is missing"),
        ({"X-Hub-Signature-256": "sha256=" + "0" * 64}, "does not match"),
        ({"X-Hub-Signature-256": "sha1=abc"}, "does not match"),
        ({"X-Hub-Signature-256": "sha256=\xe9"}, "does not match"),  # sent as Latin-1
    ],
)
def test_bad_signatures_get_401_and_no_job(
    server: Server, change: dict[str, str | None], reason: str
) -> None:
    body = json.dumps(failed_run()).encode()
    sent = {k: v for k, v in {**headers("workflow_run", body), **change}.items() if v is not None}
    response = server.client.post(WEBHOOK_PATH, content=body, headers=latin1(sent))
    assert response.status_code == 401 and reason in response.json()["reason"]
    assert server.queue.depth() == 0 and server.store.jobs.counts()["queued"] == 0


def test_signature_with_another_secret_gets_401(server: Server) -> None:
    body = json.dumps(failed_run()).encode()
    sent = {**headers("workflow_run", body), "X-Hub-Signature-256": signature(body, "other")}
    assert server.client.post(WEBHOOK_PATH, content=body, headers=sent).status_code == 401


@pytest.mark.parametrize(
    ("body", "change", "reason"),
    [
        (b'{"action": ', {}, "body is not JSON"),
        (b"\xff\xfe", {}, "body is not JSON"),
        (b"[1, 2]", {}, "not an object"),
        (b"[" * 100_000, {}, "too deep"),
        (b"{}", {"X-GitHub-Event": None}, "X-GitHub-Event is missing"),
        (b"{}", {"X-GitHub-Delivery": None}, "X-GitHub-Delivery is missing"),
        (b"{}", {"X-GitHub-Event": "Not An Event"}, "X-GitHub-Event is not an event name"),
        (b"{}", {"X-GitHub-Delivery": "a" * 101}, "X-GitHub-Delivery is not a delivery id"),
        (b"x=1", {"Content-Type": "application/x-www-form-urlencoded"}, "no payload field"),
    ],
)
def test_malformed_requests_get_400_with_a_reason(
    server: Server, body: bytes, change: dict[str, str | None], reason: str
) -> None:
    sent = {k: v for k, v in {**headers("workflow_run", body), **change}.items() if v is not None}
    response = server.client.post(WEBHOOK_PATH, content=body, headers=sent)
    assert response.status_code == 400 and reason in response.json()["reason"]


def test_form_encoded_payload_is_accepted(server: Server) -> None:
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(example("ping", "payload.json"))}).encode()
    sent = headers("ping", body, **{"Content-Type": "application/x-www-form-urlencoded"})
    assert server.client.post(WEBHOOK_PATH, content=body, headers=sent).status_code == 200


def test_odd_fields_get_422_ignored_events_202(server: Server) -> None:
    payload = failed_run()
    payload["workflow_run"]["id"] = "not a number"
    refused = post(server.client, "workflow_run", payload)
    assert refused.status_code == 422
    assert refused.json()["reason"] == (
        "workflow_run: workflow_run.id must be a non-negative integer, got 'not a number'"
    )
    ignored = post(server.client, "check_suite", example("check_suite", "completed.payload.json"))
    assert ignored.status_code == 202 and ignored.json()["outcome"] == "ignored"
    assert server.queue.depth() == 0


def test_installation_events_are_recorded(server: Server) -> None:
    response = post(server.client, "installation", example("installation", "created.payload.json"))
    assert response.status_code == 202 and response.json()["outcome"] == "record"
    installation = server.store.installation(957387)
    assert installation is not None and installation.repos == ("Codertocat/Hello-World",)


def test_oversized_body_gets_413(tmp_path: Path) -> None:
    small = Server(tmp_path, max_body=1000)
    body = json.dumps({"zen": "x" * 2000}).encode()
    response = small.client.post(WEBHOOK_PATH, content=body, headers=headers("ping", body))
    assert response.status_code == 413 and "over 1000 bytes" in response.json()["reason"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap applies while reading
        yield from (body[i : i + 100] for i in range(0, len(body), 100))

    sent = {k: v for k, v in headers("ping", body).items()}
    response = small.client.post(WEBHOOK_PATH, content=chunks(), headers=sent)
    assert response.status_code == 413
    small.store.close()


def test_healthz_and_metrics(server: Server) -> None:
    post(server.client, "ping", example("ping", "payload.json"))
    post(server.client, "workflow_run", failed_run())
    health = server.client.get("/healthz")
    assert health.status_code == 200 and health.json() == {
        "ok": True,
        "database": "ok",
        "queue": "ok",
    }
    text = server.client.get("/metrics").text
    for line in (
        'triage_bot_webhook_deliveries_total{event="ping",outcome="pong"}',
        'triage_bot_webhook_deliveries_total{event="workflow_run",outcome="job"}',
        "triage_bot_queue_depth 1.0",
        'triage_bot_jobs{status="queued"} 1.0',
        "triage_bot_webhook_seconds_bucket",
        "triage_bot_triage_seconds_bucket",
        "# TYPE triage_bot_github_api_calls_total counter",
        "# TYPE triage_bot_github_api_retries_total counter",
        "# TYPE triage_bot_jobs_failed_total counter",
    ):
        assert line in text, line


def test_healthz_reports_an_unreachable_queue(tmp_path: Path) -> None:
    settings = load_settings({"WEBHOOK_SECRET": SECRET, "TRIAGE_DATA_DIR": str(tmp_path)})
    store = Store(settings.database_url)
    dead = JobQueue(redis_huey(f"redis://127.0.0.1:{free_port()}/0"), store)
    client = TestClient(create_app(settings, store, dead))
    health = client.get("/healthz")
    assert health.status_code == 503
    assert health.json()["database"] == "ok"
    assert health.json()["queue"].startswith("unreachable: ConnectionError")
    assert client.get("/metrics").status_code == 200  # still scrapeable
    store.close()


def test_the_server_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    settings = load_settings({"TRIAGE_DATA_DIR": str(tmp_path)})
    store = Store(settings.database_url)
    with pytest.raises(SettingsError, match=r"^WEBHOOK_SECRET: required"):
        create_app(settings, store, JobQueue.from_settings(settings, store))
    store.close()


@pytest.fixture
def scaled(queue_url: str, tmp_path: Path) -> Iterator[Server]:
    """The server over SQLite + SQLite queue, then over PostgreSQL + Redis."""
    db = f"sqlite:///{tmp_path / 'triage.db'}"
    if queue_url.startswith("redis"):
        db = create_database(start_postgres())
    server = Server.__new__(Server)
    server.settings = Settings(None, webhook_secret=SECRET, database_url=db, data_dir=tmp_path)
    server.store = Store(db)
    server.queue = JobQueue(huey_for_url(queue_url), server.store)
    server.app = create_app(server.settings, server.store, server.queue)
    server.client = TestClient(server.app, raise_server_exceptions=False)
    yield server
    server.store.close()
    if db.startswith("postgresql"):
        drop_database(db)


def test_both_stacks_queue_one_job_per_delivery(scaled: Server) -> None:
    delivery = str(uuid.uuid4())
    codes = [post(scaled.client, "workflow_run", failed_run(), delivery=delivery).status_code]
    codes += [post(scaled.client, "workflow_run", failed_run(), delivery=delivery).status_code]
    assert codes == [202, 200] and scaled.queue.depth() == 1
    assert scaled.client.get("/healthz").json()["ok"] is True


# -- a real uvicorn on loopback ------------------------------------------------------------------


@pytest.fixture
def live(server: Server) -> Iterator[str]:
    yield from run_uvicorn(server.app)


def run_uvicorn(app: Starlette) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(10)


def test_over_http_a_huge_content_length_is_refused_unread(live: str) -> None:
    port = int(live.rsplit(":", 1)[1])
    request = (
        f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {30 * 1024 * 1024}\r\n"
        "X-Hub-Signature-256: sha256=00\r\nX-GitHub-Event: ping\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request.encode())  # and not one byte of the 30 MiB body
        received = b""
        while b"}" not in received:  # the JSON body, which may come in a second segment
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    answer = received.decode()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "is over 26214400 bytes" in answer


def test_over_http_acknowledgements_are_fast(live: str, server: Server) -> None:
    payload = failed_run()
    timings = []
    with httpx.Client(base_url=live) as client:
        for run_id in range(50):
            payload["workflow_run"]["id"] = 1000 + run_id
            started = time.perf_counter()
            assert post(client, "workflow_run", payload).status_code == 202
            timings.append(time.perf_counter() - started)
    timings.sort()
    assert timings[len(timings) // 2] < 0.05, timings  # generous: CI machines are shared
    assert server.queue.depth() == 50


def test_serve_runs_server_and_worker_in_one_process(tmp_path: Path) -> None:
    port = free_port()
    env = {"WEBHOOK_SECRET": SECRET, "GITHUB_TOKEN": "t", "TRIAGE_DATA_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(port)],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            wait_until(lambda: _healthy(client), process)
            assert post(client, "workflow_run", failed_run()).status_code == 202
            store = Store(load_settings(env).database_url)
            wait_until(lambda: _triaged(store), process)
            store.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    # uvicorn re-raises SIGTERM once it has shut down, so the exit status is -SIGTERM; what
    # matters is that the worker was stopped gracefully first.
    assert process.returncode in (0, -signal.SIGTERM), stderr.decode()[-2000:]
    assert b"worker stopped" in stderr, stderr.decode()[-2000:]


def test_serve_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    env = {"GITHUB_TOKEN": "t", "TRIAGE_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", SERVE, str(free_port())],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert b"WEBHOOK_SECRET: required" in done.stderr


def wait_until(predicate: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while not predicate():
        assert process.poll() is None, "the server exited"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _healthy(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def _triaged(store: Store) -> bool:
    triage = store.triage("octo-org/octo-repo", 289782451, 1)
    return triage is not None and triage.status == "done"


# -- property-based: nothing a client sends gets a 5xx, every refusal says why -----------------

FAST_PROPERTIES = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=120)


def assert_answered(response: Response) -> None:
    assert response.status_code < 500, response.text
    body = response.json()
    assert isinstance(body.get("outcome"), str)
    if response.status_code >= 300 or body["outcome"] in ("refused", "ignored"):
        assert isinstance(body.get("reason"), str) and body["reason"]


@pytest.fixture(scope="module")
def abused(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("abuse"), max_body=64 * 1024)
    yield server
    server.store.close()


@FAST_PROPERTIES
@given(
    body=st.binary(max_size=2048),
    event=st.one_of(st.none(), header_text, st.sampled_from(["ping", "workflow_run", "push"])),
    delivery=st.one_of(st.none(), header_text),
    sign=st.sampled_from(["right", "wrong", "none", "garbage"]),
    garbage=header_text,
)
def test_any_request_gets_an_answer_with_a_reason(
    abused: Server, body: bytes, event: str | None, delivery: str | None, sign: str, garbage: str
) -> None:
    sent = {"Content-Type": "application/json"}
    if event is not None:
        sent["X-GitHub-Event"] = event
    if delivery is not None:
        sent["X-GitHub-Delivery"] = delivery
    if sign != "none":
        value = {"right": signature(body), "wrong": signature(body + b"x"), "garbage": garbage}
        sent["X-Hub-Signature-256"] = value[sign]
    response = abused.client.post(WEBHOOK_PATH, content=body, headers=latin1(sent))
    assert_answered(response)
    if sign != "right":
        assert response.status_code == 401


BASES: dict[str, Callable[[], dict[str, Any]]] = {
    "workflow_run": failed_run,
    "workflow_job": lambda: example(
        "workflow_job", "completed.failure.with-organization.payload.json"
    ),
    "pull_request": lambda: example("pull_request", "synchronize.payload.json"),
    "installation": lambda: example("installation", "created.payload.json"),
    "installation_repositories": lambda: example("installation_repositories", "added.payload.json"),
    "ping": lambda: example("ping", "payload.json"),
}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = [
    "workflow_run",
    "workflow_job",
    "installation",
    "repository",
    "pull_requests",
    "id",
    "run_id",
    "run_attempt",
    "action",
    "number",
    "head_sha",
    "head_branch",
    "full_name",
    "conclusion",
    "repositories",
    "repositories_added",
    "before",
    "after",
    "account",
    "login",
    "zen",
]


@FAST_PROPERTIES
@given(
    event=st.sampled_from(sorted(BASES)),
    edits=st.lists(
        st.tuples(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3), json_values),
        max_size=3,
    ),
    drop=st.booleans(),
)
def test_well_signed_odd_payloads_never_get_a_5xx(
    abused: Server, event: str, edits: list[tuple[list[str], Any]], drop: bool
) -> None:
    payload = copy.deepcopy(BASES[event]())
    for path, value in edits:
        target: Any = payload
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            if drop:
                target.pop(path[-1], None)
            else:
                target[path[-1]] = value
    assert_answered(post(abused.client, event, payload))


@FAST_PROPERTIES
@given(event=st.sampled_from(sorted(BASES)), cut=st.floats(0, 1, exclude_max=True))
def test_truncated_payloads_get_400(abused: Server, event: str, cut: float) -> None:
    body = json.dumps(BASES[event]()).encode()
    body = body[: int(len(body) * cut)]
    response = abused.client.post(WEBHOOK_PATH, content=body, headers=headers(event, body))
    assert response.status_code == 400 and "not JSON" in response.json()["reason"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(size=st.integers(64 * 1024 - 16, 64 * 1024 + 4096), sign=st.booleans())
def test_oversized_bodies_get_413(abused: Server, size: int, sign: bool) -> None:
    zen = "z" * (size - len(json.dumps({"zen": ""})))
    body = json.dumps({"zen": zen}).encode()
    sent = headers("ping", body)
    if not sign:
        sent["X-Hub-Signature-256"] = "sha256=" + "0" * 64
    response = abused.client.post(WEBHOOK_PATH, content=body, headers=sent)
    assert_answered(response)
    if len(body) > 64 * 1024:
        assert response.status_code == 413
    else:
        assert response.status_code == (200 if sign else 401)
