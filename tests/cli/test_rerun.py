"""`triage-bot rerun RUN_URL` (and `triage RUN_URL --post`) against the fake GitHub over HTTP:
the queue's own handler, the database the settings name (SQLite and PostgreSQL), the App or a
token, the latest attempt, and the cases where nothing may be posted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import WorkflowRun
from helpers import EXAMPLES, app_settings
from services import db_url
from triage.test_pipeline import REPO, THREE, World, failed_run

from triage_bot.cli.cli import main
from triage_bot.core.render import COMMENT_MARKER
from triage_bot.store.store import Store

__all__ = ["db_url"]  # fixtures
_SETTINGS = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "GITHUB_TOKEN", "DATABASE_URL")


@pytest.fixture
def world(
    fake_github: FakeGitHub, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """test_pipeline's world, with the settings in the environment as the command reads them."""
    settings = app_settings(fake_github, tmp_path / "data", db_url)
    for name in _SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("APP_ID", str(settings.app_id))
    monkeypatch.setenv("PRIVATE_KEY", fake_github.private_key_pem)
    monkeypatch.setenv("GITHUB_API_URL", settings.github_api_url)
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(settings.data_dir))
    repo = fake_github.state.add_repo(REPO)
    installation = fake_github.install("octo-org")
    pull = fake_github.state.add_pull_request(repo, author="alice", head_ref="fix-imports")
    store = Store(db_url)
    yield World(fake_github, repo, installation, pull, settings, store)
    store.close()


def url(run: WorkflowRun, attempt: int | None = None) -> str:
    tail = f"/attempts/{attempt}" if attempt else ""
    return f"https://github.com/{REPO}/actions/runs/{run.id}{tail}"


def test_rerun_posts_then_edits_the_one_comment_through_the_store(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    run = failed_run(world)
    assert main(["rerun", url(run)]) == 0
    out = capsys.readouterr().out
    assert f"{REPO} run {run.id} attempt 1: 3 failed jobs, 3 with a known cause" in out
    [body] = world.comments()
    assert body.startswith(COMMENT_MARKER) and "block_regions" in body
    assert f"{REPO}#{world.pull.number}: comment " in out and " created" in out
    # The handler recorded it in the database the settings name, under the comment lock.
    recorded = world.store.comment(REPO, world.pull.number)
    assert recorded is not None and recorded.head_sha == run.head_sha
    assert {f.job_name for f in world.store.failures.of_run(REPO, run.id)} >= {THREE[0]}
    assert main(["rerun", url(run)]) == 0
    assert " unchanged" in capsys.readouterr().out
    assert len(world.comments()) == 1


def test_rerun_takes_the_latest_attempt_unless_told(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    run = failed_run(world)
    world.fake.state.add_attempt(
        run, jobs=[NewJob(THREE[0], log=(EXAMPLES / f"{THREE[0]}.log").read_bytes())]
    )
    assert main(["rerun", url(run)]) == 0
    assert "attempt 2: 1 failed jobs" in capsys.readouterr().out
    assert "aiter" not in world.comments()[0]
    assert main(["rerun", url(run, attempt=1)]) == 0
    printed = capsys.readouterr().out
    assert "attempt 1: 3 failed jobs" in printed
    # The comment keeps describing the latest attempt: an older one never replaces it.
    assert "comment not posted (superseded)" in printed
    assert "aiter" not in world.comments()[0]


def test_rerun_with_a_token_and_nothing_to_post(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("APP_ID")
    monkeypatch.delenv("PRIVATE_KEY")
    monkeypatch.setenv("GITHUB_TOKEN", world.fake.token_for(world.installation))
    run = failed_run(world)
    world.pull.head_sha = world.fake.state.new_sha()  # a push landed since the run
    assert main(["rerun", url(run)]) == 0
    assert f"not triaged: #{world.pull.number}: stale" in capsys.readouterr().out
    assert world.comments() == []
    lone = world.fake.state.add_run(
        world.repo, head_branch="main", jobs=[NewJob(THREE[0], log=b"boom\n")]
    )
    assert main(["rerun", url(lone)]) == 0
    assert "belongs to no open pull request; nothing posted" in capsys.readouterr().out


def test_rerun_refuses_bad_input_and_says_when_github_fails(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rerun", f"https://github.com/{REPO}/actions/123"]) == 2
    assert "not a run URL" in capsys.readouterr().err
    assert main(["rerun", f"https://github.com/{REPO}/actions/runs/999999"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("triage-bot: GitHub: ") and err.count("\n") == 1
    monkeypatch.delenv("PRIVATE_KEY")
    assert main(["rerun", f"https://github.com/{REPO}/actions/runs/1"]) == 2
    assert "PRIVATE_KEY: required with APP_ID" in capsys.readouterr().err


def test_triage_post_prints_the_report_and_posts_like_rerun(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    run = failed_run(world)
    assert main(["triage", url(run), "--format", "markdown", "--post"]) == 0
    captured = capsys.readouterr()
    assert world.comments() == [captured.out]
    assert f"{REPO}#{world.pull.number}: comment " in captured.err
    assert main(["triage", url(run), "--post", "--catalog", "."]) == 2
    assert "drop --catalog" in capsys.readouterr().err
    # Every pull request skipped: the report is still printed, and nothing is posted.
    world.pull.head_sha = world.fake.state.new_sha()
    assert main(["triage", url(run), "--format", "json", "--post"]) == 0
    captured = capsys.readouterr()
    assert '"python-module-not-found"' in captured.out and "stale" in captured.err
    assert len(world.comments()) == 1
