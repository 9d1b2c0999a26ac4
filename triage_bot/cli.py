"""The triage-bot command line; `python -m triage_bot` is the same."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from triage_bot import __version__, catalog_check, sources
from triage_bot.catalog import Catalog, load_catalog
from triage_bot.classify import CompiledCatalog, classify
from triage_bot.render import render_comment, render_text
from triage_bot.report import Job, build_report, report_json

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


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
        help="triage job logs (files, folders of job logs, zip archives, or - for stdin)",
        description="Triage job logs offline. Each file is one job, named by its file name; a "
        "folder gives one job per file; a zip archive one job per member; - reads stdin. "
        "Exit code 0 when the triage ran, whatever it found; 2 on unusable input.",
    )
    triage.add_argument("paths", nargs="+", metavar="PATH", help="log file, folder, zip, or -")
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
        help="read at most N bytes of each log (default: all of it)",
    )

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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "triage":
            return _triage(args)
        if args.catalog_command == "lint":
            return _catalog_lint(args.paths)
        return _catalog_test(args.paths)
    except sources.InputError as exc:
        print(f"triage-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
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
    report = build_report(jobs)
    output_format = args.format or ("text" if sys.stdout.isatty() else "markdown")
    if output_format == "json":
        print(json.dumps(report_json(report), indent=2, ensure_ascii=False))
    elif output_format == "markdown":
        sys.stdout.write(render_comment(report))
    else:
        sys.stdout.write(render_text(report))
    return EXIT_OK


def _catalog_lint(paths: list[Path]) -> int:
    _require_existing(paths)
    signatures, problems = catalog_check.lint(paths)
    for problem in problems:
        print(problem)
    print(f"catalog lint: {len(signatures)} signatures, {len(problems)} problems")
    return EXIT_FAILED if problems else EXIT_OK


def _catalog_test(paths: list[Path]) -> int:
    _require_existing(paths)
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
