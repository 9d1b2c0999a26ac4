"""`triage-bot triage PR_URL` against the fake GitHub over HTTP: the head commit's failed runs,
each triaged as `triage RUN_URL` triages it, in JSON, markdown and text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import PullRequest, Repo, WorkflowRun
from helpers import EXAMPLES
from triage.test_pipeline import REPO, THREE

from triage_bot.cli.cli import main
from triage_bot.cli.cli_triage import PullUrl, parse_pull_url
from triage_bot.core.render import COMMENT_MARKER

_SETTINGS = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "GITHUB_TOKEN", "DATABASE_URL")
DOCS_JOB = "docs-build"


@dataclass
class Pull:
    fake: FakeGitHub
    repo: Repo
    pull: PullRequest

    def url(self, host: str = "github.com", tail: str = "") -> str:
        return f"https://{host}/{REPO}/pull/{self.pull.number}{tail}"

    def run(
        self,
        name: str,
        jobs: list[NewJob],
        conclusion: str = "failure",
        head_sha: str | None = None,
    ) -> WorkflowRun:
        return self.fake.state.add_run(
            self.repo,
            pull=self.pull,
            name=name,
            jobs=jobs,
            conclusion=conclusion,
            head_sha=head_sha,
        )


def seed_jobs(*names: str) -> list[NewJob]:
    return [NewJob(name, log=(EXAMPLES / f"{name}.log").read_bytes()) for name in names]


@pytest.fixture
def pull(fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pull]:
    for name in _SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("APP_ID", str(fake_github.app_id))
    monkeypatch.setenv("PRIVATE_KEY", fake_github.private_key_pem)
    monkeypatch.setenv("GITHUB_API_URL", fake_github.base_url)
    repo = fake_github.state.add_repo(REPO)
    fake_github.install("octo-org")
    yield Pull(fake_github, repo, fake_github.state.add_pull_request(repo, head_ref="fix-imports"))


def triage_json(url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["triage", url, "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_the_head_commits_failed_runs_each_triaged(
    pull: Pull, capsys: pytest.CaptureFixture[str]
) -> None:
    ci = pull.run("CI", [NewJob("lint", conclusion="success"), *seed_jobs(*THREE)])
    docs = pull.run("Docs", [*seed_jobs(THREE[0])])
    pull.run("Release", [NewJob("publish", conclusion="success")], conclusion="success")
    # A run of the pull request's earlier head commit is not the head's failure.
    pull.run("CI", seed_jobs(THREE[1]), head_sha=pull.fake.state.new_sha())
    data = triage_json(pull.url(), capsys)
    assert data["pull_request"] == f"{REPO}#{pull.pull.number}"
    assert data["head_sha"] == pull.pull.head_sha
    runs = data["runs"]
    assert [(r["title"], r["url"].rsplit("/", 1)[-1]) for r in runs] == [
        ("CI", str(ci.id)),
        ("Docs", str(docs.id)),
    ]
    assert sorted(job["name"] for job in runs[0]["jobs"]) == sorted(THREE)
    assert {g["signature"] for g in runs[0]["groups"]} == {
        "python-unexpected-keyword-argument",
        "python-module-not-found",
        "rust-too-many-open-files",
    }
    assert [g["signature"] for g in runs[1]["groups"]] == ["python-unexpected-keyword-argument"]
    # Each run as `triage RUN_URL` gives it: the same jobs and groups.
    alone = triage_json(runs[1]["url"], capsys)
    assert alone["groups"] == runs[1]["groups"] and alone["jobs"] == runs[1]["jobs"]


def test_markdown_is_the_comment_with_a_section_per_run_and_text_names_each_run(
    pull: Pull, capsys: pytest.CaptureFixture[str]
) -> None:
    pull.run("CI", seed_jobs(THREE[1]))
    pull.run("Docs", seed_jobs(THREE[0]))
    assert main(["triage", pull.url(), "--format", "markdown"]) == 0
    body = capsys.readouterr().out
    assert body.startswith(COMMENT_MARKER) and body.count(COMMENT_MARKER) == 1
    assert "aiter.ops.triton.attention.mla_decode" in body and "block_regions" in body
    assert main(["triage", pull.url(), "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert "\n## CI (" in text and "\n## Docs (" in text
    assert (
        text.index("Python module not found")
        < text.index("## Docs")
        < text.index("Unexpected keyword argument")
    )


def test_enterprise_hosts_and_the_pull_requests_tabs(
    pull: Pull, capsys: pytest.CaptureFixture[str]
) -> None:
    pull.run("CI", seed_jobs(THREE[0]))
    for url in (pull.url("ghe.example.com"), pull.url(tail="/files"), pull.url(tail="/checks")):
        assert len(triage_json(url, capsys)["runs"]) == 1


def test_no_failed_run_an_unknown_pull_request_and_post(
    pull: Pull, capsys: pytest.CaptureFixture[str]
) -> None:
    pull.run("CI", [NewJob("lint", conclusion="success")], conclusion="success")
    assert triage_json(pull.url(), capsys)["runs"] == []
    assert main(["triage", pull.url(), "--format", "text"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "0 failed runs of " in captured.err
    missing = f"https://github.com/{REPO}/pull/999"
    assert main(["triage", missing]) == 1
    assert capsys.readouterr().err.startswith("triage-bot: GitHub: ")
    assert main(["triage", pull.url(), "--post"]) == 2
    assert "--post takes a RUN_URL" in capsys.readouterr().err
    assert main(["triage", f"https://github.com/{REPO}/issues/1"]) == 2
    assert "neither a run URL (" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://github.com/octo-org/widgets/pull/12", PullUrl("octo-org/widgets", 12)),
        ("http://ghe.corp/a-b/c.d_e/pull/3/", PullUrl("a-b/c.d_e", 3)),
        ("https://github.com/o/r/pull/7/commits#top", PullUrl("o/r", 7)),
        ("https://github.com/o/r/actions/runs/7", None),
        ("https://github.com/o/r/pull/x", None),
        ("https://github.com/o/r/pulls/7", None),
        ("https://github.com/o/pull/7", None),
    ],
)
def test_pull_urls(text: str, expected: PullUrl | None) -> None:
    assert parse_pull_url(text) == expected
