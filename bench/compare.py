"""Benchmark: what comparing with a passing log adds to the triage of a large job log.

Writes a pair of synthetic GitHub Actions job logs with bench/classify.py's generator (the
same kinds of lines, other random draws: the passing one has its own timestamps, numbers and
failure lines), with a share of lines unique to each: an error-like retry line whose id
counts up. The passing log keeps the lines holding a trigger or an error word, so these are
kept and normalised (the worst case), and a 1 GiB passing log holds more distinct kept lines
than PassingLog keeps (1 Mi): its bound is exercised. Then times, as new processes, on the
same files and in the same run:

- `triage-bot triage FAIL --format json` (triage alone);
- `triage-bot triage FAIL --compare PASS --format json` (the passing log read first, then
  the failing one classified against it);

and prints wall and CPU seconds (CPU: the child's user + system time, steadier on a shared
machine), peak memory (the child's ru_maxrss), and the ratios of the comparison to triage
alone. Usage: python bench/compare.py [--size-mb 1024] [--repeat 3] [--unique-percent 10]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.classify import MIB, write_log  # noqa: E402


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    peak_bytes: int


def add_unique_lines(path: Path, percent: float, seed: int) -> None:
    """Rewrite `path` with `percent` of its lines replaced by an error-like line no other run
    prints (an id that counts up), keeping its size about the same."""
    rng = random.Random(seed)
    counter = 0
    staged = path.with_suffix(".tmp")
    with path.open("rb") as source, staged.open("wb") as out:
        for line in source:
            if rng.random() * 100 < percent:
                counter += 1
                stamp = line[: line.find(b" ") + 1]
                text = f"WARNING: request {seed}-{counter} failed: connection error, retrying\n"
                line = stamp + text.encode()
            out.write(line)
    staged.replace(path)


def run(command: list[str]) -> tuple[Measured, bytes]:
    started = time.perf_counter()
    with tempfile.TemporaryFile() as stdout:
        process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            error = process.stderr.read().decode() if process.stderr else ""
            raise SystemExit(f"{' '.join(command)} failed: {error}")
        stdout.seek(0)
        output = stdout.read()
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(elapsed, cpu, usage.ru_maxrss * 1024), output


def median(runs: list[Measured]) -> Measured:
    return Measured(
        statistics.median(r.wall_s for r in runs),
        statistics.median(r.cpu_s for r in runs),
        max(r.peak_bytes for r in runs),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="each log's size in MiB (1024)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, median (3)")
    parser.add_argument(
        "--unique-percent",
        type=float,
        default=10.0,
        help="share of lines unique to each log, in percent (10)",
    )
    args = parser.parse_args()
    triage_bot = [sys.executable, "-m", "triage_bot", "triage", "--format", "json"]
    workdir = Path(tempfile.mkdtemp(prefix="triage-compare-bench-"))
    try:
        failing, passing = workdir / "fail.log", workdir / "pass.log"
        print(f"writing two {args.size_mb} MiB synthetic job logs ...", flush=True)
        for path, seed in ((failing, 7), (passing, 8)):
            write_log(path, args.size_mb * MIB, 2.0, seed=seed)
            add_unique_lines(path, args.unique_percent, seed)
        alone: list[Measured] = []
        compared: list[Measured] = []
        new_roots = 0
        for _ in range(args.repeat):
            measured, _ = run([*triage_bot, str(failing)])
            alone.append(measured)
            measured, output = run([*triage_bot, str(failing), "--compare", str(passing)])
            compared.append(measured)
            new_roots = output.count(b'"new": true')
        a, c = median(alone), median(compared)
        print(
            f"\nlogs: 2 x {failing.stat().st_size / MIB:.0f} MiB "
            f"({args.unique_percent:g}% of lines unique to each), median of {args.repeat}"
        )
        print(f"{'':26} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
        for name, m in (("triage alone", a), ("triage --compare", c)):
            print(f"{name:26} {m.wall_s:8.2f} {m.cpu_s:8.2f} {m.peak_bytes / 1e6:8.1f}")
        print(
            f"{'compare / alone':26} {c.wall_s / a.wall_s:7.2f}x {c.cpu_s / a.cpu_s:7.2f}x "
            f"{(c.peak_bytes - a.peak_bytes) / 1e6:+7.1f}"
        )
        print(f"\nlines reported as new with --compare: {new_roots}")
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
