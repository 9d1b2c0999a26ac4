"""The triage-bot command line; `python -m triage_bot` is the same."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from triage_bot import __version__
from triage_bot.cli import catalog_view, cli_db, cli_report, cli_triage
from triage_bot.config import Role, SettingsError, environment, load_settings, parse_size
from triage_bot.core import sources
from triage_bot.core.engine import UnknownEngine

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DEFAULT_HOST = "127.0.0.1"


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
        help="triage job logs (files, folders, archives, - for stdin), or a run or a pull "
        "request by its URL",
        description="Triage job logs offline. Each file is one job, named by its file name; a "
        "folder gives one job per file; a zip or tar archive one job per member (GitHub's log "
        "archive: one per job); gzip, bzip2 and xz are read compressed, told by their content; "
        "- reads stdin. Empty, binary and document files (README, *.md, images) are skipped "
        "with a note; a broken archive or file is one line on stderr and the rest is triaged. "
        "Or give one RUN_URL (https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N]) to triage "
        "that run's failed jobs from GitHub, with GITHUB_TOKEN or the App's credentials "
        "(APP_ID, PRIVATE_KEY) and GITHUB_API_URL for GitHub Enterprise Server. Or give one "
        "PR_URL (https://HOST/OWNER/REPO/pull/N) to triage each failed run of the pull "
        "request's head commit, as a RUN_URL is triaged (--format json: one object, each "
        "run's report in `runs`). "
        "Exit code 0 when the triage ran, whatever it found; 1 when GitHub failed; 2 when "
        "no log could be read, or on a missing or malformed setting.",
    )
    triage.add_argument(
        "paths",
        nargs="+",
        metavar="PATH|RUN_URL|PR_URL",
        help="log file, folder, archive, -, or a run's or a pull request's URL",
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
        type=_byte_count,
        default=None,
        metavar="SIZE",
        help="read only the last SIZE of each log, from a line start (lines keep their "
        "numbers): 1048576, 500k, 1MiB, 2G (k, M, G count 1024s; default: all of it; for a "
        "RUN_URL, TRIAGE_MAX_LOG_BYTES)",
    )
    triage.add_argument(
        "--explain",
        action="store_true",
        help="also print, per job, every candidate root cause weighed: its score (new, not "
        "in the passing log with --compare; not deferred to a specific error, in the failing "
        "step, not at a low level, not a recovered retry, priority, nearness to the failing "
        "step's end, first) and why it ranks where it does; with --format json, as each "
        "job's `candidates`",
    )
    triage.add_argument(
        "--compare",
        metavar="PASS",
        help="compare with passing logs of the same jobs: a file when one log is triaged, else "
        "a folder (or archive) of passing logs with the same file names. A matched line the "
        "passing log also printed ranks below new ones (marked 'also in the passing run'), "
        "best-guess lines are chosen among the new lines, the JSON says per line whether it "
        "is new, and the reference is named by the passing file's name; a job with no "
        "passing log of its name is not compared (a note says so)",
    )
    triage.add_argument(
        "--post",
        action="store_true",
        help="with a RUN_URL: also create or edit the comment on the run's pull request(s), "
        "as `rerun` does (default: print only; not with --catalog)",
    )
    triage.set_defaults(run=cli_triage.triage)
    _add_service_commands(commands)
    _add_github_commands(commands)
    _add_catalog_commands(commands)
    cli_db.add_db_commands(commands)
    cli_report.add_report_command(commands)
    _add_help_command(commands)
    return parser


def _add_help_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Listed last among the commands; `triage-bot` alone prints the same help.
    topics = sorted(name for name in commands.choices if name != "help")
    help_command = commands.add_parser(
        "help",
        help="print this help, or a command's help",
        description="Print triage-bot's help (the same as triage-bot with no arguments or "
        "--help), or COMMAND's help (the same as triage-bot COMMAND --help).",
    )
    help_command.add_argument(
        "topic", nargs="?", choices=topics, metavar="COMMAND", help=f"one of {', '.join(topics)}"
    )


def _byte_count(text: str) -> int:
    value = parse_size(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"not a size like 1048576, 500k or 1MiB: {text!r}")
    return value


def _add_github_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rerun_command = commands.add_parser(
        "rerun",
        help="triage one run again and update its pull request's comment",
        description="Triage RUN_URL (https://HOST/OWNER/REPO/actions/runs/ID[/attempts/N]; "
        "the latest attempt without /attempts/N) again and create or edit the comment on its "
        "open pull request(s), through the same handler as the workers, under the same "
        "comment lock (in DATABASE_URL, else the SQLite database in TRIAGE_DATA_DIR). As the "
        "App (APP_ID and PRIVATE_KEY) or with GITHUB_TOKEN. Exit code 0 when done, 1 when "
        "GitHub or the database failed, 2 on a bad URL or setting.",
    )
    rerun_command.add_argument("run_url", metavar="RUN_URL", help="the run's URL")
    rerun_command.set_defaults(run=cli_triage.rerun)
    replay = commands.add_parser(
        "replay",
        help="send a saved webhook payload, signed with WEBHOOK_SECRET, to a server",
        description="Send WEBHOOK.json as GitHub would: signed with WEBHOOK_SECRET "
        "(X-Hub-Signature-256), with X-GitHub-Event and a new X-GitHub-Delivery. Prints the "
        "answer's status and reason. Exit code 0 on a 2xx answer, 1 otherwise, 2 on a "
        "missing secret or an unreadable file.",
    )
    replay.add_argument("payload", type=Path, metavar="WEBHOOK.json", help="the payload")
    replay.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="the server, e.g. http://127.0.0.1:8000 (without a path: /api/github/webhooks)",
    )
    replay.add_argument(
        "--event",
        metavar="NAME",
        help="X-GitHub-Event (default: the payload's folder name when it is one of GitHub's "
        "events, as in GitHub's examples: workflow_run/completed.payload.json)",
    )
    replay.add_argument("--delivery", metavar="ID", help="X-GitHub-Delivery (default: a new uuid)")
    replay.set_defaults(run=_replay)


def _add_catalog_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    catalog = commands.add_parser("catalog", help="check the signature catalog, or add to it")
    catalog_commands = catalog.add_subparsers(
        dest="catalog_command", required=True, metavar="COMMAND"
    )
    for name, text in (
        (
            "lint",
            "validate signatures: schema, ids, patterns, keywords, templates, linear time; "
            "warn of triggers too common in the near-miss log",
        ),
        ("test", "run the signatures' inline examples and their .log windows"),
    ):
        sub = catalog_commands.add_parser(name, help=text, description=text)
        sub.set_defaults(run=_lint if name == "lint" else _test)
        sub.add_argument(
            "paths",
            nargs="*",
            type=Path,
            metavar="PATH",
            help="signature files or folders (default: the built-in catalog)",
        )
    _add_catalog_browsing(catalog_commands)
    new = catalog_commands.add_parser(
        "new",
        help="draft a signature and its .log window from a line of a real log",
        description="Write DIR/ID.yml and DIR/ID.log from line N of a job log: the line "
        "escaped as the pattern, its longest plain words as the keyword, the tests filled "
        "in, placeholders that say what to write, and the log's lines around it (20 before, "
        "5 after) as the window. The draft passes `catalog lint` and `catalog test` as it "
        "is; then generalise it (see patterns/README.md). Exit code 2 with one line on a "
        "bad id, an existing file, or a line that is blank or outside the log.",
    )
    new.add_argument("id", metavar="ID", help="the signature's id: lower-case words joined by -")
    new.add_argument(
        "--from-log", required=True, metavar="FILE", help="the job log (a file, .gz, or -)"
    )
    new.add_argument(
        "--line", required=True, type=int, metavar="N", help="the failure's line (from 1)"
    )
    new.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where to write (default: the current folder; the catalog's own folders are "
        "patterns/<ecosystem>, a repository's .github/triage-bot/patterns)",
    )
    new.add_argument(
        "--category", default="build", metavar="C", help="the signature's category (default build)"
    )
    new.add_argument("--title", metavar="T", help="the signature's title (default: a TODO)")
    new.add_argument("--force", action="store_true", help="replace DIR/ID.yml and DIR/ID.log")
    new.set_defaults(run=_new)


def _add_catalog_browsing(
    catalog_commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    listing = catalog_commands.add_parser(
        "list",
        help="list the signatures: id, category, title",
        description="List the signatures by id, one a line: id, category, title. Offline. "
        "Exit code 2 when no signature is of --category (the categories are named).",
    )
    listing.add_argument("--category", metavar="C", help="only the signatures of category C")
    listing.set_defaults(run=catalog_view.list_signatures)
    explain = catalog_commands.add_parser(
        "explain",
        help="show what one signature matches, says and suggests",
        description="Show signature ID: title, category and priority, what it matches (its "
        "pattern and keywords), an example line from its tests, the summary and fix with each "
        "capture as <name>, its references, and the paths of its .yml and .log. Offline. "
        "Exit code 2 on an unknown ID, with the closest ids.",
    )
    explain.add_argument("id", metavar="ID", help="the signature's id (see catalog list)")
    explain.set_defaults(run=catalog_view.explain)
    for sub in (listing, explain):
        sub.add_argument(
            "--catalog",
            action="append",
            default=[],
            type=Path,
            metavar="DIR",
            help="also load the signatures in DIR (may be repeated)",
        )


def _add_service_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the GitHub App: webhook server, and the worker in the same process",
        description="Serve GitHub's webhooks on POST /api/github/webhooks (plus GET /healthz "
        "and GET /metrics) and, unless --no-worker, run the worker in the same process. "
        "With GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (the App's OAuth client) it also "
        "serves the dashboard at /dashboard, to GitHub users signed in through the App, each "
        "seeing only the repositories they can read. "
        "Settings come from the environment and a .env file in the working directory (see "
        ".env.example): WEBHOOK_SECRET, APP_ID and PRIVATE_KEY (or GITHUB_TOKEN), "
        "DATABASE_URL, REDIS_URL, TRIAGE_DATA_DIR, PORT, GITHUB_CLIENT_ID, "
        "GITHUB_CLIENT_SECRET, DASHBOARD_SESSION_KEY.",
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
        sub.set_defaults(run=_service)
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
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    if not arguments:
        # A newcomer's first try: show what there is rather than a usage error.
        parser.print_help()
        return EXIT_OK
    args = parser.parse_args(arguments)
    if args.command == "help":
        if args.topic is None:
            parser.print_help()
        else:
            parser.parse_args([args.topic, "--help"])  # prints the command's help and exits 0
        return EXIT_OK
    try:
        # Each command's function returns its exit code, or None when it did what it was asked.
        exit_code: int | None = args.run(args)
    except (sources.InputError, SettingsError, UnknownEngine) as exc:
        print(f"triage-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except cli_triage.GitHubFailed as exc:
        print(f"triage-bot: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_OK if exit_code is None else exit_code


def _service(args: argparse.Namespace) -> None:
    # Imported here: the offline commands must not pay for the web and queue stack.
    from triage_bot.core.render import set_catalog_url
    from triage_bot.service.queue import QueueOptions
    from triage_bot.service.server import serve
    from triage_bot.service.worker import run_worker

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
        settings = load_settings(environment()).require("worker")
        set_catalog_url(settings.catalog_url)
        run_worker(settings, args.workers, options=options, dry_run=args.dry_run)
        return
    roles: tuple[Role, ...] = ("server", "worker") if args.worker else ("server",)
    settings = load_settings(environment()).require(*roles)
    set_catalog_url(settings.catalog_url)
    serve(
        settings,
        args.host,
        args.port,
        worker=args.worker,
        workers=args.workers,
        dry_run=args.dry_run,
        options=options,
    )


def _replay(args: argparse.Namespace) -> int:
    from triage_bot.cli import replay

    secret = load_settings(environment()).webhook_secret
    if not secret:
        raise SettingsError("WEBHOOK_SECRET", "required to sign the payload (the server's secret)")
    answer = replay.replay(args.payload, args.to, secret, event=args.event, delivery=args.delivery)
    print(answer.text)
    return EXIT_OK if answer.ok else EXIT_FAILED


def _lint(args: argparse.Namespace) -> int:
    # Imported here: it brings the near-miss sample's builder, 0.35 s that `triage` and the
    # service must not pay at every start.
    from triage_bot.catalog_tools import catalog_check

    _require_existing(args.paths)
    signatures, problems = catalog_check.lint(args.paths)
    warnings = catalog_check.lint_warnings(signatures, problems)
    for problem in [*problems, *warnings]:
        print(problem)
    counted = f", {len(warnings)} warnings" if warnings else ""
    print(f"catalog lint: {len(signatures)} signatures, {len(problems)} problems{counted}")
    return EXIT_FAILED if problems else EXIT_OK  # a warning alone passes


def _test(args: argparse.Namespace) -> int:
    from triage_bot.catalog_tools import catalog_check

    _require_existing(args.paths)
    checks, failures, problems = catalog_check.test(args.paths)
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


def _new(args: argparse.Namespace) -> int:
    from triage_bot.catalog_tools import catalog_new

    request = catalog_new.Request(
        ident=args.id,
        log=args.from_log,
        line=args.line,
        folder=args.dir,
        category=args.category,
        title=args.title,
        force=args.force,
    )
    draft = catalog_new.create(request)
    print(f"wrote {draft.signature} and {draft.window} (priority {draft.priority})")
    if draft.outranks is not None:
        other = draft.outranks
        print(
            f"note: {other.id} (priority {other.priority}, {other.path}) also matches this line;"
            f" if it explains this failure, improve it instead of adding {args.id}",
            file=sys.stderr,
        )
    if draft.problems:
        for problem in draft.problems:
            print(problem)
        print(
            "catalog new: the draft fails these checks; where it wins a line of another "
            "signature's window, improve that signature instead"
        )
        return EXIT_FAILED
    print(
        "next: generalise the pattern and replace the TODOs (see patterns/README.md), then run\n"
        f"  triage-bot catalog lint {draft.signature} && triage-bot catalog test {draft.signature}"
    )
    return EXIT_OK
