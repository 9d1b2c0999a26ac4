"""The dashboard's test world: a fake GitHub with the App installed on `acme`, users with and
without access, a store seeded with job outcomes whose strings tell each repository apart,
and the settings that point `serve` at the fake's OAuth client.

  acme/widgets   alice reads it (role "read"); its data: WIDGETS_SIGNATURE failed
                 WIDGETS_FAILED times
  acme/vault     installed, alice has no role, bob does ("write"); its data: VAULT_* strings,
                 which must never reach alice
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fakegithub import FakeGitHub

from triage_bot.config import Settings, load_settings
from triage_bot.store.job_outcomes import JobOutcome
from triage_bot.store.store import Store

WEBHOOK_SECRET = "dashboard-tests-webhook-secret"
WIDGETS, VAULT = "acme/widgets", "acme/vault"
WIDGETS_SIGNATURE = "widgets-sprocket-timeout"
WIDGETS_FAILED = 7
VAULT_SIGNATURE = "vault-zebra-quartz-leak"
VAULT_JOB = "vault-ultraviolet-integration"
VAULT_FAILED = 13
# Strings only acme/vault's data holds: none may appear on a page alice is shown.
VAULT_STRINGS = (VAULT_SIGNATURE, VAULT_JOB, "ultraviolet", "zebra-quartz")


@dataclass
class World:
    fake: FakeGitHub
    settings: Settings
    store: Store


def dashboard_settings(fake: FakeGitHub, data_dir: Path, **extra: str) -> Settings:
    env = {
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "TRIAGE_DATA_DIR": str(data_dir),
        "GITHUB_API_URL": fake.base_url,
        "GITHUB_CLIENT_ID": fake.client_id,
        "GITHUB_CLIENT_SECRET": fake.client_secret,
        **extra,
    }
    return load_settings(env)


def seed_github(fake: FakeGitHub) -> None:
    widgets = fake.state.add_repo(WIDGETS)
    vault = fake.state.add_repo(VAULT, private=True)
    fake.state.add_repo("elsewhere/unrelated")
    fake.install("acme")
    fake.state.grant(widgets, "alice", "read")
    fake.state.grant(vault, "bob", "write")
    fake.state.user("mallory")  # a GitHub user with no role anywhere


def outcomes(repo: str, signature: str, job: str, failed: int, now: datetime) -> list[JobOutcome]:
    """`failed` failed jobs of `repo` under `signature` in the last days, and one that passed."""
    runs = [
        JobOutcome(
            repo=repo,
            run_id=1000 + number,
            run_attempt=1,
            job_id=50_000 + number,
            workflow="CI",
            workflow_id=7,
            job_name=job,
            job_full_name=f"{job} (shard {number})",
            conclusion="failure",
            commit_sha=f"{number:040x}",
            finished_at=now - timedelta(hours=3 * number + 1),
            signature=signature,
            failure_key=f"sig:{signature}:[]",
            branch="main",
        )
        for number in range(failed)
    ]
    passed = JobOutcome(
        repo=repo,
        run_id=999,
        run_attempt=1,
        job_id=49_999,
        workflow="CI",
        workflow_id=7,
        job_name=job,
        job_full_name=job,
        conclusion="success",
        commit_sha="f" * 40,
        finished_at=now - timedelta(hours=2),
        branch="main",
    )
    return [*runs, passed]


def seed_store(store: Store, now: datetime | None = None) -> None:
    now = now or datetime.now(UTC)
    store.outcomes.record(outcomes(WIDGETS, WIDGETS_SIGNATURE, "unit-tests", WIDGETS_FAILED, now))
    store.outcomes.record(outcomes(VAULT, VAULT_SIGNATURE, VAULT_JOB, VAULT_FAILED, now))


@contextmanager
def dashboard_world(data_dir: Path, **extra: str) -> Iterator[World]:
    with FakeGitHub() as fake:
        seed_github(fake)
        settings = dashboard_settings(fake, data_dir, **extra)
        store = Store(settings.database_url)
        try:
            seed_store(store)
            yield World(fake, settings, store)
        finally:
            store.close()
