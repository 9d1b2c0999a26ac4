"""A full, read-only or failing disk, a stopped Redis, a read-only PostgreSQL: /healthz says
so (503, and what failed), webhooks get 503 in one log line, and nothing crashes.

The disk tests run `triage-bot serve` (server and worker in one process) with its data
directory on a small tmpfs mounted in a private mount namespace (`unshare -m`, as root), and
reach that directory from here through /proc/PID/root. The SIGBUS test mounts a loop ext4 with
1 KiB blocks, where SQLite's own growth of the -shm leaves holes (store_sqlite.py). Without
root, mount namespaces or loop devices these tests skip and say why.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import redis
from helpers import SERVE
from service.test_server import SECRET, failed_run, post
from services import create_database, drop_database, free_port, start_postgres
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from starlette.testclient import TestClient

from triage_bot.config import load_settings
from triage_bot.service.queue import JobQueue
from triage_bot.service.queue_transport import huey_for_url, redis_huey
from triage_bot.service.server import HEALTH_TIMEOUT, create_app
from triage_bot.store.store import Store
from triage_bot.store.store_errors import describe, storage_failure, verdict

ROOT = Path(__file__).resolve().parents[2]
TMPFS_SIZE = "16m"


def _private_mounts_refused(tmp_path: Path) -> str | None:
    """Why a tmpfs cannot be mounted in a private mount namespace here, or None."""
    if os.geteuid() != 0:
        return "needs root (a tmpfs mounted in a private mount namespace)"
    probe = tmp_path / "probe"
    probe.mkdir()
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", probe],
        capture_output=True,
        text=True,
    )
    return None if done.returncode == 0 else f"unshare -m / mount refused: {done.stderr}"


class Served:
    """`serve` with TRIAGE_DATA_DIR on its own tmpfs; `data` is that directory seen from here."""

    def __init__(self, folder: Path) -> None:
        inside = folder / "data"
        inside.mkdir()
        self.port = free_port()
        env = {
            **os.environ,
            "WEBHOOK_SECRET": SECRET,
            "GITHUB_TOKEN": "t",
            "TRIAGE_DATA_DIR": str(inside),
            "PYTHONPATH": str(ROOT),
        }
        script = f'mount -t tmpfs -o size={TMPFS_SIZE} tmpfs "$1" && shift && exec "$@"'
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"]
        command += [str(inside), sys.executable, "-c", SERVE, str(self.port)]
        # A pipe, drained by a thread: a file would fall under the RLIMIT_FSIZE set below.
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
        self._stderr: list[bytes] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        # unshare and sh exec: the server keeps this pid, and its mounts show under /proc.
        self.data = Path(f"/proc/{self.process.pid}/root") / inside.relative_to("/")
        self.inside = inside
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=10)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    def health(self) -> httpx.Response:
        return self.client.get("/healthz")

    def wait(self, predicate: Callable[[], bool], what: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"the server died ({self.process.returncode})"
            try:
                if predicate():
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def jobs_done(self) -> int:
        for line in self.client.get("/metrics").text.splitlines():
            if line.startswith('triage_bot_jobs{status="done"}'):
                return int(float(line.split()[-1]))
        return 0

    def limit_file_size(self, limit: int | None) -> None:
        """Set the server's soft RLIMIT_FSIZE (None: back to its hard limit); Python ignores
        SIGXFSZ, so a write past it fails with EFBIG."""
        _, hard = resource.prlimit(self.process.pid, resource.RLIMIT_FSIZE)
        soft = hard if limit is None else limit
        resource.prlimit(self.process.pid, resource.RLIMIT_FSIZE, (soft, hard))

    def stop(self) -> str:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._drain.join(10)
        return b"".join(self._stderr).decode(errors="replace")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    refused = _private_mounts_refused(tmp_path)
    if refused:
        pytest.skip(refused)
    server = Served(tmp_path)
    try:
        server.wait(lambda: server.health().status_code == 200, "the server to be healthy")
        # One job all the way through first: the worker is idle during the outage.
        assert post(server.client, "workflow_run", failed_run()).status_code == 202
        server.wait(lambda: server.jobs_done() == 1, "the first job")
        yield server
    finally:
        server.stop()


def fill(folder: Path) -> Path:
    """Fill `folder`'s filesystem to the last byte; the file that did it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (1 << 20, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as error:
                assert error.errno == 28, error  # ENOSPC
    finally:
        os.close(fd)
    return filler


def test_full_disk_gives_503_then_200_and_no_crash(served: Served) -> None:
    filler = fill(served.data)

    health = served.health()
    assert health.status_code == 503, health.text
    body = health.json()
    assert body["ok"] is False
    assert body["database"].startswith("full: SQLITE_FULL: database or disk is full"), body
    assert body["queue"].startswith("full: SQLITE_FULL: database or disk is full"), body
    assert str(served.inside) not in health.text  # the file's name at most, no directory

    refused = [post(served.client, "workflow_run", failed_run()) for _ in range(3)]
    assert [r.status_code for r in refused] == [503] * 3, [r.text for r in refused]
    assert {r.json()["outcome"] for r in refused} == {"unavailable"}
    time.sleep(0.5)  # the worker keeps looking at its queue meanwhile
    assert served.process.poll() is None

    filler.unlink()
    served.wait(lambda: served.health().status_code == 200, "health once space is back")
    assert post(served.client, "workflow_run", failed_run()).status_code == 202
    served.wait(lambda: served.jobs_done() == 2, "the job after the outage")

    stderr = served.stop()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.count("answered 503, database unavailable: SQLITE_FULL") == 3, stderr[-3000:]


def test_unwritable_wal_gives_503_then_200(served: Served) -> None:
    # RLIMIT_FSIZE set on the running server: a write past 1 KiB in any file fails (EFBIG),
    # so every frame written to a WAL does (each is 4 KiB), with the disk far from full. A
    # filesystem remounted read-only would be the same, but Linux refuses to remount one
    # with files open for writing.
    served.limit_file_size(1024)
    health = served.health()
    assert health.status_code == 503, health.text
    assert health.json()["database"].startswith("unwritable: SQLITE_IOERR"), health.text
    assert health.json()["queue"].startswith("unwritable: SQLITE_IOERR"), health.text
    response = post(served.client, "workflow_run", failed_run())
    assert response.status_code == 503 and response.json()["outcome"] == "unavailable"

    served.limit_file_size(None)
    served.wait(lambda: served.health().status_code == 200, "health once writable again")
    assert post(served.client, "workflow_run", failed_run()).status_code == 202
    stderr = served.stop()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.count("answered 503, database unavailable: SQLITE_IOERR") == 1, stderr[-3000:]


# -- SIGBUS: a full disk that cannot back SQLite's wal-index ---------------------------------

GROW_WAL_ON_FULL_DISK = textwrap.dedent(
    """
    import os, sqlite3, sys
    from pathlib import Path

    folder, leave, how = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    db = folder / "t.db"
    if how == "store":  # the bot's connection (store_sqlite.py)
        from triage_bot.store.store import Store
        conn = Store(f"sqlite:///{db}").engine.raw_connection().dbapi_connection
    else:  # SQLite as it comes
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x BLOB)")
    # 4,062 frames fill the wal-index's first 32 KiB region; stop just short of it.
    while os.path.getsize(f"{db}-wal") < 32 + 4055 * (4096 + 24):
        conn.execute("INSERT INTO t VALUES (zeroblob(3000))")
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    while os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize > leave:
        os.write(fd, b"x" * 1024)
    try:
        for _ in range(40):  # into the second region: SQLite maps 32 KiB more of the -shm
            conn.execute("INSERT INTO t VALUES (zeroblob(3000))")
    except sqlite3.OperationalError as error:
        print("error:", error)
    """
)


def _grow_wal_on_full_disk(
    tmp_path: Path, how: str, leave: int
) -> subprocess.CompletedProcess[str]:
    """Run the script above on a fresh 40 MiB ext4 with 1 KiB blocks, in its own namespace."""
    image, mountpoint = tmp_path / f"{how}-{leave}.img", tmp_path / f"{how}-{leave}"
    mountpoint.mkdir()
    subprocess.run(["truncate", "-s", "40M", image], check=True)
    mkfs = ["mkfs.ext4", "-q", "-F", "-m", "0", "-b", "1024", "-O", "^has_journal", str(image)]
    subprocess.run(mkfs, check=True)
    script = 'mount -o loop "$1" "$2" && shift 2 && exec "$@"'
    command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"]
    command += [str(image), str(mountpoint), sys.executable, "-c", GROW_WAL_ON_FULL_DISK]
    command += [str(mountpoint), str(leave), how]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


def test_a_full_disk_under_the_wal_index_is_an_error_not_sigbus(tmp_path: Path) -> None:
    refused = _private_mounts_refused(tmp_path)
    if refused or shutil.which("mkfs.ext4") is None:
        pytest.skip(refused or "mkfs.ext4 is not installed")
    # SQLite as it comes: 8 KiB of its one-byte-per-page growth of the -shm fit, the rest of
    # the new region does not, and the first write there is a SIGBUS. Measured: with 35 to
    # 47 KB left for plain SQLite, 48 to 56 KB for the bot's connection without the -shm
    # allocated ahead (its schema moves the window); below that SQLite fails cleanly.
    leaves = (40_000, 48_000, 56_000)
    plain = [_grow_wal_on_full_disk(tmp_path, "plain", leave) for leave in leaves[:2]]
    if any("mount" in run.stderr for run in plain):
        pytest.skip(f"no loop device here: {plain[0].stderr.strip()}")
    codes = [run.returncode for run in plain]
    assert set(codes) <= {0, -signal.SIGBUS}, [run.stderr[-2000:] for run in plain]
    if -signal.SIGBUS not in codes:
        pytest.skip("plain SQLite raised no SIGBUS on this kernel: nothing to contrast")
    for leave in leaves:
        bot = _grow_wal_on_full_disk(tmp_path, "store", leave)
        assert bot.returncode == 0, (leave, bot.returncode, bot.stderr[-2000:])
        assert "error: database or disk is full" in bot.stdout, (leave, bot.stdout)


# -- the other storages --------------------------------------------------------------------


def _app_client(store: Store, queue: JobQueue, folder: Path) -> TestClient:
    settings = load_settings({"WEBHOOK_SECRET": SECRET, "TRIAGE_DATA_DIR": str(folder)})
    return TestClient(create_app(settings, store, queue), raise_server_exceptions=False)


def _own_redis(port: int) -> subprocess.Popen[bytes]:
    """A Redis of this test's own (it is stopped mid-test), on `port`."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("Redis is not installed: apt-get install redis-server", pytrace=False)
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    deadline = time.monotonic() + 20
    while True:
        try:
            if client.ping():
                break
        except redis.ConnectionError:
            assert time.monotonic() < deadline and process.poll() is None, "redis did not start"
            time.sleep(0.05)
    client.close()
    return process


def test_stopped_redis_gives_503_naming_the_queue_then_200(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    server = _own_redis(port)
    store = Store(f"sqlite:///{tmp_path / 'triage.db'}")
    queue = JobQueue(redis_huey(f"redis://127.0.0.1:{port}/0"), store)
    client = _app_client(store, queue, tmp_path)
    try:
        assert client.get("/healthz").status_code == 200
        server.terminate()
        server.wait(10)
        health = client.get("/healthz")
        assert health.status_code == 503
        assert health.json()["database"] == "ok"
        assert health.json()["queue"].startswith("unreachable: ConnectionError: Error 111"), (
            health.text
        )
        # The delivery is recorded with its job: the sweep pushes it once Redis is back.
        accepted = post(client, "workflow_run", failed_run())
        assert accepted.status_code == 202 and store.jobs.counts()["queued"] == 1
        [told] = [r for r in caplog.records if "not pushed" in r.getMessage()]
        assert "queue unavailable: ConnectionError" in told.getMessage()
        assert told.exc_info is None  # one line, no traceback
        server = _own_redis(port)
        assert client.get("/healthz").status_code == 200
    finally:
        server.terminate()
        server.wait(10)
        store.close()


def test_read_only_postgresql_gives_503_then_200(tmp_path: Path) -> None:
    url = create_database(start_postgres())
    store = Store(url)
    queue = JobQueue(huey_for_url(f"sqlite:///{tmp_path / 'queue.db'}"), store)
    client = _app_client(store, queue, tmp_path)
    name = make_url(url).database
    admin = psycopg.connect(start_postgres().replace("+psycopg", ""), autocommit=True)
    try:
        assert client.get("/healthz").status_code == 200  # a ping would pass read-only too
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        store.engine.dispose()  # new sessions take the setting
        health = client.get("/healthz")
        assert health.status_code == 503
        assert health.json()["database"].startswith(
            "unwritable: ReadOnlySqlTransaction: cannot execute INSERT in a read-only"
        ), health.text
        assert health.json()["queue"] == "ok"
        assert post(client, "workflow_run", failed_run()).status_code == 503
        admin.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        store.engine.dispose()
        assert client.get("/healthz").status_code == 200
    finally:
        admin.close()
        store.close()
        drop_database(url)


def test_a_locked_sqlite_database_is_reported_within_the_timeout(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'triage.db'}")
    queue = JobQueue(huey_for_url(f"sqlite:///{tmp_path / 'queue.db'}"), store)
    client = _app_client(store, queue, tmp_path)
    holder = sqlite3.connect(tmp_path / "triage.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer that does not let go
        started = time.monotonic()
        health = client.get("/healthz")
        took = time.monotonic() - started
        assert health.status_code == 503 and took < HEALTH_TIMEOUT, (took, health.text)
        assert health.json()["database"] == "failed: SQLITE_BUSY: database is locked"
        holder.execute("ROLLBACK")
        assert client.get("/healthz").status_code == 200
    finally:
        holder.close()
        store.close()


def test_storage_errors_are_told_in_one_line_without_sql_or_directories(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'triage.db'}")
    secret = "s3cr3t-" + "x" * 20
    with pytest.raises(DBAPIError) as raised, store.engine.begin() as conn:
        conn.exec_driver_sql(f"ATTACH DATABASE '{tmp_path}/nowhere/other.db' AS other")
    store.close()
    wrapped = raised.value
    assert storage_failure(wrapped) and verdict(wrapped) == "failed"
    assert describe(wrapped) == "SQLITE_CANTOPEN: unable to open database: other.db"
    # What SQLAlchemy's own text would have put in the log: the SQL and its parameters.
    assert "ATTACH" in str(wrapped) and "ATTACH" not in describe(wrapped)
    refused = redis.ConnectionError(f"Error 111 connecting to redis://u:{secret}@h:1/0.")
    assert verdict(refused) == "unreachable" and secret not in describe(refused)


def test_a_queue_that_hangs_is_answered_within_the_timeout(tmp_path: Path) -> None:
    # A "Redis" that accepts connections and never answers: the SET waits for the client's
    # 5 s socket timeout, /healthz does not.
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    store = Store(f"sqlite:///{tmp_path / 'triage.db'}")
    client = _app_client(
        store, JobQueue(redis_huey(f"redis://127.0.0.1:{port}/0"), store), tmp_path
    )
    try:
        started = time.monotonic()
        first = client.get("/healthz")
        took = time.monotonic() - started
        assert first.status_code == 503 and HEALTH_TIMEOUT <= took < HEALTH_TIMEOUT + 1.5, took
        assert first.json()["queue"] == f"timed out: no answer within {HEALTH_TIMEOUT:g}s"
        assert first.json()["database"] == "ok"
        # Still stuck: not started again (no pile of threads), and said at once.
        started = time.monotonic()
        again = client.get("/healthz").json()["queue"]
        assert again.startswith("timed out: the previous check is still running"), again
        assert time.monotonic() - started < 1
    finally:
        silent.close()
        store.close()
