"""`triage-bot replay` against a real `triage-bot serve --no-worker` process on loopback:
GitHub's own example payloads, signed with the secret, accepted, deduplicated, refused."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from helpers import ROOT, WEBHOOKS
from services import free_port

from triage_bot.cli.cli import main
from triage_bot.config import load_settings
from triage_bot.store.store import Store

RUN = WEBHOOKS / "workflow_run" / "completed.with-pull-requests.payload.json"
SECRET = "replay-secret"
_SETTINGS = ("DATABASE_URL", "REDIS_URL", "WEBHOOK_SECRET", "TRIAGE_DATA_DIR", "PORT")


@dataclass(frozen=True)
class Server:
    url: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("serve")
    base = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
    env = {**base, "WEBHOOK_SECRET": SECRET, "TRIAGE_DATA_DIR": str(data)}
    port = free_port()
    log = (data / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "triage_bot", "serve", "--no-worker", "--port", str(port)],
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not _healthy(url):
            assert process.poll() is None, (data / "serve.log").read_text()
            assert time.monotonic() < deadline, "serve did not answer /healthz"
            time.sleep(0.05)
        yield Server(url, env)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        log.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture
def env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    for name in _SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WEBHOOK_SECRET", SECRET)
    return server


def failed_run(folder: Path) -> Path:
    """GitHub's example of a completed run, made a failure, saved as GitHub's examples are."""
    payload = json.loads(RUN.read_text(encoding="utf-8"))
    payload["workflow_run"]["conclusion"] = "failure"
    path = folder / "workflow_run" / "completed.failure.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_the_real_cli_replays_a_payload_once(server: Server, tmp_path: Path) -> None:
    saved = failed_run(tmp_path)

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "triage_bot", "replay", str(saved), "--to", server.url, *extra],
            env={**server.env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    first = replay("--delivery", "replay-1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("202 Accepted: job: run ")
    assert "(event workflow_run, delivery replay-1)" in first.stdout
    store = Store(load_settings(server.env).database_url)
    try:
        assert store.delivery_outcome("replay-1") == "job"
    finally:
        store.close()
    again = replay("--delivery", "replay-1")
    assert again.returncode == 0 and again.stdout.startswith("200 OK: duplicate: ")
    fresh = replay()  # a new delivery id: a new delivery of the same run, merged
    assert fresh.returncode == 0 and fresh.stdout.startswith("202 Accepted: coalesced: ")


def test_the_event_comes_from_the_folder_or_from_event(
    env: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "saved" / "run.json"
    saved.parent.mkdir()
    shutil.copy(failed_run(tmp_path), saved)
    assert main(["replay", str(saved), "--to", env.url]) == 2
    err = capsys.readouterr().err
    assert "cannot tell the event from the folder name 'saved': give --event" in err
    assert err.count("\n") == 1
    assert main(["replay", str(saved), "--to", env.url, "--event", "workflow_run"]) == 0
    assert "(event workflow_run, delivery " in capsys.readouterr().out
    # Another event name than the payload's: the server judges it, and says why.
    assert main(["replay", str(saved), "--to", env.url, "--event", "workflow_job"]) == 1
    assert capsys.readouterr().out.startswith("422 Unprocessable Entity: refused: workflow_job")


def test_a_wrong_secret_is_refused_by_the_server(
    env: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET", "not-the-secret")
    assert main(["replay", str(RUN), "--to", f"{env.url}/api/github/webhooks"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("401 Unauthorized: unauthorized: X-Hub-Signature-256 does not match")


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no-secret", "WEBHOOK_SECRET: required to sign the payload"),
        ("missing", "missing.payload.json: cannot read: No such file or directory"),
        ("not-json", "not a JSON payload"),
        ("bad-url", "--to 'ftp://x': not an http(s) URL"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    env: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    message: str,
) -> None:
    folder = tmp_path / "workflow_run"
    folder.mkdir()
    payload, to = RUN, env.url
    if setup == "no-secret":
        monkeypatch.delenv("WEBHOOK_SECRET")
    elif setup == "missing":
        payload = folder / "missing.payload.json"
    elif setup == "not-json":
        payload = folder / "broken.json"
        payload.write_text("{not json", encoding="utf-8")
    else:
        to = "ftp://x"
    assert main(["replay", str(payload), "--to", to]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_no_server_is_a_failure_not_a_crash(
    env: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(RUN), "--to", f"http://127.0.0.1:{free_port()}"]) == 1
    assert ": no answer: " in capsys.readouterr().out


def test_every_example_of_every_subscribed_event_is_acknowledged(
    env: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = yaml.safe_load((ROOT / "app.yml").read_text(encoding="utf-8"))
    for event in manifest["default_events"]:
        examples = sorted((WEBHOOKS / event).glob("*.json"))
        assert examples, f"no example payload of {event}"
        for example in examples:
            assert main(["replay", str(example), "--to", env.url]) == 0, capsys.readouterr()
            assert f"(event {event}, delivery " in capsys.readouterr().out
