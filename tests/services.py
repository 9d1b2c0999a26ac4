"""Real PostgreSQL and Redis for the tests, started once per test session on loopback.

Fixtures (import the ones a test module uses, or list this module in a conftest):
  postgres_url  session: the admin URL of a throw-away PostgreSQL cluster
  redis_url     session: the URL of a throw-away Redis (no persistence)
  db_url        function, parametrised [sqlite, postgresql]: an empty database of each kind
  queue_url     function, parametrised [sqlite, redis]: an empty huey storage of each kind
                ("sqlite:///PATH" or "redis://HOST:PORT/0"; queue_transport.huey_for_url)

A missing server binary fails the test with the install command (it does not skip): CI
installs Debian's `postgresql` and `redis-server` packages, and a suite that silently skipped
them would pass without testing the scaled-out configuration.

PostgreSQL refuses to run as root, so as root it runs as the `postgres` user (runuser), in a
temporary directory that user owns. Both servers are started at most once per process, even
if several test modules import these fixtures, and stopped when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

START_TIMEOUT = 30.0
PG_INSTALL = "apt-get install postgresql (or set PG_BIN to the folder holding pg_ctl)"
REDIS_INSTALL = "apt-get install redis-server (or put redis-server on PATH)"

_started: dict[str, str] = {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin() -> Path:
    candidates = [os.environ.get("PG_BIN", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    which = shutil.which("pg_ctl")
    candidates.append(str(Path(which).parent) if which else "")
    for folder in filter(None, candidates):
        if (Path(folder) / "pg_ctl").exists() and (Path(folder) / "initdb").exists():
            return Path(folder)
    pytest.fail(f"PostgreSQL is not installed: {PG_INSTALL}", pytrace=False)


def _version(folder: str) -> int:
    name = Path(folder).parent.name
    return int(name) if name.isdigit() else 0


def _as_postgres_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT)
    if done.returncode != 0:
        pytest.fail(f"{what} failed ({done.returncode}): {done.stderr or done.stdout}")


def start_postgres() -> str:
    """Start (once) a PostgreSQL cluster on a free loopback port; its admin URL."""
    if "postgres" in _started:
        return _started["postgres"]
    bin_dir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="triage-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
    data, port = root / "data", free_port()
    _run(
        _as_postgres_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        ),
        "initdb",
    )
    # Durability off: a test cluster that loses data on a crash is fine, and it is far faster.
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
    )
    _run(
        _as_postgres_user(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                str(int(START_TIMEOUT)),
                "start",
            ]
        ),
        "pg_ctl start",
    )
    atexit.register(_stop_postgres, bin_dir, data, root)
    url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    _started["postgres"] = url
    return url


def _stop_postgres(bin_dir: Path, data: Path, root: Path) -> None:
    command = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
    subprocess.run(_as_postgres_user(command), capture_output=True, timeout=START_TIMEOUT)
    shutil.rmtree(root, ignore_errors=True)


def create_database(admin_url: str) -> str:
    """A new empty database in the cluster of `admin_url`; its URL."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(_libpq(admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def drop_database(url: str) -> None:
    admin, name = url.rsplit("/", 1)[0] + "/postgres", url.rsplit("/", 1)[1]
    with psycopg.connect(_libpq(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def start_redis() -> str:
    """Start (once) a Redis without persistence on a free loopback port; its URL."""
    if "redis" in _started:
        return _started["redis"]
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(f"Redis is not installed: {REDIS_INSTALL}", pytrace=False)
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop_process, process)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        with contextlib.suppress(redis.ConnectionError):
            if client.ping():
                break
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"redis-server did not start on port {port}")
        time.sleep(0.02)
    client.close()
    _started["redis"] = url
    return url


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def postgres_url() -> str:
    return start_postgres()


@pytest.fixture(scope="session")
def redis_url() -> str:
    return start_redis()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'triage.db'}"
        return
    url = create_database(start_postgres())
    yield url
    drop_database(url)


@pytest.fixture(params=["sqlite", "redis"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty huey storage: a SQLite file, then a flushed Redis database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'queue.db'}"
        return
    url = start_redis()
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()
