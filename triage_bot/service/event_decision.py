"""What one webhook delivery comes to: a Decision, with the job or installation change it
carries (made by events.py and the event modules beside it, acted on by server.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from triage_bot.store.store import InstallationChange as InstallationChange
from triage_bot.store.store import InstallationOp as InstallationOp

Outcome = Literal["job", "record", "pong", "ignored", "refused"]


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    reason: str
    job: dict[str, Any] | None = None
    # Jobs with one key that are still waiting in the queue are merged: when twenty matrix
    # jobs of one run fail, one early triage that has not started yet covers them all.
    coalesce_key: str | None = None
    installation: InstallationChange | None = None
