"""The `triage-bot` check run against the fake GitHub: created once per workflow run and
updated on a re-triage, annotations at repository paths of files that exist at the head
commit (sent in batches GitHub takes, never twice); and the path mapping behind them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import CheckRun
from repo_world import MODULE_NOT_FOUND, UNEXPECTED_KEYWORD, WIDGETS, World, example_log, make_world
from services import db_url

from triage_bot.core.render import COMMENT_MARKER
from triage_bot.core.source_refs import SourceRef, candidates, source_refs
from triage_bot.repo.repo_config import CONFIG_PATH
from triage_bot.triage import check_run

__all__ = ["db_url"]  # a fixture
TRITON = "atom/model_ops/attentions/triton_mla.py"
KIMI = "atom/model_ops/attentions/kimi_mla_gdn_attn.py"


def _world(fake: FakeGitHub, url: str, tmp_path: Path, report: str) -> World:
    built = make_world(fake, url, tmp_path)
    built.add_file(WIDGETS, CONFIG_PATH, f"report: {report}\n")
    # The files the tracebacks name that exist at the pull request's head; the others
    # (api_server.py, __init__.py, ...) do not, and get no annotation.
    head = built.pulls[WIDGETS].head_sha
    for path in (TRITON, KIMI):
        built.add_file(WIDGETS, path, "# source\n", ref=head)
    return built


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = _world(fake_github, f"sqlite:///{tmp_path / 'triage.db'}", tmp_path, "check-run")
    yield built
    built.store.close()


def _checks(world: World) -> list[CheckRun]:
    return list(world.fake.state.check_runs.values())


def _run_logs() -> dict[str, bytes]:
    return {name: example_log(name) for name in (MODULE_NOT_FOUND, UNEXPECTED_KEYWORD)}


def test_check_run_report_annotates_repository_paths_and_posts_no_comment(world: World) -> None:
    run = world.failed_run(WIDGETS, _run_logs())
    result = world.triage(WIDGETS, run)
    assert world.comments(WIDGETS) == [] and result["comments"] == []
    [check] = _checks(world)
    assert (check.name, check.head_sha, check.external_id) == (
        "triage-bot",
        run.head_sha,
        str(run.id),
    )
    assert (check.status, check.conclusion) == ("completed", "neutral")
    assert check.output["title"] == "2 failed jobs: 2 known failures"
    summary = check.output["summary"]
    assert "`python-module-not-found`" in summary and COMMENT_MARKER not in summary
    places = {(a["path"], a["start_line"]) for a in check.annotations}
    assert places == {(KIMI, 30), (TRITON, 7)}
    triton = next(a for a in check.annotations if a["path"] == TRITON)
    assert triton["annotation_level"] == "failure" and triton["title"] == "Python module not found"
    assert "No module named 'aiter.ops.triton.attention.mla_decode'" in triton["message"]
    assert result["check_run"] == {"id": check.id, "action": "created", "annotations": 2}
    # Existence was asked of the head commit, a bounded number of times.
    lookups = world.fake.requests(r"/contents/(atom|tests)/")
    assert 0 < len(lookups) <= check_run.MAX_LOOKUPS
    assert all(f"ref={run.head_sha}" in r.query for r in lookups)


@pytest.fixture
def both(fake_github: FakeGitHub, db_url: str, tmp_path: Path) -> Iterator[World]:
    built = _world(fake_github, db_url, tmp_path, "both")
    yield built
    built.store.close()


def test_both_posts_the_comment_and_one_check_run_that_a_retriage_updates(both: World) -> None:
    run = both.failed_run(WIDGETS, _run_logs())
    both.triage(WIDGETS, run)
    both.triage(WIDGETS, run)  # the same run again: the same check run, no new annotation
    both.fake.state.add_attempt(
        run, jobs=[NewJob(UNEXPECTED_KEYWORD, log=_run_logs()[UNEXPECTED_KEYWORD])]
    )
    again = both.triage(WIDGETS, run)
    [body] = both.comments(WIDGETS)
    assert "`python-unexpected-keyword-argument`" in body
    [check] = _checks(both)
    assert check.output["title"] == "1 failed job: 1 known failure"
    assert sorted((a["path"], a["start_line"]) for a in check.annotations) == [
        (KIMI, 30),
        (TRITON, 7),
    ]
    assert again["check_run"] == {"id": check.id, "action": "updated", "annotations": 0}
    assert len(both.fake.requests(r"/check-runs$", method="POST")) == 1
    assert len(both.fake.requests(r"/check-runs/\d+$", method="PATCH")) == 2


def test_annotations_past_one_request_go_in_further_updates(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_run, "ANNOTATIONS_PER_REQUEST", 1)
    world.triage(WIDGETS, world.failed_run(WIDGETS, _run_logs()))
    [check] = _checks(world)
    assert len(check.annotations) == 2
    assert len(world.fake.requests(r"/check-runs$", method="POST")) == 1
    assert len(world.fake.requests(r"/check-runs/\d+$", method="PATCH")) == 1


def test_a_dry_run_creates_no_check_run(world: World) -> None:
    result = world.triage(WIDGETS, world.failed_run(WIDGETS, _run_logs()), dry_run=True)
    assert _checks(world) == [] and result["check_run"]["action"] == "dry_run"


# ---- files and lines in log lines -----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '  File "/__w/widgets/widgets/pkg/mod.py", line 12, in run',
            ("/__w/widgets/widgets/pkg/mod.py", 12),
        ),
        ("src/main.c:12:5: error: 'x' undeclared", ("src/main.c", 12)),
        ("   --> src/lib.rs:40:9", ("src/lib.rs", 40)),
        ("./cmd/tool.go:7:3: undefined: Frob", ("./cmd/tool.go", 7)),
        (
            r"D:\a\widgets\widgets\src\x.cpp(12,5): error C2065: 'y'",
            (r"D:\a\widgets\widgets\src\x.cpp", 12),
        ),
        ("tests/test_x.py:42: AssertionError", ("tests/test_x.py", 42)),
        ("src/app.ts(3,14): error TS2304", ("src/app.ts", 3)),
    ],
)
def test_each_shape_of_file_and_line_is_found(line: str, expected: tuple[str, int]) -> None:
    assert source_refs(line) == [SourceRef(*expected)]


def test_times_and_plain_words_name_no_file() -> None:
    assert source_refs("at 12:30:01 the build took 3:02 minutes, see line 4") == []
    # A path in a traceback is reported once, not again as a compiler's path:line.
    assert len(source_refs('File "a/b.py", line 3, in f; c.py:4: E')) == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/__w/widgets/widgets/pkg/mod.py", ["pkg/mod.py"]),
        ("/home/runner/work/widgets/widgets/pkg/mod.py", ["pkg/mod.py"]),
        ("/home/runner/_work/Widgets/Widgets/pkg/mod.py", ["pkg/mod.py"]),
        (r"D:\a\widgets\widgets\src\x.cpp", ["src/x.cpp"]),
        ("/workspace/ATOM/atom/model_ops/x.py", ["atom/model_ops/x.py"]),
        ("/github/workspace/lib/a.js", ["lib/a.js"]),
        ("/opt/build/widgets/pkg/a.py", ["pkg/a.py"]),
        ("./cmd/tool.go", ["cmd/tool.go"]),
        ("src//lib.rs", ["src/lib.rs"]),
        ("/usr/lib/python3.11/json/decoder.py", []),
        ("../outside/x.py", []),
        ("/__w/widgets/widgets/../../etc/passwd.txt", []),
    ],
)
def test_runner_paths_map_to_repository_paths(raw: str, expected: list[str]) -> None:
    assert candidates(raw, "widgets") == expected
