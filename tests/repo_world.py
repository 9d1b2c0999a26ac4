"""A world for the per-repository tests: two repositories of one installation, each with an
open pull request, the store, and triage_job run as the queue runs it."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakegithub import FakeGitHub, NewJob
from fakegithub.models import Installation, PullRequest, Repo, WorkflowRun
from helpers import EXAMPLES, app_settings, triage_payload
from triage.test_pipeline import FAST

from triage_bot.config import Settings
from triage_bot.repo import repo_config
from triage_bot.store.store import Store
from triage_bot.triage import check_run
from triage_bot.triage.pipeline import triage_job

WIDGETS, GADGETS = "octo-org/widgets", "octo-org/gadgets"
MODULE_NOT_FOUND = "kimi-k3-mxfp4-1p1d-tp8-dspark7-agentic-1m-c1"
UNEXPECTED_KEYWORD = "unit-tests-mi350x"
OWN_SIGNATURE = ".github/triage-bot/patterns/widgets-frob-out-of-sync.yml"
OWN_SIGNATURE_TEXT = """\
id: widgets-frob-out-of-sync
title: Frobnicator out of sync
category: build
priority: 70
keywords: ["FROB-SYNC"]
pattern: "FROB-SYNC: frobnicator (?P<name>\\\\w+) is out of sync"
group_by: [name]
summary: "frobnicator {{ name | code }} is out of sync"
fix: |
  Run `make frob-sync` and commit what it changes.
tests:
  match:
    - line: "FROB-SYNC: frobnicator alpha is out of sync"
      captures: {name: alpha}
  no_match: ["frobnicator alpha is in sync"]
"""
FROB_LOG = b"""\
2026-10-21T09:00:00.0000000Z ##[group]Run make check
2026-10-21T09:00:00.1000000Z checking the frobnicators
2026-10-21T09:00:00.2000000Z FROB-SYNC: frobnicator alpha is out of sync
2026-10-21T09:00:00.3000000Z ##[error]Process completed with exit code 2.
"""


@dataclass
class World:
    fake: FakeGitHub
    installation: Installation
    repos: dict[str, Repo]
    pulls: dict[str, PullRequest]
    settings: Settings
    store: Store

    def add_file(self, repo: str, path: str, text: str, *, ref: str | None = None) -> None:
        self.fake.state.add_file(self.repos[repo], path, textwrap.dedent(text), ref=ref)

    def remove_file(self, repo: str, path: str) -> None:
        with self.fake.state.lock:
            files = self.fake.state.files[(self.repos[repo].id, "main")]
            del files[path]

    def failed_run(self, repo: str, logs: dict[str, bytes], **kw: Any) -> WorkflowRun:
        jobs = [NewJob(name, log=log) for name, log in logs.items()]
        pull = self.pulls[repo]
        return self.fake.state.add_run(self.repos[repo], pull=pull, jobs=jobs, **kw)

    def triage(self, repo: str, run: WorkflowRun, **kw: Any) -> dict[str, Any]:
        job = triage_payload(repo, self.installation.id, run)
        return triage_job(job, self.settings, self.store, options=FAST, **kw)

    def comments(self, repo: str) -> list[str]:
        pull = self.pulls[repo]
        return [c.body for c in self.fake.state.comments_on(self.repos[repo], pull.number)]


def make_world(fake: FakeGitHub, database_url: str, data_dir: Path) -> World:
    # The caches are per process and the fake's commits and names repeat from test to test.
    repo_config.clear_caches()
    check_run.clear_cache()
    repos = {name: fake.state.add_repo(name) for name in (WIDGETS, GADGETS)}
    pulls = {name: fake.state.add_pull_request(r, author="alice") for name, r in repos.items()}
    settings = app_settings(fake, data_dir, database_url)
    return World(fake, fake.install("octo-org"), repos, pulls, settings, Store(database_url))


def example_log(name: str) -> bytes:
    return (EXAMPLES / f"{name}.log").read_bytes()
