"""`triage-bot report`: the catalog's coverage, from the recorded job outcomes of the App's
database (DATABASE_URL, else TRIAGE_DATA_DIR's triage.db): failed jobs, the share a signature
explains, the most frequent signatures, the likely-flaky failure keys (store/flaky.py), and the
unexplained jobs clustered by log template, each with the `catalog new` command that drafts
its signature (store/report_clusters.py)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from triage_bot.config import environment, load_settings
from triage_bot.core import sources
from triage_bot.core.catalog import load_catalog

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from triage_bot.store.report_clusters import Cluster

EXIT_FAILED = 1
FORMATS = ("text", "json", "html")
DEFAULT_SINCE = "30d"
TOP = 10
_PERIOD = re.compile(r"(\d{1,5})([hdw])")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 24 * 7}


@dataclass(frozen=True)
class FlakyKey:
    repo: str
    key: str
    why: str
    proofs: list[str]  # the failed jobs' URLs that prove it (at most 3)


@dataclass(frozen=True)
class CoverageReport:
    repo: str | None  # None: every repository
    since: datetime
    failed: int
    explained: int
    coverage: float  # explained / failed
    signatures: list[tuple[str, int]]
    flaky: list[FlakyKey]
    clusters: list[Cluster]


def add_report_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = (
        "The catalog's coverage, from the jobs the App recorded (DATABASE_URL, else "
        "TRIAGE_DATA_DIR's triage.db): failed jobs, the share a signature explains, the most "
        "frequent signatures, the likely-flaky failure keys (judged over the last 14 days), "
        "and the unexplained jobs clustered by log template (drain3), each cluster with its "
        "count, an example line and the `triage-bot catalog new` command that drafts its "
        "signature in .github/triage-bot/patterns. HTML escapes every line it shows."
    )
    report = commands.add_parser(
        "report", help="coverage of the catalog, and the signatures to write next", description=text
    )
    report.add_argument("--repo", metavar="OWNER/NAME", help="one repository (default: all)")
    report.add_argument(
        "--since",
        default=DEFAULT_SINCE,
        metavar="PERIOD",
        help=f"jobs finished in the last PERIOD: a number and h, d or w (default {DEFAULT_SINCE})",
    )
    report.add_argument("--format", choices=FORMATS, default="text", help="default text")
    report.add_argument(
        "--top", type=int, default=TOP, metavar="N", help=f"signatures and clusters shown ({TOP})"
    )
    report.set_defaults(run=run_report)


def parse_period(text: str) -> timedelta:
    match = _PERIOD.fullmatch(text.strip())
    if match is None:
        raise sources.InputError(f"--since {text!r}: give a number and h, d or w, e.g. 30d")
    return timedelta(hours=int(match[1]) * _UNIT_HOURS[match[2]])


def run_report(args: argparse.Namespace) -> int:
    # Imported here: the database's modules would slow every other command's start.
    from sqlalchemy.exc import SQLAlchemyError

    from triage_bot.store import coverage

    since = datetime.now(UTC) - parse_period(args.since)
    try:
        engine = coverage.open_for_report(load_settings(environment()).database_url)
    except (coverage.NoHistory, SQLAlchemyError) as exc:
        print(f"triage-bot: report: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    try:
        report = build_report(engine, since, args.repo, top=max(args.top, 1))
    finally:
        engine.dispose()
    sys.stdout.write(render(report, args.format))
    return 0


def build_report(
    engine: Engine, since: datetime, repo: str | None, top: int = TOP
) -> CoverageReport:
    """The report of the jobs of `repo` (None: all) finished since `since`."""
    from triage_bot.store import coverage
    from triage_bot.store.job_outcomes import JobOutcomes
    from triage_bot.store.report_clusters import cluster_unexplained

    jobs = coverage.failed_jobs(engine, since, repo)
    counted = coverage.coverage(jobs, top)
    never = {s.id for s in load_catalog().signatures if s.never_flaky}  # `flaky: never`
    verdicts = coverage.flaky_verdicts(
        JobOutcomes(engine), jobs, now=datetime.now(UTC), never=never
    )
    flaky = [
        FlakyKey(name, v.key, v.why, [p.failed.url or "" for p in v.proofs])
        for name, found in verdicts.items()
        for v in found
    ]
    clusters = cluster_unexplained(jobs, top, _progress)
    return CoverageReport(
        repo, since, counted.failed, counted.explained, counted.share, counted.signatures,
        flaky, clusters,
    )  # fmt: skip


def _progress(items: Iterable[Any]) -> Iterable[Any]:
    """A progress bar on standard error while the lines are clustered, when it is a terminal."""
    from rich.console import Console
    from rich.progress import track

    console = Console(stderr=True)
    if not console.is_terminal:
        return items
    listed = list(items)
    return track(listed, description="clustering", console=console, transient=True)


def render(report: CoverageReport, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(as_json(report), indent=2) + "\n"
    if fmt == "html":
        from triage_bot.cli.report_html import render_html

        return render_html(report)
    return render_text(report)


def as_json(report: CoverageReport) -> dict[str, Any]:
    return {
        "repo": report.repo,
        "since": report.since.isoformat(),
        "failed_jobs": report.failed,
        "explained_jobs": report.explained,
        "coverage": round(report.coverage, 4),
        "signatures": [{"signature": s, "jobs": n} for s, n in report.signatures],
        "likely_flaky": [asdict(key) for key in report.flaky],
        "unexplained_clusters": [asdict(cluster) for cluster in report.clusters],
    }


def render_text(report: CoverageReport) -> str:
    scope = report.repo or "all repositories"
    lines = [
        f"Coverage of {scope} since {report.since:%Y-%m-%d %H:%M} UTC",
        f"  failed jobs: {report.failed}; explained by a signature: {report.explained} "
        f"({report.coverage:.0%})",
        "",
        "Most frequent signatures:",
        *(f"  {count:6d}  {name}" for name, count in report.signatures),
        "",
        "Likely flaky:",
        *(f"  {key.repo}  {_printable(key.key)}\n      {key.why}" for key in report.flaky),
        "",
        "Unexplained jobs by log template (the largest first):",
    ]
    for cluster in report.clusters:
        lines += [
            f"  {cluster.count:6d}  {cluster.template}",
            f"          e.g. {cluster.example}",
            f"          in {cluster.example_url or '(no URL)'}",
            f"          draft: {cluster.command or cluster.why_not}",
        ]
    return "\n".join(lines) + "\n"


def _printable(text: str) -> str:
    """A key as a terminal may show it: its control characters (a hostile capture's cursor
    moves) as spaces."""
    from triage_bot.store.report_clusters import CONTROL

    return CONTROL.sub(" ", text)
