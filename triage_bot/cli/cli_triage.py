"""The `triage` and `rerun` commands: job logs from files offline, or one run of GitHub by its
URL (`triage RUN_URL [--post]`, `rerun RUN_URL`).

Both post through the queue's own handler (`pipeline.triage_job`) with the database the
settings name, so a comment edited from here takes the same lock as the workers' (never two
comments, never a lost edit), is skipped for a closed pull request or one whose head has moved
on, and the failures are recorded as a webhook's triage records them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage_bot.config import Settings, environment, load_settings
from triage_bot.core import sources
from triage_bot.core.catalog import Catalog, load_catalog
from triage_bot.core.classify import CompiledCatalog, JobClassifier
from triage_bot.core.classify_results import JobResult
from triage_bot.core.compare import PassingFile, PassingUnreadable
from triage_bot.core.log_tail import tail_note
from triage_bot.core.ranking import SCORE_PARTS
from triage_bot.core.report import (
    JSON_VERSION,
    Job,
    Reference,
    Report,
    build_report,
    report_json,
)

if TYPE_CHECKING:  # imported when a URL is given, not to triage files
    from github.WorkflowRun import WorkflowRun

    from triage_bot.github_api.client import GitHubClient

# https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N]: github.com or any GitHub Enterprise
# Server host (its API URL comes from GITHUB_API_URL, not from the run's URL).
_RUN_URL = re.compile(
    r"https?://[^/\s]+/(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"/actions/runs/(?P<run>\d+)(?:/attempts/(?P<attempt>\d+))?/?"
)


# https://HOST/OWNER/REPO/pull/N, also with a tab of the pull request after it (/files, /checks).
_PULL_URL = re.compile(
    r"https?://[^/\s]+/(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"/pull/(?P<number>\d+)(?:/[a-z]+)?/?(?:[?#]\S*)?"
)


class GitHubFailed(Exception):
    """GitHub or the database failed; the message is one line for the person at the terminal."""


@dataclass(frozen=True)
class RunUrl:
    repo: str
    run_id: int
    attempt: int | None  # None: the latest attempt


def parse_run_url(text: str) -> RunUrl:
    found = _RUN_URL.fullmatch(text.strip())
    if found is None:
        raise sources.InputError(
            f"{text}: not a run URL (https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N])"
        )
    attempt = found["attempt"]
    return RunUrl(found["repo"], int(found["run"]), int(attempt) if attempt else None)


@dataclass(frozen=True)
class PullUrl:
    repo: str
    number: int


def parse_pull_url(text: str) -> PullUrl | None:
    found = _PULL_URL.fullmatch(text.strip())
    return None if found is None else PullUrl(found["repo"], int(found["number"]))


def triage(args: argparse.Namespace) -> None:
    urls = [path for path in args.paths if path.startswith(("http://", "https://"))]
    if urls:
        if len(args.paths) > 1:
            raise sources.InputError(
                "give one RUN_URL or PR_URL, or log files, not both or several"
            )
        if args.post and args.catalog:
            raise sources.InputError(
                "--post posts what the App would, with the built-in catalog: drop --catalog"
            )
        if args.compare is not None:
            raise sources.InputError("--compare is for log files, not a URL")
        pull = parse_pull_url(urls[0])
        if pull is not None:
            _triage_pull(args, pull)
            return
        if _RUN_URL.fullmatch(urls[0].strip()) is None:
            raise sources.InputError(
                f"{urls[0]}: neither a run URL (https://HOST/OWNER/REPO/actions/runs/ID"
                "[/attempts/N]) nor a pull request URL (https://HOST/OWNER/REPO/pull/N)"
            )
        _triage_url(args, urls[0])
        return
    if args.post:
        raise sources.InputError("--post needs a RUN_URL")
    jobs_in = sources.collect(args.paths, _warn)
    passing = passing_logs(args.compare, jobs_in) if args.compare is not None else None
    compiled = CompiledCatalog(load(args.catalog))
    jobs = [
        job
        for job in (
            _triage_one(j, compiled, args.max_bytes, passing.get(j.name, args.compare))
            if passing is not None
            else _triage_one(j, compiled, args.max_bytes)
            for j in jobs_in
        )
        if job
    ]
    if not jobs:
        raise sources.InputError("no log could be read")
    print_report(build_report(jobs), args.format, explain=args.explain)


def rerun(args: argparse.Namespace) -> None:
    run = parse_run_url(args.run_url)
    result = retriage(load_settings(environment()).require("cli"), run)
    for line in describe(run, result):
        print(line)


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


def _warn(problem: str) -> None:
    print(f"triage-bot: {problem}", file=sys.stderr)


def passing_logs(compare: str, failing: list[sources.JobLog]) -> dict[str, sources.JobLog]:
    """`--compare`'s passing logs by the failing job each stands for: one log (a file) for
    one failing job, whatever its name; else the logs of the same name (a folder, an archive:
    read as PATH is, so names are made alike on both sides)."""
    given = sources.collect([compare], _warn)
    if not given:
        raise sources.InputError(f"--compare {compare}: no passing log could be read")
    if len(given) == 1 and len(failing) == 1 and not Path(compare).is_dir():
        return {failing[0].name: given[0]}
    if not Path(compare).is_dir() and len(failing) > 1:
        raise sources.InputError(
            f"--compare {compare}: several logs to triage: give a folder of passing logs "
            "with the same file names"
        )
    return {job.name: job for job in given}


def _reference(
    passing: sources.JobLog | str, engine: str
) -> tuple[PassingFile | None, Reference | None, str | None]:
    """The passing log (read when the failing one is classified), its reference, or why
    there is no comparison (a note)."""
    if isinstance(passing, str):
        return None, None, f"not compared: no passing log of the same name in {passing}"
    label = passing.origin.replace("\\", "/").rsplit("/", 1)[-1]
    return PassingFile(partial(_passing_chunks, passing), engine), Reference(label), None


def _passing_chunks(passing: sources.JobLog) -> Iterator[bytes]:
    """A passing log's chunks; a log that cannot be read says why (PassingUnreadable)."""
    try:
        yield from sources.log_chunks(passing)
    except sources.Skipped as skipped:
        raise PassingUnreadable(f"passing log {passing.origin} skipped: {skipped}") from None
    except sources.BROKEN as error:
        raise PassingUnreadable(f"{passing.origin}: {sources.describe(error)}") from None


def _triage_one(
    job_log: sources.JobLog,
    compiled: CompiledCatalog,
    max_bytes: int | None,
    compare_with: sources.JobLog | str | None = None,
) -> Job | None:
    """One job's triage, or None (said on stderr) when its file is no log or is broken: a
    broken archive member is left out whole, what was read of it cannot be trusted.
    `compare_with`: its passing log, or where none of its name was found."""
    passing, reference, compare_note = (
        _reference(compare_with, compiled.prefilter.name)
        if compare_with is not None
        else (None, None, None)
    )
    classifier = JobClassifier(
        compiled, job_log.name, max_bytes=max_bytes, log_size=job_log.size, passing=passing
    )
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
    if classifier.passing_error is not None:
        reference, compare_note = None, f"not compared: {classifier.passing_error}"
    note = tail_note(classifier.tail)
    if result.time_cut is not None:
        cut = result.time_cut
        note = f"classification stopped at line {cut.line} after {cut.cpu_s:g} s of CPU time"
    if compare_note is not None:
        note = compare_note if note is None else f"{note}; {compare_note}"
    return Job(result, note=note, reference=reference)


def _triage_url(args: argparse.Namespace, url: str) -> None:
    """`triage RUN_URL`: print the triage; with --post, also update the comment (retriage)."""
    settings = load_settings(environment()).require("cli")
    run = parse_run_url(url)
    if args.max_bytes is not None:
        settings = replace(settings, max_log_bytes=args.max_bytes)
    if args.post:
        shown: list[Report] = []

        def show_once(report: Report) -> None:
            shown.append(report)
            print_report(report, args.format, explain=args.explain)

        result = retriage(settings, run, on_report=show_once)
        for line in describe(run, result):
            print(f"triage-bot: {line}", file=sys.stderr)
        if shown:
            return  # else nothing was triaged (every pull request was skipped): print it
    from triage_bot.github_api.github import GitHubError, client_for_repo

    try:
        with client_for_repo(settings, run.repo) as client:
            report = _run_report(args, settings, client, run)
    except GitHubError as exc:
        raise GitHubFailed(f"GitHub: {exc}") from exc
    print_report(report, args.format, explain=args.explain)


def _run_report(
    args: argparse.Namespace,
    settings: Settings,
    client: GitHubClient,
    run: RunUrl,
    found: WorkflowRun | None = None,  # the run as GitHub listed it, when it was
) -> Report:
    """One run's failed jobs triaged as the App triages them (compared with passing runs of
    the same jobs on the pull request's base branch), with the catalog the CLI was given."""
    from triage_bot.triage.pipeline import compare_with_bases
    from triage_bot.triage.run import triage_run

    found = found or client.get_run(run.repo, run.run_id)
    bases = [pull.base.ref for pull in found.pull_requests]
    report, _ = triage_run(
        client,
        run.repo,
        run.run_id,
        run.attempt,
        CompiledCatalog(load(args.catalog)),
        max_log_bytes=settings.max_log_bytes,
        run=found,
        compare=compare_with_bases(settings, bases),  # as the App compares
    )
    return report


def _triage_pull(args: argparse.Namespace, pull: PullUrl) -> None:
    """`triage PR_URL`: every failed run of the pull request's head commit, each triaged as
    `triage RUN_URL` triages it, printed together (see print_reports)."""
    if args.post:
        raise sources.InputError("--post takes a RUN_URL (or use rerun RUN_URL per run)")
    settings = load_settings(environment()).require("cli")
    if args.max_bytes is not None:
        settings = replace(settings, max_log_bytes=args.max_bytes)
    from triage_bot.github_api.github import GitHubError, client_for_repo

    where = f"{pull.repo}#{pull.number}"
    try:
        with client_for_repo(settings, pull.repo) as client:
            head_sha = client.get_pull(pull.repo, pull.number).head.sha
            failed = [
                run
                for run in client.runs_for_commit(pull.repo, head_sha)
                if run.conclusion == "failure"
            ]
            reports = [
                _run_report(args, settings, client, RunUrl(pull.repo, run.id, None), run)
                for run in sorted(failed, key=lambda run: run.id)
            ]
    except GitHubError as exc:
        raise GitHubFailed(f"GitHub: {exc}") from exc
    print(f"triage-bot: {where}: {len(reports)} failed runs of {head_sha[:12]}", file=sys.stderr)
    pull_request = {"pull_request": where, "head_sha": head_sha}
    print_reports(reports, args.format, pull_request, explain=args.explain)


def retriage(
    settings: Settings, run: RunUrl, *, on_report: Callable[[Report], None] | None = None
) -> dict[str, Any]:
    """Triage the run and update its pull requests' comment, as a worker would; the job's
    result (what was posted where). Raises GitHubFailed."""
    from sqlalchemy.exc import SQLAlchemyError

    from triage_bot.github_api.github import GitHubError
    from triage_bot.store.store import LockTimeout, Store
    from triage_bot.triage.pipeline import triage_job

    # The queue's "triage" job for a run named by its URL: the pull requests are found the
    # way a fork's run finds them (by the run's branch and commit).
    payload: dict[str, Any] = {
        "kind": "triage",
        "trigger": "cli",
        "repo": run.repo,
        "installation_id": None,  # the App's installation on the repository is looked up
        "run_id": run.run_id,
        "run_attempt": run.attempt,
        "pull_requests": [],
        "find_pr": True,
    }
    try:
        with closing(Store(settings.database_url)) as store:
            return triage_job(payload, settings, store, on_report=on_report)
    except GitHubError as exc:
        raise GitHubFailed(f"GitHub: {exc}") from exc
    except LockTimeout as exc:
        raise GitHubFailed(f"the comment is being edited by a worker: {exc}") from exc
    except SQLAlchemyError as exc:
        raise GitHubFailed(f"database: {exc}".splitlines()[0]) from exc


def describe(run: RunUrl, result: dict[str, Any]) -> list[str]:
    """What `retriage` did, one line each."""
    where = f"{run.repo} run {run.run_id} attempt {result['run']['attempt']}"
    if "skipped" in result:
        return [f"{where}: not triaged: {result['skipped']}"]
    jobs = result.get("jobs", [])
    known = sum(1 for job in jobs if job.get("root_cause"))
    lines = [f"{where}: {len(jobs)} failed jobs, {known} with a known cause"]
    if not result["comments"]:
        lines.append(f"{where}: belongs to no open pull request; nothing posted")
    for comment in result["comments"]:
        number, action = comment["pr"], comment["action"]
        if "id" in comment:
            lines.append(f"{run.repo}#{number}: comment {comment['id']} {action}")
        else:
            lines.append(f"{run.repo}#{number}: comment not posted ({action})")
    return lines


def print_report(report: Report, chosen: str | None, *, explain: bool = False) -> None:
    output_format = chosen or ("text" if sys.stdout.isatty() else "markdown")
    if output_format == "json":
        print(json.dumps(report_data(report, explain), indent=2, ensure_ascii=False))
        return
    if output_format == "markdown":
        from triage_bot.core.render import render_comment  # jinja2: not for JSON

        sys.stdout.write(render_comment(report))
    else:
        from triage_bot.core.terminal import render_text  # rich: only for the terminal

        sys.stdout.write(render_text(report, *terminal_style()))
    if explain:
        sys.stdout.write(explanation(report))


def print_reports(
    reports: list[Report], chosen: str | None, pull_request: dict[str, str], *, explain: bool
) -> None:
    """Several runs' reports (a pull request's): JSON, one object with each run's report in
    `runs`; markdown, the comment, a section per run; text, each run's view under its name."""
    output_format = chosen or ("text" if sys.stdout.isatty() else "markdown")
    if output_format == "json":
        runs = [{"title": r.title, "url": r.url, **report_data(r, explain)} for r in reports]
        data = {"version": JSON_VERSION, **pull_request, "runs": runs}
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if not reports:
        return  # said on stderr
    if output_format == "markdown":
        from triage_bot.core.render import compose_comment, render_comment_section

        problems = [problem for r in reports for problem in r.setup_problems]
        sections = [render_comment_section(r) for r in reports]
        sys.stdout.write(compose_comment(sections, problems))
        if explain:
            sys.stdout.write("".join(explanation(r) for r in reports))
        return
    from triage_bot.core.terminal import render_text

    style = terminal_style()
    for report in reports:
        sys.stdout.write(f"\n## {report.title} ({report.url})\n" if report.url else "\n")
        sys.stdout.write(render_text(report, *style))
        if explain:
            sys.stdout.write(explanation(report))


def report_data(report: Report, explain: bool) -> dict[str, Any]:
    """The report's JSON; with `explain`, each job with its `candidates`."""
    data = report_json(report)
    if explain:
        for job, shown in zip(report.jobs, data["jobs"], strict=True):
            shown["candidates"] = candidates_json(job.result)
    return data


def terminal_style() -> tuple[int | None, str | None]:
    """The width to wrap the terminal view to and the colours to use: standard output's when
    it is a terminal (rich reads NO_COLOR and TERM=dumb: then no colour), else neither: a
    pipe or a file gets plain lines, unwrapped."""
    from rich.console import Console

    console = Console(file=sys.stdout)
    if not console.is_terminal:
        return None, None
    return console.width, None if console.no_color else console.color_system


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
