"""Secrets in logs never reach the comment, the JSON report, the database or the log.

The corpus (secrets_corpus.yaml) holds log lines with made-up secrets of each kind and lines
that must stay as they are. Each secret-bearing line is put in a job's log right above a
failure, so it is evidence; then the offline command line (markdown and JSON) and the App
(the queue, the pipeline, the fake GitHub over HTTP, the SQLite store) triage those logs.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sqlite3
import textwrap
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import WorkflowRun
from helpers import triage_payload
from triage.test_pipeline import FAST, REPO, World, new_world

from triage_bot.cli import cli
from triage_bot.core.redact import REDACTED, redact, redact_lines, redact_window
from triage_bot.core.secret_rules import GITLEAKS_TOML, SKIPPED_RULES, go_regex, load_gitleaks
from triage_bot.github_api.logs import without_query
from triage_bot.service.handler import handle_job
from triage_bot.service.queue import JobQueue, QueueOptions
from triage_bot.service.queue_transport import sqlite_huey
from triage_bot.service.worker import EmbeddedWorker

CORPUS: dict[str, Any] = yaml.safe_load(
    (Path(__file__).with_name("secrets_corpus.yaml")).read_text(encoding="utf-8")
)
SECRET_LINES: list[dict[str, Any]] = CORPUS["secrets"]
BLOCKS: list[dict[str, Any]] = CORPUS["blocks"]
INNOCENT: list[str] = CORPUS["innocent"]
ALL_SECRETS = sorted(
    {s for entry in [*SECRET_LINES, *BLOCKS] for s in entry["secrets"]}, key=len, reverse=True
)
# Lines above a failure per job: the module-not-found signature keeps 12 lines before its
# match, 3 of which are the traceback.
PER_JOB = 8
# The jobs whose logs hold secrets come first (_job_logs); the innocent lines' jobs after.
SECRET_JOBS = -(-len(SECRET_LINES) // PER_JOB) + len(BLOCKS)


def _leaks(text: str) -> list[str]:
    return [secret for secret in ALL_SECRETS if secret in text]


# ---- the redactor on its own ----------------------------------------------------------------


@pytest.mark.parametrize("entry", SECRET_LINES, ids=lambda e: e["line"][:40])
def test_no_secret_survives_its_line(entry: dict[str, Any]) -> None:
    redacted = redact(entry["line"])
    assert REDACTED in redacted
    assert [s for s in entry["secrets"] if s in redacted] == []


@pytest.mark.parametrize("line", INNOCENT)
def test_innocent_lines_stay_as_they_are(line: str) -> None:
    assert redact(line) == line


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b["lines"][1])
def test_a_private_key_over_several_lines_goes_whole(block: dict[str, Any]) -> None:
    lines: list[str] = block["lines"]
    redacted = redact_lines(lines)
    assert _leaks("\n".join(redacted)) == []
    assert [line for line in redacted if line in block["kept"]] == block["kept"]
    begin = next(i for i, line in enumerate(lines) if "-----BEGIN" in line)
    end = next(i for i, line in enumerate(lines) if "-----END" in line)
    # The body is gone line by line; the markers say what was there.
    assert redacted[begin + 1 : end] == [REDACTED] * (end - begin - 1)
    assert redacted[begin] == lines[begin] and redacted[end] == lines[end]
    # A window that starts inside the key, or ends inside it, loses the body it shows.
    assert _leaks("\n".join(redact_lines(lines[begin + 2 :]))) == []
    assert _leaks("\n".join(redact_lines(lines[: end - 1]))) == []


def test_captures_lose_a_secret_whose_context_they_left_behind() -> None:
    line = "login failed for ci with PGPASSWORD=Zq8xW3mP0k"
    redacted, secrets = redact_window([line])
    assert redacted == ["login failed for ci with PGPASSWORD=***"]
    assert secrets == {"Zq8xW3mP0k"}


def test_values_that_only_name_a_secret_are_kept() -> None:
    """The assignment rule's judgment of values (redact.py `_looks_secret`)."""
    kept = ["TOKEN=none", "DB_PASSWORD=$DB_PASSWORD", "TOKEN_FILE=/run/token", "SECRET_KEY=<key>"]
    assert [redact(line) for line in kept] == kept
    assert redact("DB_PASSWORD=12345678") == "DB_PASSWORD=***"  # a number, but a password
    assert redact("api_token=${TOKEN}") == "api_token=${TOKEN}"
    assert redact("SSH_KEY=ab12cd34ef56gh78ij90") == "SSH_KEY=***"  # KEY: long and random
    assert redact("sort_key=created") == "sort_key=created"


# Lines built to make backtracking regexes take seconds to minutes (before the fixes: 25 s
# for the first, 53 s for the second at 64 KiB).
HOSTILE_UNITS = ["curl -s ", "api_key", "token_", "okta ", "-----BEGIN RSA PRIVATE KEY-----"]


@pytest.mark.parametrize("unit", HOSTILE_UNITS)
def test_a_hostile_long_line_is_redacted_in_bounded_time(unit: str) -> None:
    line = (unit * (64 * 1024 // len(unit) + 1))[: 64 * 1024]  # the classifier's longest
    start = time.process_time()
    redact(line)
    assert time.process_time() - start < 1.0


def test_long_lines_are_read_whole() -> None:
    """A long line is read in overlapping pieces: no secret is lost between two."""
    secret = "ghp_ox9yimTcfipZGnzPbDFDyFKm51zfFoWbSrHA"
    for at in (0, 2000, 2030, 4000, 60_000):
        line = "x " * (at // 2) + f"GH_TOKEN={secret} " + "y " * 3000
        assert secret[4:] not in redact(line), at


def test_every_gitleaks_rule_loads_as_python() -> None:
    raw = tomllib.loads(GITLEAKS_TOML.read_text(encoding="utf-8"))
    rules, global_allow = load_gitleaks()
    wanted = [r for r in raw["rules"] if "regex" in r and r["id"] not in SKIPPED_RULES]
    assert len(rules) == len(wanted)
    assert global_allow and all(rule.keywords for rule in rules)


def test_go_regexes_keep_their_meaning() -> None:
    scoped = re.compile(go_regex("a(?i)b|c"))  # Go: (a then case-free b) or case-free c
    assert scoped.fullmatch("aB") and scoped.fullmatch("C") and not scoped.fullmatch("AB")
    posix = re.compile(go_regex(r"\b(pat[[:alnum:]]{4})\z"))
    assert posix.search("TOKEN_patA1b2") and not posix.search("pat!!!!")


def test_urls_are_logged_without_their_query() -> None:
    url = httpx.URL("https://logs.example/x/_apis/jobs/1/signedlogcontent?urlSignature=abc")
    assert str(without_query(url)) == "https://logs.example/x/_apis/jobs/1/signedlogcontent"
    text = "GET https://h.example/p?sig=abc&se=1 failed"
    assert without_query(text) == "GET https://h.example/p failed"


# ---- through the command line: the comment and the JSON report ----------------------------


def _job_logs() -> dict[str, str]:
    """Job name -> log: the corpus lines, a few per job, each job failing on its own module."""
    chunks = [
        [entry["line"] for entry in SECRET_LINES[i : i + PER_JOB]]
        for i in range(0, len(SECRET_LINES), PER_JOB)
    ]
    chunks += [block["lines"] for block in BLOCKS]
    chunks += [INNOCENT[i : i + PER_JOB] for i in range(0, len(INNOCENT), PER_JOB)]
    return {f"job-{n}": _failing_log(lines, f"mod_{n}") for n, lines in enumerate(chunks)}


def _failing_log(lines: list[str], module: str) -> str:
    tail = [
        "Traceback (most recent call last):",
        '  File "/work/app/main.py", line 3, in <module>',
        f"ModuleNotFoundError: No module named '{module}'",
        "##[error]Process completed with exit code 1.",
    ]
    return "\n".join(["##[group]Run pytest", *lines, *tail, ""])


def _evidence_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for job in report["jobs"]:
        matches = [job["root_cause"], *job["also"]] if job["root_cause"] else job["also"]
        for match in matches:
            lines += [*match["before"], match["text"], *match["after"]]
        lines += [f["text"] for f in job["fallback_lines"]]
    return lines


def _assert_evidence_redacted(report: dict[str, Any]) -> None:
    """No secret anywhere, and the corpus lines are there (redacted, or as they were): the
    absence of secrets is not for want of evidence."""
    assert _leaks(json.dumps(report)) == []
    evidence = set(_evidence_lines(report))
    assert {redact(entry["line"]) for entry in SECRET_LINES} <= evidence
    assert set(INNOCENT) <= evidence
    for block in BLOCKS:
        assert set(block["kept"]) <= evidence


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, text in _job_logs().items():
        (folder / f"{name}.log").write_text(text, encoding="utf-8")
    return folder


def test_no_secret_in_the_json_report(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["triage", str(log_dir), "--format", "json"]) == 0
    _assert_evidence_redacted(json.loads(capsys.readouterr().out))


def test_no_secret_in_the_markdown_comment(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["triage", str(log_dir), "--format", "markdown"]) == 0
    comment = capsys.readouterr().out
    assert _leaks(comment) == []
    # Each secret-bearing job's failure is shown, with the lines above it.
    assert all(f"mod_{n}" in comment for n in range(SECRET_JOBS))
    assert comment.count(REDACTED) >= len(SECRET_LINES)


def test_a_capture_of_a_secret_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signature that captures only the value (`(?P<pw>\\S+)`) gets it redacted: the
    line it came from says it is a password."""
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "db-login-failed.yml").write_text(
        textwrap.dedent(
            """\
            id: db-login-failed
            title: Database login failed
            category: infra
            priority: 90
            keywords: [PGPASSWORD]
            pattern: "login refused with PGPASSWORD=(?P<pw>\\\\S+)"
            group_by: [pw]
            summary: "refused: {{ pw }}"
            fix: Use the right password.
            tests:
              match:
                - line: "login refused with PGPASSWORD=x"
                  captures: {pw: x}
              no_match: ["login accepted"]
            """
        ),
        encoding="utf-8",
    )
    log = tmp_path / "db.log"
    log.write_text("connecting\nlogin refused with PGPASSWORD=Zq8xW3mP0k\n", encoding="utf-8")
    args = ["triage", str(log), "--catalog", str(catalog), "--format"]
    assert cli.main([*args, "json"]) == 0
    report = capsys.readouterr().out
    assert cli.main([*args, "markdown"]) == 0
    comment = capsys.readouterr().out
    assert json.loads(report)["groups"][0]["captures"] == {"pw": REDACTED}
    assert "Zq8xW3mP0k" not in report + comment and "refused: " in comment


# ---- through the App: the database and the log ------------------------------------------------


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = new_world(fake_github, tmp_path, f"sqlite:///{tmp_path / 'triage.db'}")
    yield built
    built.store.close()


def _database_text(path: Path) -> dict[str, str]:
    """Every row of every table, as text."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: repr(db.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables}


def _triage_through_the_queue(world: World, tmp_path: Path) -> WorkflowRun:
    # Both a comment and a check run (its annotations carry log lines too).
    world.fake.state.add_file(world.repo, ".github/triage-bot.yml", "report: both\n")
    jobs = [NewJob(name, log=text.encode()) for name, text in _job_logs().items()]
    run = world.fake.state.add_run(world.repo, pull=world.pull, jobs=jobs)
    queue = JobQueue(
        sqlite_huey(tmp_path / "queue.db"),
        world.store,
        QueueOptions(retry_delay=0.1, poll_interval=0.05),
        handler=functools.partial(handle_job, options=FAST),
        settings=world.settings,
    )
    job_id = queue.enqueue("triage", triage_payload(REPO, world.installation.id, run))
    worker = EmbeddedWorker(queue, workers=1).start()
    try:
        deadline = time.monotonic() + 60
        while (record := world.store.jobs.get(job_id)) is None or record.status != "done":
            assert record is None or record.status != "failed", record
            assert time.monotonic() < deadline, "the triage did not finish in 60 s"
            time.sleep(0.05)
    finally:
        worker.stop()
    return run


def test_no_secret_in_the_database_the_comment_or_the_log(
    world: World, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    run = _triage_through_the_queue(world, tmp_path)

    [comment] = world.comments()
    assert _leaks(comment) == [] and comment.count(REDACTED) >= len(SECRET_LINES)
    # Nothing the bot sent GitHub (the comment, the check run and its annotations) has one.
    sent = world.fake.requests(method="POST") + world.fake.requests(method="PATCH")
    assert any(b"/check-runs" in r.path.encode() for r in sent)
    assert _leaks("\n".join(r.body.decode(errors="replace") for r in sent)) == []

    rows = _database_text(tmp_path / "triage.db")
    assert {"triages", "comment_sections"} <= rows.keys()
    assert {table: _leaks(text) for table, text in rows.items() if _leaks(text)} == {}
    triage = world.store.triage(REPO, run.id, run.run_attempt)
    assert triage is not None and triage.report is not None
    _assert_evidence_redacted(triage.report)
    assert REDACTED in rows["comment_sections"]

    messages = [record.getMessage() for record in caplog.records]
    downloads = [m for m in messages if "signedlogcontent" in m]
    assert downloads, "the log downloads were not logged: nothing was checked"
    assert [m for m in messages if "urlSignature" in m or "urlExpires" in m] == []
    assert _leaks("\n".join(messages)) == []
