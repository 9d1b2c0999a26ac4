"""Benchmark: the GitHub App as a service, on loopback, against the fake GitHub (tests/).

Prints, in one run on one machine:

- webhook acknowledgements: N signed `workflow_run` failures sent at a target rate by a small
  thread pool over keep-alive connections to `triage-bot serve --no-worker`; the achieved
  rate and the p50/p99/max latency from sending to the 202 (each delivery is one database
  transaction and one queue push). Embedded (SQLite) and scaled out (PostgreSQL + Redis).
- end to end: one run of J failed jobs with M MB logs each, from sending its webhook to the
  comment appearing on the fake GitHub; embedded (`serve` with its worker) and scaled out
  (PostgreSQL + Redis, `serve --no-worker` and two `triage-bot worker`), each after one small
  warm-up triage (the first triage of a process compiles the catalog in its threads), with
  the CPU time the bot's processes spent on each run (steadier than wall time when the machine
  is shared).
- beside it, the time to only download the same J logs from the fake GitHub with httpx (the
  token exchange excluded), one at a time and 4 at a time (the pipeline downloads 4 at once).

Usage: python bench/service.py [--deliveries 2000] [--rate 200] [--jobs 20] [--log-mb 10]
       [--repeat 3] [--no-scaled]. Exit status 0 unless something failed; the figures are not
       judged.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import hmac
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fakegithub import FakeGitHub, NewJob  # noqa: E402
from fakegithub.models import PullRequest, Repo, WorkflowRun  # noqa: E402
from services import (  # noqa: E402
    create_database,
    drop_database,
    free_port,
    start_postgres,
    start_redis,
)

PAYLOAD = ROOT / "tests/github_data/webhooks/workflow_run/completed.with-pull-requests.payload.json"
REPO = "octo-org/octo-repo"
WEBHOOK = "/api/github/webhooks"
DOWNLOAD_CONCURRENCY = 4  # as triage_bot.triage.run.LOG_CONCURRENCY
TIMEOUT = 300.0


# ---- the bot's processes ---------------------------------------------------------------------


class Bot:
    """`triage-bot` processes sharing one configuration; killed on exit."""

    def __init__(self, fake: FakeGitHub, folder: Path, extra: dict[str, str]) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS", "DATABASE"))}
        self.env = {
            **keep,
            "WEBHOOK_SECRET": fake.webhook_secret,
            "APP_ID": str(fake.app_id),
            "PRIVATE_KEY": fake.private_key_pem,
            "GITHUB_API_URL": fake.base_url,
            "TRIAGE_DATA_DIR": str(folder),
            "PORT": str(self.port),
            "LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(ROOT),
            **extra,
        }
        self.processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self, *args: str) -> None:
        out = (self.folder / f"{args[0]}-{len(self.processes)}.log").open("wb")
        command = [sys.executable, "-m", "triage_bot", *args]
        process = subprocess.Popen(command, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        self.processes.append((process, out))

    def wait_healthy(self) -> None:
        wait_for(self._healthy, 60, "the server to answer /healthz")

    def _healthy(self) -> bool:
        for process, out in self.processes:
            if process.poll() is not None:  # its log goes with the folder: say what it said
                said = Path(out.name).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{process.args!r} exited {process.returncode}:\n{said}")
        try:
            return httpx.get(self.url + "/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the bot's processes have used so far; a steadier figure
        than wall time on a shared machine. Linux's /proc; 0 where there is none."""
        total = 0
        for process, _ in self.processes:
            try:
                stat = Path(f"/proc/{process.pid}/stat").read_text()
            except OSError:
                return 0.0
            fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
            total += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14 and 15)
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        for process, _ in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process, out in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            out.close()


@contextmanager
def running(fake: FakeGitHub, folder: Path, mode: str, *commands: list[str]) -> Iterator[Bot]:
    extra, database = {}, ""
    if mode == "scaled":
        database = create_database(start_postgres())
        extra = {"DATABASE_URL": database, "REDIS_URL": start_redis()}
    folder.mkdir(parents=True, exist_ok=True)
    bot = Bot(fake, folder, extra)
    try:
        for command in commands:
            bot.start(*command)
        bot.wait_healthy()
        yield bot
    finally:
        bot.stop()
        if database:
            drop_database(database)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.005)


# ---- webhooks --------------------------------------------------------------------------------


class Webhooks:
    def __init__(self, fake: FakeGitHub, repo: Repo, installation_id: int) -> None:
        self.secret = fake.webhook_secret.encode()
        self.repo, self.installation_id = repo, installation_id
        self.example = json.loads(PAYLOAD.read_text())

    def payload(self, run_id: int, head_sha: str, pull: int, branch: str) -> dict[str, Any]:
        payload: dict[str, Any] = copy.deepcopy(self.example)
        payload["repository"].update(id=self.repo.id, full_name=REPO)
        payload["installation"] = {"id": self.installation_id}
        wrun = payload["workflow_run"]
        wrun.update(id=run_id, head_sha=head_sha, head_branch=branch, conclusion="failure")
        [pr] = wrun["pull_requests"]
        pr["number"] = pull
        pr["head"].update(sha=head_sha, ref=branch)
        pr["base"]["repo"]["id"] = pr["head"]["repo"]["id"] = self.repo.id
        return payload

    def for_run(self, run: WorkflowRun, pull: PullRequest) -> dict[str, Any]:
        return self.payload(run.id, run.head_sha, pull.number, pull.head_ref)

    def signed(self, payload: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
        body = json.dumps(payload).encode()
        digest = hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        return body, {
            "X-GitHub-Event": "workflow_run",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={digest}",
            "Content-Type": "application/json",
        }


def ack_bench(bot: Bot, hooks: Webhooks, total: int, rate: float, threads: int) -> str:
    """Send `total` deliveries at `rate`/s from `threads` threads; the figures as a line."""
    # Signed beforehand, so the load generator's own work does not slow the sending.
    prepared = [hooks.signed(hooks.payload(10**9 + i, "a" * 40, 1, "b")) for i in range(total)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    next_index = iter(range(total))
    start = time.perf_counter() + 0.2

    def sender() -> None:
        # http.client, not httpx: on two cores the load generator competes with the server
        # for the CPU, and httpx costs several times more CPU per request.
        connection = http.client.HTTPConnection("127.0.0.1", bot.port, timeout=10)
        try:
            for index in _locked(next_index, lock):
                due = start + index / rate
                if due > time.perf_counter():
                    time.sleep(due - time.perf_counter())
                body, headers = prepared[index]
                sent = time.perf_counter()
                connection.request("POST", WEBHOOK, body=body, headers=headers)
                answer = connection.getresponse()
                text = answer.read()
                took = time.perf_counter() - sent
                with lock:
                    latencies.append(took)
                    if answer.status != 202:
                        errors.append(f"{answer.status} {text[:200]!r}")
        finally:
            connection.close()

    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(sender) for _ in range(threads)]:
            future.result()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} deliveries not acknowledged, e.g. {errors[0]}")
    ordered = sorted(latencies)
    p50, p99 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99) - 1]
    return (
        f"{total} deliveries, target {rate:.0f}/s, achieved {total / elapsed:.0f}/s; "
        f"latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"
        f", mean {statistics.fmean(ordered) * 1000:.1f} ms"
    )


def _locked(items: Iterator[int], lock: threading.Lock) -> Iterator[int]:
    while True:
        with lock:
            item = next(items, None)
        if item is None:
            return
        yield item


# ---- the 20-job run --------------------------------------------------------------------------


def big_log(megabytes: float) -> bytes:
    """A job log of about `megabytes` MB: steps, passing tests, then a real failure."""
    head = [
        "2026-10-21T09:00:00.0000001Z ##[group]Run actions/checkout@v4",
        "2026-10-21T09:00:00.1000001Z Syncing repository: octo-org/octo-repo",
        "2026-10-21T09:00:00.2000001Z ##[endgroup]",
        "2026-10-21T09:00:01.0000001Z ##[group]Run pytest -q",
    ]
    line = "2026-10-21T09:00:02.{n:07d}Z tests/test_module_{m}.py::test_case_{n} PASSED [ 45%]\n"
    body, size, n = [], 0, 0
    target = int(megabytes * 1_000_000)
    while size < target:
        text = line.format(n=n % 10_000_000, m=n % 97)
        body.append(text)
        size += len(text)
        n += 1
    tail = [
        "2026-10-21T09:10:00.0000001Z Traceback (most recent call last):",
        '2026-10-21T09:10:00.0000002Z   File "/app/server.py", line 44, in <module>',
        "2026-10-21T09:10:00.0000003Z     from aiter.ops.triton.attention import mla_decode",
        "2026-10-21T09:10:00.0000004Z ModuleNotFoundError: No module named "
        "'aiter.ops.triton.attention.mla_decode'",
        "2026-10-21T09:10:00.1000001Z ##[error]Process completed with exit code 1.",
    ]
    return ("\n".join(head) + "\n" + "".join(body) + "\n".join(tail) + "\n").encode()


class World:
    """The fake GitHub's repository, installation, and runs made for the benchmark."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        self.repo = fake.state.add_repo(REPO)
        self.installation = fake.install("octo-org")
        self.hooks = Webhooks(fake, self.repo, self.installation.id)
        self._branches = iter(range(1, 1000))

    def failed_run(self, jobs: int, log: bytes) -> tuple[PullRequest, WorkflowRun]:
        state = self.fake.state
        pull = state.add_pull_request(self.repo, head_ref=f"bench-{next(self._branches)}")
        specs = [NewJob(f"test ({i})", log=log) for i in range(jobs)]
        return pull, state.add_run(self.repo, pull=pull, jobs=specs)

    def comment_time(self, bot: Bot, jobs: int, log: bytes) -> float:
        """Seconds from sending the run's webhook to its comment being on the fake."""
        pull, run = self.failed_run(jobs, log)
        body, headers = self.hooks.signed(self.hooks.for_run(run, pull))
        started = time.perf_counter()
        answer = httpx.post(bot.url + WEBHOOK, content=body, headers=headers, timeout=10)
        if answer.status_code != 202:
            raise RuntimeError(f"webhook refused: {answer.status_code} {answer.text[:200]}")
        wait_for(
            lambda: bool(self.fake.state.comments_on(self.repo, pull.number)),
            TIMEOUT,
            "the comment",
        )
        took = time.perf_counter() - started
        [comment] = self.fake.state.comments_on(self.repo, pull.number)
        if f"**{jobs} failed job" not in comment.body:
            raise RuntimeError(f"unexpected comment:\n{comment.body[:2000]}")
        return took

    def download_time(self, jobs: int, log: bytes, concurrency: int) -> float:
        """Seconds to only download a fresh run's logs, `concurrency` at a time.

        In a child process, like the bot: in this one the downloads would fight the fake
        GitHub's server threads for the GIL and look slower than they are.
        """
        _, run = self.failed_run(jobs, log)
        ids = [str(job.id) for job in self.fake.state.jobs_of(run) if job.conclusion == "failure"]
        token = self.fake.token_for(self.installation)
        command = [sys.executable, __file__, "--download", self.fake.base_url, token]
        done = subprocess.run(
            [*command, str(concurrency), *ids], capture_output=True, text=True, timeout=TIMEOUT
        )
        if done.returncode != 0:
            raise RuntimeError(f"download failed: {done.stderr[-2000:]}")
        took, size = done.stdout.split()
        if int(size) != len(ids) * len(log):
            raise RuntimeError(f"downloaded {size} bytes, expected {len(ids) * len(log)}")
        return float(took)


def download(base_url: str, token: str, concurrency: int, ids: list[int]) -> None:
    """The child process of download_time: print seconds and bytes."""
    headers = {"Authorization": f"token {token}", "Accept": "application/vnd.github+json"}

    def fetch(job_id: int, client: httpx.Client, blobs: httpx.Client) -> int:
        # Like the bot: the API's 302, then the log host without the token.
        located = client.get(f"/repos/{REPO}/actions/jobs/{job_id}/logs", headers=headers)
        size = 0
        with blobs.stream("GET", located.headers["location"]) as response:
            for chunk in response.iter_bytes():
                size += len(chunk)
        return size

    started = time.perf_counter()
    with (
        httpx.Client(base_url=base_url, timeout=60) as client,
        httpx.Client(timeout=60) as blobs,
        ThreadPoolExecutor(concurrency) as pool,
    ):
        sizes = list(pool.map(lambda job_id: fetch(job_id, client, blobs), ids))
    print(f"{time.perf_counter() - started:.4f} {sum(sizes)}")


def server_side(bot: Bot) -> str:
    """The server's own acknowledgement times, from its /metrics histogram."""
    text = httpx.get(bot.url + "/metrics", timeout=10).text
    buckets = {}
    for line in text.splitlines():
        if line.startswith("triage_bot_webhook_seconds_bucket"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets[bound] = float(line.rsplit(" ", 1)[1])
    total = buckets.get("+Inf", 0.0) or 1.0
    shares = [
        f"{buckets[b] / total:.1%} <= {float(b) * 1000:g} ms" for b in ("0.005", "0.01", "0.02")
    ]
    return "server-side: " + ", ".join(shares)


# ---- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--log-mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of each measurement")
    parser.add_argument("--no-scaled", action="store_true", help="embedded only (no PG/Redis)")
    parser.add_argument("--download", nargs="+", help=argparse.SUPPRESS)  # the child's part
    args = parser.parse_args(argv)
    if args.download:
        base_url, token, concurrency, *ids = args.download
        download(base_url, token, int(concurrency), [int(i) for i in ids])
        return 0
    modes = ["embedded"] if args.no_scaled else ["embedded", "scaled"]
    try:
        with tempfile.TemporaryDirectory(prefix="triage-bench-") as tmp, FakeGitHub() as fake:
            run(fake, Path(tmp), args, modes)
    except BaseException as error:  # pytest.fail (services.py) raises a BaseException
        if isinstance(error, KeyboardInterrupt):
            raise
        print(f"bench/service.py: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


def run(fake: FakeGitHub, folder: Path, args: argparse.Namespace, modes: list[str]) -> None:
    world = World(fake)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    for mode in modes:
        with running(fake, folder / f"acks-{mode}", mode, ["serve", "--no-worker"]) as bot:
            for _ in range(args.repeat):
                line = ack_bench(bot, world.hooks, args.deliveries, args.rate, args.threads)
                print(f"acks {mode:8}: {line}")
            print(f"               {server_side(bot)} (all {args.repeat} rounds)")

    log = big_log(args.log_mb)
    size = args.jobs * len(log) / 1e6
    print(
        f"run of {args.jobs} failed jobs x {len(log) / 1e6:.1f} MB logs ({size:.0f} MB), "
        f"median of {args.repeat} (min-max)"
    )
    bare: dict[int, list[float]] = {1: [], DOWNLOAD_CONCURRENCY: []}
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits both
        for n, times in bare.items():
            times.append(world.download_time(args.jobs, log, n))
    for n, times in bare.items():
        took = statistics.median(times)
        print(f"  download only, {n} at a time: {_spread(times)} ({size / took:6.0f} MB/s)")
    layouts = {
        "embedded": [["serve", "--lease", "120"]],
        "scaled": [["serve", "--no-worker"], *[["worker", "--lease", "120"]] * 2],
    }
    small = big_log(0.01)
    reference = statistics.median(bare[DOWNLOAD_CONCURRENCY])
    for mode in modes:
        with running(fake, folder / f"e2e-{mode}", mode, *layouts[mode]) as bot:
            for _ in range(2):  # warm-up: token, catalog, connections (both workers when scaled)
                world.comment_time(bot, 2, small)
            times, cpu = [], []
            for _ in range(args.repeat):
                before = bot.cpu_seconds()
                times.append(world.comment_time(bot, args.jobs, log))
                cpu.append(bot.cpu_seconds() - before)
        took = statistics.median(times)
        ratios = [t / reference for t in times]
        print(
            f"  webhook -> comment, {mode:8}: {_spread(times)} ({size / took:6.0f} MB/s), "
            f"{took / reference:.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) the "
            f"{DOWNLOAD_CONCURRENCY}-at-a-time download, "
            f"{took / statistics.median(bare[1]):.2f}x the one-at-a-time download"
        )
        print(f"    CPU of the bot's processes per run, {mode:8}: {_spread(cpu)}")


def _spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):5.2f} s ({min(seconds):.2f}-{max(seconds):.2f})"


if __name__ == "__main__":
    sys.exit(main())
