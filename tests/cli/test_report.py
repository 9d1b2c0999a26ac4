"""`triage-bot report` on a seeded database (bench/report.py's seed, through the store's own
API), on SQLite and PostgreSQL: the counts and coverage agree with what was recorded, the
likely-flaky keys are the specific ones that passed on a re-run, the unexplained jobs are
clustered by template, and the `catalog new` commands it proposes work as printed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from services import db_url

from triage_bot.cli.cli import main
from triage_bot.store.job_outcomes import JobOutcome, line_key, signature_key
from triage_bot.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.report import UNEXPLAINED, seed  # noqa: E402

__all__ = ["db_url"]  # a fixture

NOW = datetime.now(UTC).replace(microsecond=0)
BIN = Path(sys.executable).parent


def report(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *extra: str
) -> dict[str, Any]:
    monkeypatch.setenv("DATABASE_URL", url)
    capsys.readouterr()
    assert main(["report", "--format", "json", *extra]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.fixture
def seeded(db_url: str) -> tuple[str, list[JobOutcome]]:
    store = Store(db_url)
    try:
        outcomes = seed(store, 3000, now=NOW)
    finally:
        store.close()
    return db_url, outcomes


def test_counts_and_coverage_agree_with_the_recorded_jobs(
    seeded: tuple[str, list[JobOutcome]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, outcomes = seeded
    failed = [o for o in outcomes if o.failed]
    explained = [o for o in failed if o.signature]
    result = report(url, capsys, monkeypatch, "--top", "50")
    assert result["failed_jobs"] == len(failed)
    assert result["explained_jobs"] == len(explained)
    assert result["coverage"] == pytest.approx(len(explained) / len(failed), abs=1e-4)
    expected = Counter(o.signature for o in explained).most_common()
    assert [(s["signature"], s["jobs"]) for s in result["signatures"]] == expected


def test_unexplained_jobs_cluster_by_their_template(
    seeded: tuple[str, list[JobOutcome]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, outcomes = seeded
    unexplained = [o for o in outcomes if o.failed and not o.signature]
    by_template = Counter(_template_of(o.failure_key or "") for o in unexplained)
    clusters = report(url, capsys, monkeypatch, "--top", "50")["unexplained_clusters"]
    # Each seeded template is one cluster, of as many jobs as printed it.
    assert sorted(c["count"] for c in clusters) == sorted(by_template.values())
    for cluster in clusters:
        assert by_template[_template_of(line_key(cluster["example"]))] == cluster["count"]
    ids = [c["signature_id"] for c in clusters]
    assert len(set(ids)) == len(ids)


def _template_of(key: str) -> int:
    """Which of bench/report.py's templates printed the line: the one whose words before the
    first varying part begin it (normalise collapses runs of spaces)."""
    words = key.removeprefix("line:").split()[:2]
    return next(i for i, template in enumerate(UNEXPLAINED) if template.split()[:2] == words)


def test_proposed_commands_draft_signatures_that_pass_lint_and_test(
    seeded: tuple[str, list[JobOutcome]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    url, _ = seeded
    clusters = report(url, capsys, monkeypatch, "--top", "3")["unexplained_clusters"]
    assert len(clusters) == 3
    env = os.environ | {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for cluster in clusters:
        done = subprocess.run(
            ["bash", "-c", cluster["command"]], cwd=tmp_path, env=env, capture_output=True
        )
        assert done.returncode == 0, done.stderr
        drafted = tmp_path / ".github/triage-bot/patterns" / f"{cluster['signature_id']}.yml"
        assert cluster["example"] in drafted.with_suffix(".log").read_text()
        for check in ("lint", "test"):
            checked = subprocess.run(
                [str(BIN / "triage-bot"), "catalog", check, str(drafted)], capture_output=True
            )
            assert checked.returncode == 0, checked.stdout + checked.stderr


def test_likely_flaky_lists_a_specific_key_that_passed_on_rerun_never_a_line(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    specific_key = signature_key("python-pytest-failed", '["tests/test_io.py::test_read"]')
    generic_line = line_key("Error: Process completed with exit code <n>.")
    capture = {"test": "tests/test_io.py::test_read"}
    failed_sig = _job(
        1,
        1,
        "failure",
        signature="python-pytest-failed",
        captures=capture,
        failure_key=specific_key,
    )
    jobs = [
        failed_sig,
        _job(2, 2, "success"),
        _job(3, 1, "failure", run_id=200, failure_key=generic_line),
        _job(4, 2, "success", run_id=200),
    ]
    store = Store(db_url)
    store.outcomes.record(jobs)
    store.close()
    flaky = report(db_url, capsys, monkeypatch)["likely_flaky"]
    assert [(f["repo"], f["key"]) for f in flaky] == [("o/r", specific_key)]
    assert flaky[0]["proofs"] == [failed_sig.url]


def test_repo_and_since_choose_the_jobs(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = line_key("boom")
    store = Store(db_url)
    store.outcomes.record([
        _job(1, 1, "failure", failure_key=key),
        _job(2, 1, "failure", failure_key=key, repo="o/other"),
        _job(3, 1, "failure", failure_key=key, run_id=300,
             finished_at=NOW - timedelta(days=10)),
    ])  # fmt: skip
    store.close()
    assert report(db_url, capsys, monkeypatch)["failed_jobs"] == 3
    assert report(db_url, capsys, monkeypatch, "--repo", "o/r")["failed_jobs"] == 2
    assert report(db_url, capsys, monkeypatch, "--repo", "o/r", "--since", "7d")["failed_jobs"] == 1
    assert report(db_url, capsys, monkeypatch, "--since", "2w")["failed_jobs"] == 3


def test_a_bad_period_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'triage.db'}")
    assert main(["report", "--since", "30 days"]) == 2
    assert "--since" in capsys.readouterr().err


def test_report_of_a_few_thousand_jobs_takes_under_two_seconds(
    seeded: tuple[str, list[JobOutcome]],
) -> None:
    url, _ = seeded
    command = [str(BIN / "triage-bot"), "report", "--format", "html"]
    start = time.perf_counter()
    subprocess.run(command, env=os.environ | {"DATABASE_URL": url}, check=True, capture_output=True)
    # Wall time of a new process, on a shared machine: a generous bound that still catches an
    # order of magnitude (bench/report.py measures it closer).
    assert time.perf_counter() - start < 6.0


def _job(job_id: int, attempt: int, conclusion: str, **changes: Any) -> JobOutcome:
    base = JobOutcome(
        repo="o/r", run_id=100, run_attempt=attempt, job_id=job_id, workflow="CI",
        workflow_id=7, job_name="test", job_full_name="test (3.11)", conclusion=conclusion,
        commit_sha="c1", finished_at=NOW - timedelta(hours=3 - attempt), branch="feature",
        pr_number=12, url=f"https://github.com/o/r/actions/runs/100/job/{job_id}",
    )  # fmt: skip
    return replace(base, **changes)


def test_a_database_without_history_is_named_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{missing}")
    assert main(["report"]) == 1
    assert "no database" in capsys.readouterr().err
    assert not missing.exists()  # the report reads; it creates nothing
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{empty}")
    assert main(["report"]) == 1
    assert "db upgrade" in capsys.readouterr().err
