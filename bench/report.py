"""Benchmark: `triage-bot report` on a seeded database of a few thousand recorded jobs.

Seeds a database (a fresh SQLite file, or --database-url) through the store's own API
(Store.outcomes.record) with `seed`: runs of several repositories over the last 30 days,
their passing and failing jobs, the failures explained by real catalog signatures (with
`group_by` captures that name a test, a crate, a module) or unexplained with a normalised
best line drawn from a dozen templates of real CI failures (numbers, names and paths
varying), and some failures that passed on a re-run of the same commit (likely flaky). Then
runs `triage-bot report` as a new process, once per format, and prints its wall and CPU
seconds (the child's user + system time: steadier on a shared machine).

Usage: python bench/report.py [--jobs 4000] [--repeat 3] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from triage_bot.core.compare import normalise
from triage_bot.store.job_outcomes import JobOutcome, line_key, signature_key
from triage_bot.store.store import Store

REPOS = ("acme/api", "acme/web", "acme/infra")
WORKFLOWS = ("CI", "Tests", "Lint")
JOBS = ("test", "build", "lint", "e2e", "docs")
DAYS = 30
FAILED_SHARE = 0.45
EXPLAINED_SHARE = 0.6
FLAKY_SHARE = 0.1  # of explained failures: passed on a re-run of the same commit

# Signatures of the built-in catalog and a capture of the kind their group_by takes.
SIGNATURES = (
    ("python-pytest-failed", "test", "tests/test_{w}.py::test_{v}"),
    ("python-module-not-found", "module", "{w}_utils"),
    ("node-cannot-find-module", "module", "./{w}/index"),
    ("node-npm-e404", "url", "https://registry.npmjs.org/@acme%2f{w}"),
    ("go-test-fail", "test", "Test{W}{v}"),
)
# Unexplained best lines, as jobs print them; {n}, {w}, {h} vary from job to job.
UNEXPLAINED = (
    "Error: connect ECONNREFUSED 127.0.0.1:{n}",
    "fatal: unable to access 'https://github.com/acme/{w}.git/': Could not resolve host",
    "java.lang.OutOfMemoryError: Java heap space in thread worker-{n}",
    "##[error]The runner has received a shutdown signal after {n} seconds.",
    "E   TimeoutError: waited {n} ms for selector #{w}-button to be visible",
    "Segmentation fault (core dumped) ./build/bin/{w}_test --shard={n}",
    "ERROR: Could not find a version that satisfies the requirement {w}=={n}.0.1",
    "docker: Error response from daemon: pull access denied for acme/{w}",
    "Killed signal terminated program cc1plus while compiling src/{w}/{w}_{n}.cc",
    "panic: runtime error: index out of range [{n}] with length {n} in {w}.go",
    "MemoryError: unable to allocate {n}.0 MiB for an array with shape ({n},)",
    "The job on runner GitHub Actions {n} has exceeded the maximum execution time",
)  # fmt: skip
WORDS = ("alpha", "billing", "cache", "delta", "orders", "parser", "queue", "search", "users")


@dataclass
class _Seeder:
    rng: random.Random
    now: datetime
    run_id: int = 1000
    job_id: int = 1

    def fill(self, template: str) -> str:
        word = self.rng.choice(WORDS)
        number = self.rng.randint(1, 65000)
        return template.format(w=word, W=word.title(), v=self.rng.randint(1, 40), n=number)

    def failure(self) -> dict[str, object]:
        if self.rng.random() < EXPLAINED_SHARE:
            signature, capture, template = self.rng.choice(SIGNATURES)
            value = self.fill(template)
            key = signature_key(signature, json.dumps([value]))
            return {"signature": signature, "captures": {capture: value}, "failure_key": key}
        return {"failure_key": line_key(normalise(self.fill(self.rng.choice(UNEXPLAINED))))}

    def job(
        self, repo: str, attempt: int, commit: str, pr: int | None, **fields: object
    ) -> JobOutcome:
        name = str(fields.pop("job_name"))
        self.job_id += 1
        return JobOutcome(
            repo=repo, run_id=self.run_id, run_attempt=attempt, job_id=self.job_id,
            workflow=str(fields.pop("workflow")), workflow_id=None, job_name=name,
            job_full_name=f"{name} (3.11)", commit_sha=commit, tree_sha=f"t{commit}",
            branch="main" if pr is None else f"pr-{pr}", pr_number=pr,
            url=f"https://github.com/{repo}/actions/runs/{self.run_id}/job/{self.job_id}",
            **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    def run(self, repo: str) -> list[JobOutcome]:
        """One run's jobs; a failure sometimes passes on a second attempt (flaky)."""
        self.run_id += 1
        commit = f"{self.rng.getrandbits(160):040x}"
        pr = self.rng.choice([None, *range(1, 200)])
        finished = self.now - timedelta(minutes=self.rng.randint(10, DAYS * 24 * 60 - 60))
        workflow = self.rng.choice(WORKFLOWS)
        jobs = []
        for name in self.rng.sample(JOBS, 3):
            common = {"workflow": workflow, "job_name": name}
            if self.rng.random() >= FAILED_SHARE:
                jobs.append(self.job(repo, 1, commit, pr, conclusion="success",
                                     finished_at=finished, **common))  # fmt: skip
                continue
            failure = self.failure()
            jobs.append(self.job(repo, 1, commit, pr, conclusion="failure",
                                 finished_at=finished, **common, **failure))  # fmt: skip
            if "signature" in failure and self.rng.random() < FLAKY_SHARE:
                later = finished + timedelta(minutes=20)
                jobs.append(self.job(repo, 2, commit, pr, conclusion="success",
                                     finished_at=later, **common))  # fmt: skip
        return jobs


def seed(
    store: Store, jobs: int, *, seed_value: int = 14, now: datetime | None = None
) -> list[JobOutcome]:
    """Record about `jobs` job outcomes in `store`; the outcomes written."""
    seeder = _Seeder(random.Random(seed_value), now or datetime.now(UTC))
    outcomes: list[JobOutcome] = []
    while len(outcomes) < jobs:
        outcomes += seeder.run(seeder.rng.choice(REPOS))
    store.outcomes.record(outcomes)
    return outcomes


def time_report(url: str, fmt: str, repeat: int) -> tuple[float, float]:
    """The best wall and CPU seconds of `triage-bot report --format fmt` over `repeat` runs."""
    command = [str(Path(sys.executable).with_name("triage-bot")), "report", "--format", fmt]
    env = os.environ | {"DATABASE_URL": url}
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", help="default: a new SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{folder}/triage.db"
        store = Store(url)
        written = len(seed(store, args.jobs))
        store.close()
        print(f"seeded {written} job outcomes in {url.split(':', 1)[0]}")
        for fmt in ("text", "json", "html"):
            wall, cpu = time_report(url, fmt, args.repeat)
            print(f"triage-bot report --format {fmt}: {wall:.2f} s wall, {cpu:.2f} s CPU "
                  f"(best of {args.repeat})")  # fmt: skip


if __name__ == "__main__":
    main()
