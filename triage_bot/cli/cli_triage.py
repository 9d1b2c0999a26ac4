"""The `triage` command: job logs from files offline, or one run of GitHub by its URL."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from triage_bot.cli import rerun
from triage_bot.config import environment, load_settings
from triage_bot.core import sources
from triage_bot.core.catalog import Catalog, load_catalog
from triage_bot.core.classify import CompiledCatalog, JobClassifier
from triage_bot.core.classify_results import JobResult
from triage_bot.core.log_tail import tail_note
from triage_bot.core.ranking import SCORE_PARTS
from triage_bot.core.report import Job, Report, build_report, report_json


def load(extra: list[Path]) -> Catalog:
    for folder in extra:
        if not folder.is_dir():
            raise sources.InputError(f"--catalog {folder}: not a folder")
    catalog = load_catalog()
    if extra:
        catalog = load_catalog(extra, origin="local", base=catalog)
    for problem in catalog.problems:
        print(f"triage-bot: signature skipped: {problem}", file=sys.stderr)
    return catalog


def triage(args: argparse.Namespace) -> None:
    urls = [path for path in args.paths if rerun.is_url(path)]
    if urls:
        if len(args.paths) > 1:
            raise sources.InputError("give one RUN_URL, or log files, not both or several")
        if args.post and args.catalog:
            raise sources.InputError(
                "--post posts what the App would, with the built-in catalog: drop --catalog"
            )
        rerun.triage_url(
            load_settings(environment()).require("cli"),
            rerun.parse_run_url(urls[0]),
            lambda: CompiledCatalog(load(args.catalog)),
            lambda report: print_report(report, args.format, explain=args.explain),
            post=args.post,
            max_bytes=args.max_bytes,
        )
        return
    if args.post:
        raise sources.InputError("--post needs a RUN_URL")
    jobs_in = sources.collect(args.paths, _warn)
    compiled = CompiledCatalog(load(args.catalog))
    jobs = [job for job in (_triage_one(j, compiled, args.max_bytes) for j in jobs_in) if job]
    if not jobs:
        raise sources.InputError("no log could be read")
    print_report(build_report(jobs), args.format, explain=args.explain)


def _warn(problem: str) -> None:
    print(f"triage-bot: {problem}", file=sys.stderr)


def _triage_one(
    job_log: sources.JobLog, compiled: CompiledCatalog, max_bytes: int | None
) -> Job | None:
    """One job's triage, or None (said on stderr) when its file is no log or is broken: a
    broken archive member is left out whole, what was read of it cannot be trusted."""
    classifier = JobClassifier(compiled, job_log.name, max_bytes=max_bytes, log_size=job_log.size)
    try:
        for chunk in sources.log_chunks(job_log):
            classifier.feed(chunk)
    except sources.Skipped as skipped:
        _warn(f"{job_log.origin}: skipped: {skipped}")
        return None
    except sources.BROKEN as error:
        _warn(f"{job_log.origin}: {sources.describe(error)}")
        return None
    result = classifier.finish()
    note = tail_note(classifier.tail)
    if result.time_cut is not None:
        cut = result.time_cut
        note = f"classification stopped at line {cut.line} after {cut.cpu_s:g} s of CPU time"
    return Job(result, note=note)


def print_report(report: Report, chosen: str | None, *, explain: bool = False) -> None:
    output_format = chosen or ("text" if sys.stdout.isatty() else "markdown")
    if output_format == "json":
        data = report_json(report)
        if explain:
            for job, shown in zip(report.jobs, data["jobs"], strict=True):
                shown["candidates"] = candidates_json(job.result)
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    print_view(report, output_format)
    if explain:
        sys.stdout.write(explanation(report))


def print_view(report: Report, output_format: str) -> None:
    if output_format == "markdown":
        from triage_bot.core.render import render_comment  # jinja2: not needed for JSON

        sys.stdout.write(render_comment(report))
    else:
        from triage_bot.core.render import render_text

        sys.stdout.write(render_text(report))


def explanation(report: Report) -> str:
    """Every job's candidates as they were weighed, best first, one line each."""
    out = []
    for job in report.jobs:
        out.append(f"\nCandidates weighed for job {job.name!r} (score: {', '.join(SCORE_PARTS)}):")
        if not job.result.weighed:
            out.append("  none: no signature matched")
        for place, item in enumerate(job.result.weighed, start=1):
            match = item.match
            score = ", ".join(str(part) for part in item.score)
            out.append(
                f"  {place}. {match.signature.id} line {match.line} [{score}]: {match.text}\n"
                f"     {item.reason}"
            )
    return "\n".join(out) + "\n"


def candidates_json(result: JobResult) -> list[dict[str, object]]:
    return [
        {
            "signature": item.match.signature.id,
            "line": item.match.line,
            "text": item.match.text,
            "score": dict(zip(SCORE_PARTS, item.score, strict=True)),
            "reason": item.reason,
        }
        for item in result.weighed
    ]
