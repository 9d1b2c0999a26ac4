"""Small builders shared by the core tests."""

from __future__ import annotations

import textwrap
from functools import cache
from pathlib import Path
from typing import Any

from fakegithub import FakeGitHub
from fakegithub.models import WorkflowRun

from triage_bot.config import Settings
from triage_bot.core.catalog import Catalog, load_catalog
from triage_bot.core.classify import CompiledCatalog, classify
from triage_bot.core.classify_results import JobResult

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "pr-2664"
# GitHub's webhook payloads, their schemas and the REST API subset, vendored so that a clone
# is the whole project (provenance and licences: tests/github_data/SOURCES.md).
GITHUB_DATA = ROOT / "tests" / "github_data"
WEBHOOKS = GITHUB_DATA / "webhooks"


@cache
def builtin() -> Catalog:
    return load_catalog()


@cache
def _compiled_builtin(engine: str | None) -> CompiledCatalog:
    return CompiledCatalog(builtin(), engine)


def compiled(engine: str | None = None, catalog: Catalog | None = None) -> CompiledCatalog:
    return CompiledCatalog(catalog, engine) if catalog else _compiled_builtin(engine)


def run_log(
    text: str | bytes, engine: str | None = None, chunk: int = 1 << 20, **kwargs: object
) -> JobResult:
    data = text.encode() if isinstance(text, str) else text
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)] or [b""]
    return classify(chunks, compiled(engine), "job", **kwargs)  # type: ignore[arg-type]


def write_signature(folder: Path, ident: str, body: str) -> Path:
    path = folder / f"{ident}.yml"
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path


def triage_payload(
    repo: str, installation_id: int, run: WorkflowRun, **changes: Any
) -> dict[str, Any]:
    """The queue job events.py makes of this run's workflow_run webhook."""
    job: dict[str, Any] = {
        "kind": "triage",
        "trigger": "workflow_run",
        "repo": repo,
        "installation_id": installation_id,
        "run_id": run.id,
        "run_attempt": run.run_attempt,
        "head_sha": run.head_sha,
        "head_branch": run.head_branch,
        "pull_requests": list(run.pull_request_numbers),
        "find_pr": not run.pull_request_numbers,
        "workflow": run.name,
        "conclusion": "failure",
    }
    return {**job, **changes}


# `serve` with a worker whose handler only records a comment: the server's own behaviour,
# in a process of its own (python -c SERVE PORT).
SERVE = textwrap.dedent(
    """
    import os, sys
    from triage_bot.config import load_settings
    from triage_bot.service.queue import QueueOptions
    from triage_bot.service.server import serve

    def handler(payload, context):
        context.store.record_comment(payload["repo"], 1, 1, "hash", payload["head_sha"])
        return {"triaged": payload["run_id"]}

    serve(load_settings(os.environ), "127.0.0.1", int(sys.argv[1]), worker=True, workers=1,
          handler=handler, options=QueueOptions(poll_interval=0.05))
    """
)


def app_settings(
    fake: FakeGitHub, data_dir: Path, database_url: str | None = None, **changes: Any
) -> Settings:
    """The settings of the App installed on the fake GitHub: its id, key and API, `data_dir`,
    and `database_url` (default: an SQLite file in `data_dir`); `changes`: other settings."""
    return Settings(
        app_id=fake.app_id,
        private_key=fake.private_key_pem,
        github_api_url=fake.base_url,
        database_url=database_url or f"sqlite:///{data_dir / 'triage.db'}",
        data_dir=data_dir,
        **changes,
    )
