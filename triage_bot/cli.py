"""The triage-bot command line; `python -m triage_bot` is the same."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from triage_bot import __version__, sources
from triage_bot.catalog import Catalog, load_catalog
from triage_bot.classify import CompiledCatalog, classify
from triage_bot.config import Role, Settings, SettingsError, load_settings
from triage_bot.report import Job, Report, build_report, report_json

if TYPE_CHECKING:
    from triage_bot.github import GitHubClient

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DEFAULT_HOST = "127.0.0.1"
# https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N]: github.com or any GitHub Enterprise
# Server host (its API URL comes from GITHUB_API_URL, not from the run's URL).
_RUN_URL = re.compile(
    r"https?://[^/\s]+/(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"/actions/runs/(?P<run>\d+)(?:/attempts/(?P<attempt>\d+))?/?"
)


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


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="triage-bot",
        description="Triage failed CI: match job logs against a catalog of failure signatures "
        "and show what failed, the evidence and a suggested fix.",
    )
    parser.add_argument("--version", action="version", version=f"triage-bot {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    triage = commands.add_parser(
        "triage",
        help="triage job logs (files, folders, zip archives, - for stdin) or one run by its URL",
        description="Triage job logs offline. Each file is one job, named by its file name; a "
        "folder gives one job per file; a zip archive one job per member; - reads stdin. "
        "Or give one RUN_URL (https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N]) to triage "
        "that run's failed jobs from GitHub, with GITHUB_TOKEN or the App's credentials "
        "(APP_ID, PRIVATE_KEY) and GITHUB_API_URL for GitHub Enterprise Server. "
        "Exit code 0 when the triage ran, whatever it found; 1 when GitHub failed; 2 on "
        "unusable input or a missing or malformed setting.",
    )
    triage.add_argument(
        "paths", nargs="+", metavar="PATH|RUN_URL", help="log file, folder, zip, -, or a run URL"
    )
    triage.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        help="text: terminal view (default on a terminal); markdown: the pull request comment "
        "(default otherwise); json: the report for scripts (see README)",
    )
    triage.add_argument(
        "--catalog",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also load the signatures in DIR (may be repeated)",
    )
    triage.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        metavar="N",
        help="read at most N bytes of each log (default: all of it; for a RUN_URL, "
        "TRIAGE_MAX_LOG_BYTES)",
    )
    triage.add_argument(
        "--post",
        action="store_true",
        help="with a RUN_URL: also create or edit the comment on the run's pull request(s) "
        "(default: print only)",
    )
    _add_service_commands(commands)

    catalog = commands.add_parser("catalog", help="check the signature catalog")
    catalog_commands = catalog.add_subparsers(
        dest="catalog_command", required=True, metavar="COMMAND"
    )
    for name, text in (
        ("lint", "validate signatures: schema, ids, patterns, keywords, templates, backtracking"),
        ("test", "run the signatures' inline examples and their .log windows"),
    ):
        sub = catalog_commands.add_parser(name, help=text, description=text)
        sub.add_argument(
            "paths",
            nargs="*",
            type=Path,
            metavar="PATH",
            help="signature files or folders (default: the built-in catalog)",
        )
    return parser


def _add_service_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the GitHub App: webhook server, and the worker in the same process",
        description="Serve GitHub's webhooks on POST /api/github/webhooks (plus GET /healthz "
        "and GET /metrics) and, unless --no-worker, run the worker in the same process. "
        "Settings come from the environment (see .env.example): WEBHOOK_SECRET, APP_ID and "
        "PRIVATE_KEY (or GITHUB_TOKEN), DATABASE_URL, REDIS_URL, TRIAGE_DATA_DIR, PORT.",
    )
    serve.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    serve.add_argument(
        "--port", type=int, default=None, help="port to listen on (default: PORT, else 8000)"
    )
    serve.add_argument(
        "--no-worker",
        dest="worker",
        action="store_false",
        help="only acknowledge and queue webhooks; `triage-bot worker` processes run the jobs",
    )
    worker = commands.add_parser(
        "worker",
        help="run queued triages (with serve --no-worker; needs REDIS_URL to span machines)",
        description="Run the jobs that `triage-bot serve --no-worker` queues, until SIGTERM "
        "(lets running jobs finish) or SIGINT. Any number may run against one REDIS_URL and "
        "DATABASE_URL.",
    )
    for sub in (serve, worker):
        sub.add_argument(
            "--workers", type=int, default=2, metavar="N", help="worker threads (default 2)"
        )
        sub.add_argument(
            "--dry-run",
            action="store_true",
            help="triage and log the comment's body, but post nothing to GitHub",
        )
        sub.add_argument(
            "--lease",
            type=float,
            default=None,
            metavar="SECONDS",
            help="how long a running job may go without its worker's heartbeat before another "
            "worker takes it over (default 60)",
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "triage":
            return _triage(args)
        if args.command in ("serve", "worker"):
            return _service(args)
        if args.catalog_command == "lint":
            return _catalog_lint(args.paths)
        return _catalog_test(args.paths)
    except sources.InputError as exc:
        print(f"triage-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SettingsError as exc:
        print(f"triage-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


def _settings(*roles: Role) -> Settings:
    return load_settings(os.environ).require(*roles)


def _service(args: argparse.Namespace) -> int:
    # Imported here: the offline commands must not pay for the web and queue stack.
    from triage_bot.queue import QueueOptions
    from triage_bot.server import serve
    from triage_bot.worker import run_worker

    if args.workers < 1:
        raise sources.InputError("--workers must be at least 1")
    defaults = QueueOptions()
    lease = defaults.lease if args.lease is None else args.lease
    if lease <= 0:
        raise sources.InputError("--lease must be positive")
    # A dead worker's job is found by a sweep once its lease ends; sweeping every half lease
    # bounds the wait by 1.5 leases however short the lease is set.
    options = QueueOptions(lease=lease, sweep_interval=min(defaults.sweep_interval, lease / 2))
    if args.command == "worker":
        run_worker(_settings("worker"), args.workers, options=options, dry_run=args.dry_run)
        return EXIT_OK
    roles: tuple[Role, ...] = ("server", "worker") if args.worker else ("server",)
    settings = _settings(*roles)
    serve(
        settings,
        args.host,
        args.port,
        worker=args.worker,
        workers=args.workers,
        dry_run=args.dry_run,
        options=options,
    )
    return EXIT_OK


def _load(extra: list[Path]) -> Catalog:
    for folder in extra:
        if not folder.is_dir():
            raise sources.InputError(f"--catalog {folder}: not a folder")
    catalog = load_catalog()
    if extra:
        catalog = load_catalog(extra, origin="local", base=catalog)
    for problem in catalog.problems:
        print(f"triage-bot: signature skipped: {problem}", file=sys.stderr)
    return catalog


def _triage(args: argparse.Namespace) -> int:
    urls = [path for path in args.paths if _is_url(path)]
    if urls:
        if len(args.paths) > 1:
            raise sources.InputError("give one RUN_URL, or log files, not both or several")
        return _triage_url(args, parse_run_url(urls[0]))
    if args.post:
        raise sources.InputError("--post needs a RUN_URL")
    jobs_in = sources.collect(args.paths)
    compiled = CompiledCatalog(_load(args.catalog))
    jobs: list[Job] = []
    for job_log in jobs_in:
        try:
            stream = job_log.open()
            result = classify(
                sources.read_chunks(stream), compiled, job_log.name, max_bytes=args.max_bytes
            )
        except OSError as exc:
            raise sources.InputError(f"{job_log.name}: cannot read: {exc}") from exc
        note = f"only the first {result.bytes_read:,} bytes were read" if result.truncated else None
        jobs.append(Job(result, note=note))
    _print_report(build_report(jobs), args.format)
    return EXIT_OK


def _print_report(report: Report, chosen: str | None) -> None:
    output_format = chosen or ("text" if sys.stdout.isatty() else "markdown")
    if output_format == "json":
        print(json.dumps(report_json(report), indent=2, ensure_ascii=False))
    elif output_format == "markdown":
        from triage_bot.render import render_comment  # jinja2: not needed for JSON

        sys.stdout.write(render_comment(report))
    else:
        from triage_bot.render import render_text

        sys.stdout.write(render_text(report))


def _triage_url(args: argparse.Namespace, run: RunUrl) -> int:
    from triage_bot.github import GitHubError, client_for_repo
    from triage_bot.pipeline import triage_run

    settings = _settings("cli")
    max_bytes = args.max_bytes if args.max_bytes is not None else settings.max_log_bytes
    compiled = CompiledCatalog(_load(args.catalog))
    try:
        with client_for_repo(settings, run.repo) as client:
            report, body = triage_run(
                client, run.repo, run.run_id, run.attempt, compiled, max_log_bytes=max_bytes
            )
            _print_report(report, args.format)
            if args.post:
                _post(client, run, body)
    except GitHubError as exc:
        print(f"triage-bot: GitHub: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _post(client: GitHubClient, run: RunUrl, body: str) -> None:
    found = client.pulls_for_run(run.repo, client.get_run(run.repo, run.run_id))
    if not found:
        print(f"triage-bot: run {run.run_id} belongs to no open pull request", file=sys.stderr)
    for pull in found:
        result = client.upsert_comment(run.repo, pull.number, body)
        print(f"triage-bot: {run.repo}#{pull.number}: comment {result.action}", file=sys.stderr)


def _catalog_lint(paths: list[Path]) -> int:
    _require_existing(paths)
    from triage_bot import catalog_check

    signatures, problems = catalog_check.lint(paths)
    for problem in problems:
        print(problem)
    print(f"catalog lint: {len(signatures)} signatures, {len(problems)} problems")
    return EXIT_FAILED if problems else EXIT_OK


def _catalog_test(paths: list[Path]) -> int:
    _require_existing(paths)
    from triage_bot import catalog_check

    checks, failures, problems = catalog_check.test(paths)
    for problem in problems:
        print(problem)
    for failure in failures:
        print(failure)
    print(
        f"catalog test: {checks} checks, {len(failures)} failed, {len(problems)} files not loaded"
    )
    return EXIT_FAILED if failures or problems else EXIT_OK


def _require_existing(paths: list[Path]) -> None:
    for path in paths:
        if not path.exists():
            raise sources.InputError(f"{path}: no such file or folder")
