"""End to end: `triage-bot serve` (and `worker`) as real processes, GitHub's own example
webhook signed and sent over HTTP, the comment that appears on the fake GitHub.

Run twice: embedded (one `serve`, SQLite database and queue) and scaled out (PostgreSQL and
Redis, one `serve --no-worker` and two `triage-bot worker` processes).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
import redis
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import Installation, PullRequest, Repo, WorkflowRun
from helpers import EXAMPLES, ROOT, WEBHOOKS
from services import create_database, drop_database, free_port, start_postgres, start_redis

from triage_bot.config import load_settings
from triage_bot.service.server import WEBHOOK_PATH
from triage_bot.store.store import Store

PAYLOAD = WEBHOOKS / "workflow_run" / "completed.with-pull-requests.payload.json"
REPO = "octo-org/octo-repo"  # the example payload's repository
THREE = (
    "unit-tests-mi350x",
    "kimi-k3-mxfp4-1p1d-tp8-dspark7-agentic-1m-c1",
    "kimi-k3-mxfp4-1p1d-tp8-dcp8-agentic-lmcache-1m-c48-mesh-build",
)
LEASE = "2"  # seconds: how soon a SIGKILLed worker's job is taken over
WAIT = 30.0  # the bound on every wait
_SETTINGS = (
    "APP_ID",
    "PRIVATE_KEY",
    "PRIVATE_KEY_PATH",
    "GITHUB_TOKEN",
    "DATABASE_URL",
    "REDIS_URL",
    "WEBHOOK_SECRET",
    "GITHUB_API_URL",
    "TRIAGE_DATA_DIR",
    "PORT",
)


class Stack:
    """The fake GitHub, the bot's processes, and what the test needs to talk to both."""

    def __init__(self, fake: FakeGitHub, tmp: Path, mode: str) -> None:
        self.fake, self.tmp, self.mode = fake, tmp, mode
        self.repo: Repo = fake.state.add_repo(REPO)
        self.installation: Installation = fake.install("octo-org")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
        self.env = {
            **env,
            "WEBHOOK_SECRET": fake.webhook_secret,
            "APP_ID": str(fake.app_id),
            "PRIVATE_KEY": fake.private_key_pem,
            "GITHUB_API_URL": fake.base_url,
            "TRIAGE_DATA_DIR": str(tmp / "data"),
            "PORT": str(self.port),
            "LOG_LEVEL": "INFO",
            "PYTHONPATH": str(ROOT),
        }
        self.processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        self.database = ""
        if mode == "scaled":
            self.database = create_database(start_postgres())
            self.env["DATABASE_URL"] = self.database
            self.env["REDIS_URL"] = start_redis()
            redis.Redis.from_url(self.env["REDIS_URL"]).flushdb()
        self.store = Store(load_settings(self.env).database_url)

    # ---- processes ------------------------------------------------------------------------

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        out = (self.tmp / f"{args[0]}-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "triage_bot", *args],
            env=self.env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        self.processes.append((process, out))
        return process

    def start_workers(self) -> list[subprocess.Popen[bytes]]:
        """What runs jobs: `serve` itself when embedded, else two `worker` processes."""
        if self.mode == "embedded":
            return [self.start("serve", "--lease", LEASE)]
        return [self.start("worker", "--lease", LEASE) for _ in range(2)]

    def up(self) -> list[subprocess.Popen[bytes]]:
        workers = self.start_workers()
        if self.mode == "scaled":
            self.start("serve", "--no-worker")
        self.wait(self.healthy, "the server to answer /healthz")
        return workers

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def close(self) -> None:
        for process, out in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            out.close()
        self.store.close()
        if self.database:
            drop_database(self.database)

    def output(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.tmp.glob("*.log"))
        )

    def wait(self, predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            for process, _ in self.processes:
                if process.poll() not in (None, -signal.SIGKILL):
                    pytest.fail(f"{process.args!r} exited {process.returncode}\n{self.output()}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout}s waiting for {what}\n{self.output()}")
            time.sleep(0.05)

    # ---- GitHub's side ----------------------------------------------------------------------

    def pull_with_failed_run(self, head_ref: str) -> tuple[PullRequest, WorkflowRun]:
        state = self.fake.state
        pull = state.add_pull_request(self.repo, author="alice", head_ref=head_ref)
        jobs = [NewJob("lint", conclusion="success")]
        jobs += [NewJob(name, log=(EXAMPLES / f"{name}.log").read_bytes()) for name in THREE]
        return pull, state.add_run(self.repo, pull=pull, jobs=jobs)

    def comments(self, pull: PullRequest) -> list[str]:
        return [c.body for c in self.fake.state.comments_on(self.repo, pull.number)]

    def triaged(self, run: WorkflowRun) -> bool:
        triage = self.store.triage(REPO, run.id, run.run_attempt)
        return triage is not None and triage.status == "done"

    def send(
        self,
        payload: dict[str, Any],
        delivery: str | None = None,
        secret: str | None = None,
        event: str = "workflow_run",
    ) -> httpx.Response:
        body = json.dumps(payload).encode()
        key = (secret or self.fake.webhook_secret).encode()
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json",
        }
        return httpx.post(self.url + WEBHOOK_PATH, content=body, headers=headers, timeout=10)

    def webhook(self, run: WorkflowRun, pull: PullRequest) -> dict[str, Any]:
        """GitHub's example `workflow_run completed` payload, made to describe `run`."""
        payload: dict[str, Any] = copy.deepcopy(_example())
        payload["repository"].update(id=self.repo.id, full_name=REPO)
        payload["installation"] = {"id": self.installation.id, "node_id": "MDIzOkluc3RhbGxhdGlvbg"}
        wrun = payload["workflow_run"]
        wrun.update(
            id=run.id,
            run_attempt=run.run_attempt,
            head_sha=run.head_sha,
            head_branch=run.head_branch,
            name=run.name,
            conclusion="failure",
        )
        [pr] = wrun["pull_requests"]
        pr.update(number=pull.number)
        pr["head"].update(sha=pull.head_sha, ref=pull.head_ref)
        # events.py keeps only pull requests whose base is this repository
        pr["base"]["repo"]["id"] = pr["head"]["repo"]["id"] = self.repo.id
        return payload


_cache: dict[str, Any] = {}


def _example() -> dict[str, Any]:
    if not _cache:
        if not PAYLOAD.exists():
            pytest.fail(f"GitHub's example payloads are missing: {PAYLOAD}")
        _cache.update(json.loads(PAYLOAD.read_text()))
    return _cache


@pytest.fixture(params=["embedded", "scaled"])
def stack(
    request: pytest.FixtureRequest, fake_github: FakeGitHub, tmp_path: Path
) -> Iterator[Stack]:
    stack = Stack(fake_github, tmp_path, request.param)
    try:
        yield stack
    finally:
        stack.close()


def test_a_failed_run_becomes_one_comment_edited_in_place(stack: Stack) -> None:
    stack.up()
    pull, run = stack.pull_with_failed_run("fix-imports")
    first = stack.send(stack.webhook(run, pull))
    assert first.status_code == 202, first.text
    stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the first comment")
    [body] = stack.comments(pull)
    assert "aiter.ops.triton.attention.mla_decode" in body and "block_regions" in body
    assert "Too many open files" in body and "· 3 failed jobs" in body

    # A second failing run (a re-run with one job failing) edits the same comment.
    stack.fake.state.add_attempt(run, jobs=[NewJob(THREE[0], log=_log(THREE[0]))])
    delivery = str(uuid.uuid4())
    assert stack.send(stack.webhook(run, pull), delivery).status_code == 202
    stack.wait(lambda: stack.triaged(run), "the second triage")
    [edited] = stack.comments(pull)
    assert "· 1 failed job" in edited and "block_regions" in edited

    # A redelivery and a forged delivery change nothing.
    calls = len(stack.fake.requests())
    again = stack.send(stack.webhook(run, pull), delivery)
    assert again.status_code == 200 and again.json()["outcome"] == "duplicate"
    forged = stack.send(stack.webhook(run, pull), secret="not-the-secret")
    assert forged.status_code == 401 and forged.json()["outcome"] == "unauthorized"
    time.sleep(1.0)  # room for any wrongly queued work to show itself
    assert len(stack.fake.requests()) == calls
    assert stack.comments(pull) == [edited]
    assert stack.store.jobs.counts().get("queued", 0) == 0


def test_a_worker_killed_mid_triage_loses_nothing(stack: Stack) -> None:
    workers = stack.up()
    pull, run = stack.pull_with_failed_run("slow-logs")
    stack.fake.faults.slow_logs(chunk_size=64, pause=0.05)  # ~4 s for each log
    accepted = stack.send(stack.webhook(run, pull))
    assert accepted.status_code == 202, accepted.text
    stack.wait(lambda: bool(stack.fake.requests(host="logs")), "the log download to start")
    for process in workers:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    stack.fake.faults.clear()
    assert stack.comments(pull) == []
    stack.start_workers()
    stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
    time.sleep(1.0)  # a second copy of the job, if any, would post now
    [body] = stack.comments(pull)
    assert "block_regions" in body and "· 3 failed jobs" in body
    posts = stack.fake.requests(rf"/issues/{pull.number}/comments$", method="POST")
    assert len(posts) == 1
    record = stack.store.jobs.get(accepted.json()["job"])
    assert record is not None and record.status == "done" and record.attempts == 2


def _log(name: str) -> bytes:
    return (EXAMPLES / f"{name}.log").read_bytes()
