"""Benchmark: the dashboard's page of the busiest repository on 100,000 recorded jobs.

Seeds a database (a fresh SQLite file; with --postgres also a throw-away PostgreSQL cluster
on loopback, started by tests/services.py; or --database-url) through the store's own API
(Store.outcomes.record) with bench/report.py's runs spread over 90 days: three repositories
(half the runs are the busiest's), their passing and failing jobs, failures explained by real
catalog signatures with `group_by` captures or unexplained with a normalised best line drawn
from a dozen templates of real CI failures, and failures that passed on a re-run of the same
commit (likely flaky). Then renders the busiest repository's page (render_dashboard, the last
30 days) once to warm up (the built-in catalog is read once a process) and `--repeat` times
more, and prints the median wall and CPU (time.process_time: steadier on a shared machine)
seconds, and the index page's.

Usage: python bench/dashboard.py [--jobs 100000] [--repeat 5] [--postgres] [--database-url URL]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.report import DAYS as RUN_DAYS
from bench.report import _Seeder
from triage_bot.service.dashboard_page import render_dashboard, render_index
from triage_bot.store.job_outcomes import JobOutcome
from triage_bot.store.store import Store

DAYS = 90  # the history kept by default (TRIAGE_HISTORY_DAYS)
# The share of runs each repository has: the first is the busiest, whose page is timed.
REPO_SHARES = (("acme/api", 0.5), ("acme/web", 0.3), ("acme/infra", 0.2))
_RECORD_BATCH = 10_000


def seed(store: Store, jobs: int, *, now: datetime, seed_value: int = 14) -> list[JobOutcome]:
    """Record about `jobs` job outcomes over the last DAYS days in `store`; the outcomes.

    bench/report.py's seeder lays a run in the RUN_DAYS (30) days before its `now`, evenly:
    moving its `now` back by 0, RUN_DAYS, 2 * RUN_DAYS ... days, one of them at random before
    each run, spreads the runs as evenly over DAYS."""
    seeder = _Seeder(random.Random(seed_value), now)
    names = [name for name, _ in REPO_SHARES]
    weights = [share for _, share in REPO_SHARES]
    blocks = range(0, DAYS, RUN_DAYS)
    outcomes: list[JobOutcome] = []
    while len(outcomes) < jobs:
        seeder.now = now - timedelta(days=seeder.rng.choice(blocks))
        outcomes += seeder.run(seeder.rng.choices(names, weights)[0])
    for start in range(0, len(outcomes), _RECORD_BATCH):
        store.outcomes.record(outcomes[start : start + _RECORD_BATCH])
    return outcomes


def measure(render: Callable[[], str], repeat: int) -> tuple[float, float, float]:
    """The first call's wall seconds, then the median wall and CPU seconds of `repeat` more."""
    start = time.perf_counter()
    render()
    first = time.perf_counter() - start
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        render()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return first, statistics.median(walls), statistics.median(cpus)


def bench(url: str, jobs: int, repeat: int, html: Path | None = None) -> None:
    now = datetime.now(UTC)
    store = Store(url)
    try:
        started = time.perf_counter()
        outcomes = seed(store, jobs, now=now)
        took = time.perf_counter() - started
        busiest = REPO_SHARES[0][0]
        print(
            f"{url.split(':', 1)[0]}: seeded {len(outcomes)} job outcomes over {DAYS} days in "
            f"{took:.0f} s ({sum(o.repo == busiest for o in outcomes)} of {busiest})"
        )
        repos = [name for name, _ in REPO_SHARES]
        page = measure(lambda: render_dashboard(store.engine, busiest, now), repeat)
        index = measure(lambda: render_index(store.engine, repos, now), repeat)
        for name, (first, wall, cpu) in (("render_dashboard", page), ("render_index", index)):
            print(
                f"  {name}: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU "
                f"(median of {repeat}; first call {first * 1000:.0f} ms)"
            )
        if html is not None:  # to look at the page as a user would (a browser, not a test)
            html.write_text(render_dashboard(store.engine, busiest, now), encoding="utf-8")
            print(f"  the busiest repository's page: {html}")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database-url", help="default: a new SQLite file")
    parser.add_argument(
        "--postgres", action="store_true", help="also a PostgreSQL started by tests/services.py"
    )
    parser.add_argument("--html", type=Path, help="also write the busiest repository's page here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{folder}/triage.db"
        bench(url, args.jobs, args.repeat, args.html)
    if args.postgres and not args.database_url:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from services import create_database, drop_database, start_postgres

        url = create_database(start_postgres())
        try:
            bench(url, args.jobs, args.repeat)
        finally:
            drop_database(url)


if __name__ == "__main__":
    main()
