"""Benchmark: what comparing with a passing log adds to the triage of a large job log.

Writes a pair of synthetic GitHub Actions job logs with bench/classify.py's generator (the
same kinds of lines, other random draws: the passing one has its own timestamps, numbers and
failure lines), with a share of lines unique to each: an error-like retry line whose id
counts up: best-guess lines, which the comparison looks up in the passing log (whose own
such lines hold the same words but for the id: each is found by the scan and checked). Then
times, as new processes, on the same files and in the same run:

- `triage-bot triage FAIL --format json` (triage alone);
- `triage-bot triage FAIL --compare PASS --format json` (the failing log classified, then
  the passing one scanned for the lines the classifier asks about);

and prints wall and CPU seconds (CPU: the child's user + system time, steadier on a shared
machine), peak memory (the child's ru_maxrss), and the ratios of the comparison to triage
alone.

`--pairs FOLDER` measures real logs instead: for each failing log of FOLDER/index.json that
has a `passing` log (bench/accuracy.py's format; bench/pairs_index.py writes one), the CPU
time in this process of classifying it alone, and of classifying it compared with its
passing log (as the CLI does: PassingFile), summed over the pairs (the best of --repeat runs each).

Usage: python bench/compare.py [--size-mb 1024] [--repeat 3] [--unique-percent 10]
       python bench/compare.py --pairs FOLDER [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.classify import MIB, write_log  # noqa: E402
from triage_bot.core.catalog import load_catalog  # noqa: E402
from triage_bot.core.classify import CompiledCatalog, JobClassifier, classify  # noqa: E402
from triage_bot.core.compare import PassingFile  # noqa: E402


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


def measure_pairs(folder: Path, repeat: int) -> int:
    """The --pairs mode (see the module doc)."""
    catalog = CompiledCatalog(load_catalog())
    _ = catalog.prefilter  # built once, outside the timings
    rows = json.loads((folder / "index.json").read_text(encoding="utf-8"))["logs"]
    pairs = [(folder / r["file"], folder / r["passing"]) for r in rows if r.get("passing")]
    alone_s = compared_s = 0.0
    size = 0
    for failing_path, passing_path in pairs:
        failing, passing = read_log(failing_path), read_log(passing_path)
        size += len(failing) + len(passing)
        alone_s += best_cpu(partial(classify, [failing], catalog), repeat)
        compared_s += best_cpu(partial(triage_compared, catalog, failing, passing), repeat)
    print(f"{len(pairs)} real pairs, {size / MIB:.1f} MiB, CPU s, best of {repeat}")
    print(f"{'triage alone':26} {alone_s:8.2f}")
    print(f"{'triage compared':26} {compared_s:8.2f}")
    print(f"{'compared / alone':26} {compared_s / alone_s:7.2f}x")
    return 0


def triage_compared(catalog: CompiledCatalog, failing: bytes, passing: bytes) -> None:
    job = JobClassifier(catalog, "job", passing=PassingFile(lambda: [passing]))
    job.feed(failing)
    job.finish()


def read_log(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def best_cpu(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return min(times)


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
    parser.add_argument("--pairs", type=Path, help="measure the real pairs of this folder")
    args = parser.parse_args()
    if args.pairs is not None:
        return measure_pairs(args.pairs, args.repeat)
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
