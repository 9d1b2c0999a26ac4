"""Small value objects that describe jobs and steps to create, so `State.add_run` reads well."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class NewStep:
    name: str
    conclusion: str | None = "success"
    status: str = "completed"


@dataclass(frozen=True)
class NewJob:
    name: str
    conclusion: str | None = "failure"
    status: str = "completed"
    steps: Sequence[NewStep] | None = None  # None: a typical checkout/test job, see default_steps
    log: bytes | str | None = b""
    html_url: str | None = None
    labels: Sequence[str] = ("ubuntu-latest",)


def default_steps(job_conclusion: str | None) -> list[NewStep]:
    """The step list of a plain job whose third step decides the job's outcome."""
    return [
        NewStep("Set up job"),
        NewStep("Run actions/checkout@v4"),
        NewStep("Run tests", conclusion=job_conclusion),
        NewStep("Complete job"),
    ]
