"""Benchmark: the whole `triage-bot triage` of a large job log against ripgrep, in one run.

Builds a realistic synthetic GitHub Actions job log (timestamps, ANSI colours, groups, the
output of pytest, cargo, npm, gcc, maven and go, with real failures sprinkled through it),
then times, on the same file and in the same run:

- reading the file alone in 1 MiB chunks (the floor);
- `triage-bot triage LOG --format json` as a new process, start-up included, with the full
  catalog, the log streamed in 1 MiB chunks, once per prefilter engine;
- `rg --no-unicode -c -f PATTERNS LOG` with the catalog's own patterns (Debian's ripgrep, or
  `--rg PATH`). When ripgrep cannot search the whole log (it aborts or passes `--rg-timeout`,
  as on the near-miss shape), it is timed on the log's first `--rg-prefix-mb` MiB and the
  ratio is of throughputs.

and prints MB/s, the ratio to ripgrep, our peak memory, whether every engine gave the
same JSON, and how many lines the prefilter passes on to a signature's regex (and whose).

Shapes of log (`--shape`, one or a comma-separated list, each its own table): `today`, the
log above; `near-miss`, what big jobs print (triage_bot/catalog_tools/near_miss.py): pytest
progress with a coloured PASSED on most lines, test, file and package names made of the
catalog's own words, pip progress bars, CMake lines, lines of 2,000-12,000 characters, and 20
failures planted from the catalog's `.log` windows.
Usage: python bench/classify.py [--shape today,near-miss] [--size-mb 1024] [--repeat 3]
[--log PATH] [--top 10]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage_bot.catalog_tools.near_miss import (  # noqa: E402
    PLANTED_FAILURES,
    NearMissLog,
    RegexReach,
    regex_reach,
)
from triage_bot.core.catalog import load_catalog  # noqa: E402
from triage_bot.core.classify import CompiledCatalog  # noqa: E402
from triage_bot.core.engine import engine_names  # noqa: E402
from triage_bot.core.regex_shapes import class_end  # noqa: E402

MIB = 1 << 20

_PASSING = [
    "   Compiling serde v1.0.{n}",
    "tests/test_module_{n}.py::test_case_{n} PASSED                                 [ 45%]",
    "✓ renders component {n} (12 ms)",
    "Collecting package-{n}==1.2.3",
    "  Downloading package_{n}-1.2.3-py3-none-any.whl (123 kB)",
    "[INFO] Building jar: /home/runner/work/app/app/target/app-{n}.jar",
    "gcc -O2 -Wall -Werror -c src/file{n}.c -o build/file{n}.o",
    "ok  \tgithub.com/org/repo/pkg{n}\t0.{n}s",
    "    Finished `release` profile [optimized] target(s) in {n}.02s",
    "npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.",
    "INFO 10-21 09:12:30 [worker.py:{n}] loading weights shard {n} of 64",
    "   Running tests/integration_{n}.rs (target/debug/deps/integration-5f2a)",
    "[{n}/2048] Building CXX object src/CMakeFiles/core.dir/kernel_{n}.cpp.o",
    "Successfully installed package-{n}-1.2.3",
]


def failure_lines() -> list[str]:
    """Real failure lines: every example line of the catalog's signatures."""
    catalog = load_catalog()
    return [e.line for s in catalog.signatures for e in s.match_examples]


def colour(line: str, rng: random.Random) -> str:
    """Colour a line as a tool with forced colours would: a word in bold green."""
    words = line.split(" ")
    at = rng.randrange(len(words))
    words[at] = f"\x1b[1m\x1b[32m{words[at]}\x1b[0m"
    return " ".join(words)


def write_log(path: Path, size: int, ansi_percent: float, seed: int = 7) -> None:
    """Today's shape: the passing lines above, a failure line per 2,000 lines."""
    rng = random.Random(seed)
    failures = failure_lines()
    written = 0
    second = 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            second += 1
            stamp = (
                f"2026-10-21T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
            )
            lines = []
            for _ in range(2000):
                text = rng.choice(_PASSING).format(n=rng.randrange(1000))
                if rng.random() * 100 < ansi_percent:
                    text = colour(text, rng)
                lines.append(f"{stamp}.{rng.randrange(10**7):07d}Z {text}")
            # A step boundary, and about one failure line per 200 KB: a log full of errors
            # is not the common case, but the matched path is exercised throughout.
            lines[rng.randrange(len(lines))] = f"{stamp}.0000000Z {rng.choice(failures)}"
            lines[0] = f"{stamp}.0000000Z ##[group]Run step {second}"
            block = "\n".join(lines) + "\n"
            out.write(block)
            written += len(block.encode())


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_BACKREFERENCE = re.compile(r"\(\?P=\w+\)")
_LOOKAROUND_OPENERS = ("(?=", "(?!", "(?<=", "(?<!")


def _drop_lookarounds(pattern: str) -> str:
    """Remove every lookaround group, minding escapes and character classes."""
    out: list[str] = []
    at = 0
    while at < len(pattern):
        if pattern.startswith(_LOOKAROUND_OPENERS, at):
            at = _group_end(pattern, at)
            continue
        step = 2 if pattern[at] == "\\" else 1
        out.append(pattern[at : at + step])
        at += step
    return "".join(out)


def _group_end(pattern: str, at: int) -> int:
    depth = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if char == "[":
            at = class_end(pattern, at)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    return at


def _bytes_of(char: str) -> str:
    return "".join(f"\\x{byte:02X}" for byte in char.encode())


def _ascii_only(pattern: str) -> str:
    """`--no-unicode` refuses non-ASCII characters: write one as its UTF-8 bytes; in a class,
    move it out as an alternative (or, in a negated class, leave it out: a broader class)."""
    out: list[str] = []
    at = 0
    while at < len(pattern):
        if pattern[at] == "\\":
            out.append(pattern[at : at + 2])
            at += 2
        elif pattern[at] == "[":
            end = class_end(pattern, at)
            out.append(_ascii_class(pattern[at:end]))
            at = end
        else:
            char = pattern[at]
            out.append(char if char.isascii() else _bytes_of(char))
            at += 1
    return "".join(out)


_UNICODE_PROPERTY = re.compile(r"\\[pP]\{[^}]*\}")


def _ascii_class(piece: str) -> str:
    if piece.startswith("[^") and _UNICODE_PROPERTY.search(piece):
        # `--no-unicode` refuses `\p{L}`: in a negated class, leaving it out broadens the class.
        piece = _UNICODE_PROPERTY.sub("", piece)
    if piece.isascii():
        return piece
    others = [c for c in piece if not c.isascii()]
    kept = "".join(c for c in piece if c.isascii())
    if piece.startswith("[^"):
        return kept if kept != "[^]" else "[\\x00-\\xFF]"  # only non-ASCII left out: any byte
    # A class of non-ASCII characters only leaves `[]`, which ripgrep refuses: drop it.
    ascii_part = [kept] if kept != "[]" else []
    return "(?:" + "|".join([*ascii_part, *(_bytes_of(c) for c in others)]) + ")"


def for_ripgrep(pattern: str) -> str:
    """The same pattern in the syntax of ripgrep's default engine, which has no named-group
    duplicates across one file, no lookaround and no backreferences: names are dropped, a
    lookaround (zero width) is removed, a backreference becomes \\S+, a non-ASCII character is
    written as its bytes."""
    pattern = _NAMED_GROUP.sub("(", pattern)
    pattern = _BACKREFERENCE.sub(r"\\S+", pattern)
    return _ascii_only(_drop_lookarounds(pattern))


def rg_patterns(path: Path) -> tuple[int, int]:
    originals = [s.pattern.pattern for s in load_catalog().signatures]
    translated = [for_ripgrep(p) for p in originals]
    path.write_text("\n".join(translated) + "\n", encoding="utf-8")
    return len(translated), sum(a != b for a, b in zip(originals, translated, strict=True))


class RunFailed(Exception):
    """A command that crashed, failed or ran out of time."""


def run(
    command: list[str], env: dict[str, str] | None = None, timeout: float | None = None
) -> tuple[float, int, bytes]:
    """Wall time, peak RSS in bytes (of that process alone), and stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
        while True:
            pid, status, usage = os.wait4(process.pid, 0 if timeout is None else os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > (timeout or 0):
                process.kill()
                os.wait4(process.pid, 0)
                raise RunFailed(f"stopped after {timeout:g} s")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) not in (0, 1):  # rg exits 1 when nothing matched
            stderr.seek(0)
            said = stderr.read().decode(errors="replace").strip()
            raise RunFailed(f"exit status {os.waitstatus_to_exitcode(status)}: {said}")
        stdout.seek(0)
        output = stdout.read()
    return elapsed, usage.ru_maxrss * 1024, output


def read_alone(path: Path) -> float:
    started = time.perf_counter()
    with path.open("rb", buffering=0) as stream:
        while stream.read(MIB):
            pass
    return time.perf_counter() - started


SHAPES = ("today", "near-miss")


def write_near_miss(path: Path, size: int, _ansi_percent: float = 0.0) -> None:
    with path.open("wb") as out:
        for block in NearMissLog(load_catalog(), failures=PLANTED_FAILURES).blocks(size):
            out.write(block)


def count_reach(path: Path) -> RegexReach:
    """The lines of the log the prefilter passes on to a signature's regex, counted apart
    from the timed runs (the classifier itself counts nothing) with the same prefilter."""
    compiled = CompiledCatalog(load_catalog())
    total = RegexReach()
    carry = b""
    with path.open("rb") as stream:
        while chunk := stream.read(8 * MIB):
            block = carry + chunk
            cut = block.rfind(b"\n") + 1
            carry = block[cut:]
            total.add(regex_reach(compiled, block[:cut]))
    if carry:
        total.add(regex_reach(compiled, carry + b"\n"))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shape",
        default="today",
        help=f"log shapes, comma-separated: {', '.join(SHAPES)} (today)",
    )
    parser.add_argument("--size-mb", type=int, default=1024, help="log size in MiB (1024)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, median (3)")
    parser.add_argument("--log", type=Path, help="use this log instead of a synthetic one")
    parser.add_argument(
        "--ansi-percent",
        type=float,
        default=2.0,
        help="share of lines with colour codes, in percent, in today's shape (2)",
    )
    parser.add_argument(
        "--rg-timeout", type=float, default=600, help="seconds ripgrep may take per run (600)"
    )
    parser.add_argument(
        "--rg-prefix-mb",
        type=float,
        default=1.0,
        help="when ripgrep cannot search the whole log, time it on this many MiB of its start (1)",
    )
    parser.add_argument(
        "--rg", default=shutil.which("rg"), help="the ripgrep to compare with (rg on PATH)"
    )
    parser.add_argument(
        "--top", type=int, default=10, help="signatures that reach their regex most (10)"
    )
    args = parser.parse_args()
    shapes = [shape.strip() for shape in args.shape.split(",") if shape.strip()]
    unknown = [shape for shape in shapes if shape not in SHAPES]
    if unknown:
        parser.error(f"unknown shape {unknown[0]!r}; choose among {', '.join(SHAPES)}")

    rg = args.rg
    if rg is None:
        raise SystemExit("ripgrep is not installed: apt-get install ripgrep")
    workdir = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    try:
        patterns_file = workdir / "patterns.txt"
        count, adapted = rg_patterns(patterns_file)
        print(f"{count} catalog patterns ({adapted} adapted to ripgrep's syntax)")
        same = True
        for shape in ["given"] if args.log else shapes:
            log = args.log or workdir / f"{shape}.log"
            if args.log is None:
                print(f"\nwriting a {args.size_mb} MiB job log of shape {shape} ...", flush=True)
                # In a process of its own: a child's peak RSS (wait4) counts this process's
                # at the fork, which would hold what the generator held (91 MB).
                writer = multiprocessing.get_context("spawn").Process(
                    target=write_log if shape == "today" else write_near_miss,
                    args=(log, args.size_mb * MIB, args.ansi_percent),
                )
                writer.start()
                writer.join()
                if writer.exitcode != 0:
                    raise SystemExit(f"writing the {shape} log failed")
            same = bench_log(log, shape, args, rg, patterns_file) and same
            if args.log is None:
                log.unlink()
        return 0 if same else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def bench_log(
    log: Path, shape: str, args: argparse.Namespace, rg: str, patterns_file: Path
) -> bool:
    """Time the triage of one log against ripgrep and print the table; whether every engine
    gave the same JSON."""
    triage_bot = [sys.executable, "-m", "triage_bot"]
    size = log.stat().st_size
    read_alone(log)  # warm the page cache for everyone
    outputs: dict[str, bytes] = {}
    timings: dict[str, list[float]] = {"read alone": []}
    peaks: dict[str, int] = {}
    rg_run = RipgrepRun(rg, patterns_file, args.rg_timeout)
    for _ in range(args.repeat):
        timings["read alone"].append(read_alone(log))
        rg_run.time(log)
        for engine in _available_engines():
            env = {**os.environ, "TRIAGE_ENGINE": engine}
            try:
                elapsed, peak, output = run(
                    [*triage_bot, "triage", str(log), "--format", "json"], env
                )
            except RunFailed as failed:
                raise SystemExit(f"triage ({engine}) failed: {failed}") from None
            timings.setdefault(f"triage ({engine})", []).append(elapsed)
            peaks[engine] = max(peaks.get(engine, 0), peak)
            outputs[engine] = output
    if rg_run.failed:
        rg_run.time_prefix(log, int(args.rg_prefix_mb * MIB))
    reference = rg_run.bytes_per_second(size)

    coloured = f", {args.ansi_percent:g}% of lines coloured" if shape == "today" else ""
    print(f"\nshape {shape}: {size / MIB:.0f} MiB{coloured}, median of {args.repeat}")
    print(f"{'':22} {'seconds':>8} {'MB/s':>8} {'vs rg':>7} {'peak MB':>8}")
    rows = {**({"ripgrep": rg_run.seconds} if rg_run.seconds else {}), **timings}
    for name, values in rows.items():
        seconds = statistics.median(values)
        engine_run = name[len("triage (") : -1] if name.startswith("triage") else ""
        peak_mb = f"{peaks[engine_run] / 1e6:8.1f}" if engine_run else " " * 8
        ratio = f"{size / seconds / reference:6.2f}x" if reference else "      -"
        print(f"{name:22} {seconds:8.2f} {size / 1e6 / seconds:8.0f} {ratio} {peak_mb}")
    rg_run.print_fallback()
    same = len(set(outputs.values())) == 1
    print(f"identical JSON across engines ({', '.join(outputs)}): {'yes' if same else 'NO'}")
    # Counted in a process of its own, for the same reason as the log is written in one.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        reach = pool.apply(count_reach, (log,))
    print_reach(reach, args.top)
    return same


class RipgrepRun:
    """ripgrep's times on one log. When it cannot search the whole log (its lazy DFA over
    the whole catalog thrashes on long varied lines: ripgrep 13 aborts on a 35 GB
    allocation, ripgrep 15 runs at about 0.1 MB/s on the near-miss shape), it is timed on
    the log's first lines instead and compared by throughput, which favours ripgrep (the
    triage's start-up is spread over the whole log, ripgrep's over the prefix)."""

    def __init__(self, rg: str, patterns_file: Path, timeout: float) -> None:
        self.command = [rg, "--no-unicode", "-c", "-f", str(patterns_file)]
        self.timeout = timeout
        self.seconds: list[float] = []
        self.failed = ""
        self.prefix: tuple[int, float] | None = None  # bytes, seconds

    def time(self, log: Path) -> None:
        if self.failed:
            return
        try:
            elapsed, _peak, _out = run([*self.command, str(log)], timeout=self.timeout)
            self.seconds.append(elapsed)
        except RunFailed as failed:
            self.failed = str(failed)
            self.seconds = []

    def time_prefix(self, log: Path, wanted: int) -> None:
        with log.open("rb") as stream:
            head = stream.read(wanted)
        head = head[: head.rfind(b"\n") + 1]
        with tempfile.NamedTemporaryFile(suffix=".log", dir=log.parent) as prefix:
            prefix.write(head)
            prefix.flush()
            try:
                elapsed, _peak, _out = run([*self.command, prefix.name], timeout=self.timeout)
            except RunFailed as failed:
                self.failed += f"; on the first {len(head) / MIB:.1f} MiB too: {failed}"
                return
        self.prefix = (len(head), elapsed)

    def bytes_per_second(self, size: int) -> float | None:
        """ripgrep's rate on the whole log of `size` bytes (median), else on the prefix."""
        if self.seconds:
            return size / statistics.median(self.seconds)
        if self.prefix:
            return self.prefix[0] / self.prefix[1]
        return None

    def print_fallback(self) -> None:
        if not self.failed:
            return
        print(f"ripgrep on the whole log: no time ({self.failed[:200]})")
        if self.prefix:
            size, seconds = self.prefix
            print(
                f"ripgrep on the log's first {size / MIB:.1f} MiB: {seconds:.2f} s, "
                f"{size / 1e6 / seconds:.2f} MB/s (the 'vs rg' column compares with this rate)"
            )


def print_reach(reach: RegexReach, top: int) -> None:
    per_10k = reach.reaching * 10_000 / max(reach.lines, 1)
    print(
        f"lines reaching regexes: {reach.reaching:,} of {reach.lines:,} ({per_10k:.1f} per "
        f"10,000), {reach.searches:,} regex searches at most; lines decoded (those, error "
        f"words, step ends): {reach.decoded:,}"
    )
    for signature_id, lines in reach.by_signature.most_common(top):
        print(f"  {lines:>12,} lines  {signature_id}")


def _available_engines() -> list[str]:
    available = []
    for name in engine_names():
        if name == "python":
            continue  # the last resort: correct, but far too slow for a 1 GiB log
        try:
            __import__({"hyperscan": "hyperscan", "ahocorasick": "ahocorasick_rs"}[name])
        except ImportError:
            continue
        available.append(name)
    return available


if __name__ == "__main__":
    raise SystemExit(main())
