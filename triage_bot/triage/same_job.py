"""Which jobs and runs are "the same" from one run to the next: the base-branch comparison
(baseline.py) and the passing references (reference.py) both ask."""

from __future__ import annotations

import re

from triage_bot.github_api.github import GitHubClient, WorkflowRun, run_from_fork

_MATRIX_SUFFIX = re.compile(r"\s+\([^()]*\)$")
# A shard's number after the job's name, in the spellings CI configs use: "test 2/4",
# "test [2/4]", "test-shard-2", "tests shard 2 of 4", "e2e (part 3)" (parentheses: _MATRIX_SUFFIX).
_SHARD_SUFFIX = re.compile(
    r"(?:[\s_-]*\b(?:shard|part|chunk|split|slice|group)[\s_-]*\d+(?:\s*(?:/|of|-of-)\s*\d+)?"
    r"|\s*\[\s*\d+\s*(?:/|of)\s*\d+\s*\]|\s+\d+\s*/\s*\d+)$",
    re.IGNORECASE,
)


def base_job_name(name: str) -> str:
    """The job's name without its matrix values: "test (3.11, ubuntu)" -> "test"."""
    return _MATRIX_SUFFIX.sub("", name) or name


def job_family(name: str) -> str:
    """The job's name without its matrix values and shard number: the jobs of one family run
    the same steps ("test (3.11) shard 2/4" -> "test"), so one passing is a fair reference
    for a failing other."""
    # A job of a reusable workflow is named "caller (matrix) / called (matrix)": each part
    # carries its own matrix values and shard number.
    return " / ".join(_family_part(part) for part in name.split(" / ")).strip() or name


def _family_part(name: str) -> str:
    # The matrix values may come before the shard number or after it.
    unsharded = _SHARD_SUFFIX.sub("", base_job_name(name)).strip()
    return base_job_name(unsharded).strip() or name


def base_runs(client: GitHubClient, run: WorkflowRun, base_ref: str) -> list[WorkflowRun]:
    """The base branch's finished runs of the run's workflow, newest first (one request).
    The passing reference of each failed job (reference.py) is looked for among them too."""
    repo = run.repository.full_name
    runs = client.list_workflow_runs(repo, run.workflow_id, base_ref, status="completed")
    # A pull request whose head branch has the base's name (a fork's `main`) is not the base.
    return [
        candidate
        for candidate in runs
        if not run_from_fork(candidate)
        and not candidate.event.startswith("pull_request")
        and candidate.id != run.id
    ]


def same_workflow(candidate: WorkflowRun, run: WorkflowRun) -> bool:
    """The same workflow file (a run's `path` may end in "@ref" for a reusable workflow)."""
    if candidate.workflow_id == run.workflow_id:
        return True
    return bool(run.path) and candidate.path.split("@")[0] == run.path.split("@")[0]
