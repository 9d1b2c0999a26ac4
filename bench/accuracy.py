"""Accuracy: is triage-bot's root cause the line a person marked as why the build failed?

Scores the CLI (`triage-bot triage --format json LOG`, one process per log, each with a
timeout) on any folder of logs labelled in a `FOLDER/index.json` of this shape:

    {"logs": [{"file": "Go/owner@repo/123.log",   # the log, relative to FOLDER
               "language": "Go",                   # the ecosystem the figures are grouped by
               "ranges": [[40, 42], [97, 97]],     # 1-based inclusive lines (counting \\n)
                                                   # that say why it failed; every occurrence
               "label": "--- FAIL: TestX ..."},    # optional: the labelled text itself
               "passing": "Go/owner@repo/99.log"}, # optional: a passing run of that job
              ...]}

(other keys, such as `repo`, `located`, `keywords`, are ignored). This is the format of the
LogChunks dev split (../shared/eval) and of the real windows in tests/accuracy/.

Per log, with the label's text compared after dropping colour codes and collapsing spaces:

- top-1: the root cause's line lies in a range, or its text and the label (10+ characters
  each) contain one another. The main figure.
- any: the root cause or some other reported line (`also`, `fallback_lines`) hits.
- shown: the root cause or a best-guess line hits: a line the comment shows as such (`also`
  is only in the JSON).
- guess: the line the comment's table shows as the job's failure hits: the root cause when
  it explains the job, else (no root cause, a catch-all below priority 10, or a line the
  passing run printed too) the best-guess line the table picks (ranking.best_guess_index).
- none: the CLI ran and reported no root cause and no fallback lines: the reader got nothing.
- naive: the baseline, in the same run: the last line holding `rror` or `FAIL` that is not an
  exit-code line (`exited with 1`, `Error 2`, `ELIFECYCLE`, ...), scored as top-1.
- err: the CLI crashed, printed no job, or ran out of time (scored as a miss).

Prints a count and a share per language and overall. `--misses FILE` writes each top-1 miss
as a JSON line (file, what was wanted, what was got, any, error).

`--compare` (issue #11): for a corpus whose index gives logs a `passing` log, scores only
those logs, twice: as above, then with `triage --compare PASSING`; the naive baseline is the
same in both tables. (bench/pairs_index.py writes such an index for a folder of pairs.)

Usage: python bench/accuracy.py FOLDER [--jobs 2] [--misses FILE] [--cli PATH] [--timeout 60]
                                [--language NAME ...] [--compare]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from triage_bot.core import ranking
from triage_bot.core.catalog import GENERIC_PRIORITY

COLUMNS = ("top-1", "guess", "any", "shown", "none", "naive", "err")
# A text match needs this much on both sides: "error" alone is in half the labels.
MIN_TEXT_MATCH = 10
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x1b")
_SPACES = re.compile(r"\s+")
# Lines that only report an exit status: the naive baseline skips them, as a reader would.
_EXIT_LINE = re.compile(
    r"exit(?:ed)?(?: with)?(?: (?:code|status))?:? *-?\d+|exit (?:code|status)|non-zero exit"
    r"|Process completed with exit code|\bError \d+\s*$|\berrno \d+|ELIFECYCLE|^Finished: FAILURE",
    re.IGNORECASE,
)


def squeeze(text: str) -> str:
    """Text as the label is compared: colour codes dropped, whitespace runs one space."""
    return _SPACES.sub(" ", _ANSI.sub("", text)).strip()


@dataclass(frozen=True)
class Labelled:
    """One log of the index and the lines that say why it failed."""

    file: str
    language: str
    ranges: tuple[tuple[int, int], ...]
    label: str = ""
    passing: str = ""  # a passing run's log of the same job, relative to the folder

    def hit(self, reported: Reported | None) -> bool:
        if reported is None:
            return False
        if reported.line is not None and any(a <= reported.line <= b for a, b in self.ranges):
            return True
        text, label = squeeze(reported.text), squeeze(self.label)
        if len(text) < MIN_TEXT_MATCH or len(label) < MIN_TEXT_MATCH:
            return False
        return text in label or label in text


@dataclass(frozen=True)
class Reported:
    """A line the CLI (or the baseline) pointed at."""

    line: int | None
    text: str
    signature: str | None = None


@dataclass
class Triage:
    """What the CLI said about one log, or why it said nothing."""

    root: Reported | None = None
    others: list[Reported] = field(default_factory=list)  # `also` and fallback lines
    fallback: list[Reported] = field(default_factory=list)
    error: str | None = None
    # The root cause explains the job (report.explained): the comment shows it as the failure.
    explains: bool = False


@dataclass(frozen=True)
class Outcome:
    top1: bool
    guess: bool
    any: bool
    shown: bool
    none: bool
    naive: bool
    err: bool

    def column(self, name: str) -> bool:
        return {
            "top-1": self.top1,
            "guess": self.guess,
            "any": self.any,
            "shown": self.shown,
            "none": self.none,
            "naive": self.naive,
            "err": self.err,
        }[name]


def load_index(folder: Path) -> list[Labelled]:
    rows = json.loads((folder / "index.json").read_text(encoding="utf-8"))["logs"]
    return [
        Labelled(
            file=row["file"],
            language=row.get("language") or "?",
            ranges=tuple((int(a), int(b)) for a, b in row["ranges"]),
            label=row.get("label") or "",
            passing=row.get("passing") or "",
        )
        for row in rows
    ]


def naive_line(path: Path) -> Reported | None:
    """The baseline: the last line with `rror` or `FAIL` that is not an exit-code line."""
    lines = path.read_bytes().decode("utf-8", "replace").split("\n")
    for number in range(len(lines), 0, -1):
        text = lines[number - 1].removesuffix("\r")
        if ("rror" in text or "FAIL" in text) and not _EXIT_LINE.search(text):
            return Reported(number, text)
    return None


def _reported(entry: dict[str, Any]) -> Reported:
    return Reported(entry.get("line"), entry.get("text") or "", entry.get("signature"))


def parse_report(stdout: bytes) -> Triage:
    """The first job of a `--format json` report."""
    try:
        jobs = json.loads(stdout).get("jobs") or []
    except ValueError as error:
        return Triage(error=f"bad json: {error}")
    if not jobs:
        return Triage(error="no job in the report")
    job = jobs[0]
    cause = job.get("root_cause")
    fallback = [_reported(e) for e in job.get("fallback_lines") or []]
    also = [_reported(e) for key in ("also", "hits") for e in job.get(key) or []]
    return Triage(
        root=_reported(cause) if cause else None,
        others=also + fallback,
        fallback=fallback,
        explains=_explains(job),
    )


def _explains(job: dict[str, Any]) -> bool:
    """The job's `explains` (report.explained); a CLI older than that field: the same rule
    on its root cause (no catch-all, not a line the passing run printed too)."""
    if "explains" in job:
        return bool(job["explains"])
    cause = job.get("root_cause")
    if not cause:
        return False
    return bool(cause["priority"] >= GENERIC_PRIORITY and cause["new"] is not False)


def run_cli(cli: Path, log: Path, timeout: float, passing: Path | None = None) -> Triage:
    command = [str(cli), "triage", "--format", "json", str(log)]
    if passing is not None:
        command += ["--compare", str(passing)]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Triage(error=f"timeout after {timeout:g} s")
    if done.returncode != 0:
        return Triage(
            error=f"exit {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"
        )
    return parse_report(done.stdout)


def best_guess(fallback: list[Reported]) -> Reported | None:
    """The best-guess line the comment's table shows for a job nothing explains."""
    index = ranking.best_guess_index([line.text for line in fallback])
    return None if index is None else fallback[index]


def judge(labelled: Labelled, triage: Triage, naive: Reported | None) -> Outcome:
    top1 = labelled.hit(triage.root)
    return Outcome(
        top1=top1,
        guess=top1 or (not triage.explains and labelled.hit(best_guess(triage.fallback))),
        any=top1 or any(labelled.hit(other) for other in triage.others),
        shown=top1 or any(labelled.hit(line) for line in triage.fallback),
        none=triage.error is None and triage.root is None and not triage.fallback,
        naive=labelled.hit(naive),
        err=triage.error is not None,
    )


@dataclass(frozen=True)
class Scored:
    labelled: Labelled
    triage: Triage
    outcome: Outcome


# A log, and the passing log to compare it with (None: no comparison).
Triager = Callable[[Path, Path | None], Triage]


def score(
    folder: Path,
    triager: Triager,
    jobs: int = 2,
    languages: Sequence[str] = (),
    *,
    compare: bool | None = None,
) -> list[Scored]:
    """Triage every log of `folder`'s index (with `jobs` at a time), or those of the given
    languages, and judge each. `compare`: only the logs with a passing log, triaged with
    (True) or without (False) comparing."""
    wanted = {name.lower() for name in languages}
    index = [row for row in load_index(folder) if not wanted or row.language.lower() in wanted]
    if compare is not None:
        index = [row for row in index if row.passing]
    logs = [folder / row.file for row in index]
    passing = [folder / row.passing if compare else None for row in index]
    # Threads are enough: each one waits on a CLI process.
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        triages = list(pool.map(triager, logs, passing))
    return [
        Scored(row, triage, judge(row, triage, naive_line(folder / row.file)))
        for row, triage in zip(index, triages, strict=True)
    ]


def cli_triager(cli: Path, timeout: float) -> Triager:
    return lambda log, passing: run_cli(cli, log, timeout, passing)


def totals(results: Iterable[Scored]) -> dict[str, int]:
    counts = dict.fromkeys(COLUMNS, 0)
    for result in results:
        for name in COLUMNS:
            counts[name] += result.outcome.column(name)
    return counts


def table(results: Sequence[Scored]) -> str:
    languages = sorted({r.labelled.language for r in results}, key=str.lower)
    width = max(map(len, [*languages, "overall"])) + 2
    out = ["".ljust(width) + "    n" + "".join(c.rjust(11) for c in COLUMNS)]
    for name in [*languages, "overall"]:
        group = [r for r in results if name in (r.labelled.language, "overall")]
        if name == "overall":
            out.append("-" * (width + 5 + 11 * len(COLUMNS)))
        counts = totals(group)
        out.append(
            name.ljust(width)
            + f"{len(group):5d}"
            + "".join(f"{counts[c]:6d} {100 * counts[c] / len(group):3.0f}%" for c in COLUMNS)
        )
    return "\n".join(out)


def miss_record(result: Scored) -> dict[str, Any]:
    labelled, triage = result.labelled, result.triage
    first = next((line for line in labelled.label.splitlines() if line.strip()), "")
    got = None
    if triage.root is not None:
        got = {**asdict(triage.root), "text": squeeze(triage.root.text)[:300]}
    return {
        "file": labelled.file,
        "want": {"ranges": [list(r) for r in labelled.ranges[:5]], "label": squeeze(first)[:200]},
        "got": got,
        "any_hit": result.outcome.any,
        "error": triage.error,
    }


def default_cli() -> Path:
    """The triage-bot installed next to the running python (the project's .venv)."""
    return Path(sys.executable).parent / "triage-bot"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="a folder with index.json and the logs")
    parser.add_argument("--jobs", type=int, default=2, help="logs triaged at once (default 2)")
    parser.add_argument("--misses", type=Path, help="write the top-1 misses to this JSONL file")
    parser.add_argument(
        "--cli", type=Path, default=default_cli(), help="triage-bot to run (default: %(default)s)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per log (default 60)")
    parser.add_argument(
        "--language",
        action="append",
        default=[],
        help="score only the logs of this language (repeatable; default: all)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="score the logs that have a passing log, without then with `triage --compare`",
    )
    args = parser.parse_args(argv)
    triager = cli_triager(args.cli, args.timeout)
    if args.compare:
        if not any(row.passing for row in load_index(args.folder)):
            print(f"{args.folder}: no log in index.json has a `passing` log to compare with")
            return 2
        alone = score(args.folder, triager, args.jobs, args.language, compare=False)
        print("without --compare:\n" + table(alone) + "\n")
        results = score(args.folder, triager, args.jobs, args.language, compare=True)
        print("with --compare:\n" + table(results))
    else:
        results = score(args.folder, triager, args.jobs, args.language)
        print(table(results))
    if args.misses:
        misses = [miss_record(r) for r in results if not r.outcome.top1]
        lines = (json.dumps(m, ensure_ascii=False) + "\n" for m in misses)
        args.misses.write_text("".join(lines), encoding="utf-8")
        print(f"wrote {len(misses)} top-1 misses to {args.misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
