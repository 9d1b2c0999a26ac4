"""Webhook event -> job decisions, on GitHub's own example payloads (octokit/webhooks).

Where a test changes an example (a failing conclusion instead of `success`), the changed
payload is checked against GitHub's schema first, so the test stays about payloads GitHub
can really send.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest
from helpers import GITHUB_DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from referencing import Registry, Resource

from triage_bot.service.events import HANDLED_EVENTS, decide
from triage_bot.store.store import InstallationChange

EXAMPLES = GITHUB_DATA / "webhooks"
SCHEMAS = GITHUB_DATA / "webhook-schemas"


def example(event: str, name: str) -> dict[str, Any]:
    path = EXAMPLES / event / name
    if not path.exists():
        pytest.fail(f"GitHub's example payloads are missing: {path}")
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


@cache
def _registry() -> Registry[Any]:
    resources = []
    for path in SCHEMAS.rglob("*.schema.json"):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def assert_valid(event: str, payload: dict[str, Any]) -> None:
    action = payload.get("action", "event")
    schema = json.loads((SCHEMAS / event / f"{action}.schema.json").read_text())
    errors = [e.message for e in Draft7Validator(schema, registry=_registry()).iter_errors(payload)]
    assert errors == [], errors[:3]


def pr_comment(body: str) -> dict[str, Any]:
    """GitHub's example comment, made on a pull request (an issue with `pull_request`)."""
    payload = example("issue_comment", "created.with-installation.payload.json")
    issue = payload["issue"]
    issue["pull_request"] = {"url": issue["url"].replace("/issues/", "/pulls/")}
    payload["comment"]["body"] = body
    assert_valid("issue_comment", payload)
    return payload


def failed_run(conclusion: str = "failure", name: str = "completed.payload.json") -> dict[str, Any]:
    payload = example("workflow_run", name)
    payload["workflow_run"]["conclusion"] = conclusion
    payload["installation"] = {"id": 42, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI="}
    if conclusion != "startup_failure":  # GitHub sends it; the octokit schema predates it
        assert_valid("workflow_run", payload)
    return payload


def test_every_example_validates_against_its_schema() -> None:
    for path in sorted(EXAMPLES.glob("*/*.json")):
        payload = json.loads(path.read_text())
        assert_valid(path.parent.name, payload)


@pytest.mark.parametrize("conclusion", ["failure", "timed_out", "startup_failure"])
def test_failed_run_from_a_fork_is_triaged_and_needs_its_pr_found(conclusion: str) -> None:
    decision = decide("workflow_run", failed_run(conclusion))
    assert decision.outcome == "job"
    assert decision.job == {
        "kind": "triage",
        "trigger": "workflow_run",
        "repo": "octo-org/octo-repo",
        "installation_id": 42,
        "run_id": 289782451,
        "run_attempt": 1,
        "head_sha": "3484a3fb816e0859fd6e1cea078d76385ff50625",
        "head_branch": "master",
        "head_repo": "octo-org/octo-repo",
        "pull_requests": [],
        "find_pr": True,
        "workflow": "",
        "conclusion": conclusion,
        "workflow_job_id": None,
        "workflow_job_name": None,
    }
    assert decision.coalesce_key == "triage:octo-org/octo-repo:289782451:1:workflow_run"
    json.dumps(decision.job)  # it is stored and queued as JSON


def test_pull_requests_of_this_repository_are_kept() -> None:
    payload = failed_run(name="completed.with-pull-requests.payload.json")
    # The example's PR has its base in another repository (Codertocat/Hello-World): GitHub
    # lists such PRs too, and their numbers mean nothing here.
    decision = decide("workflow_run", payload)
    assert decision.job is not None
    assert decision.job["pull_requests"] == [] and decision.job["find_pr"] is True
    pr = payload["workflow_run"]["pull_requests"][0]
    pr["base"]["repo"]["id"] = payload["repository"]["id"]
    assert_valid("workflow_run", payload)
    decision = decide("workflow_run", payload)
    assert decision.job is not None
    assert decision.job["pull_requests"] == [2] and decision.job["find_pr"] is False


@pytest.mark.parametrize("conclusion", ["cancelled", "skipped", "neutral"])
def test_runs_that_did_not_fail_are_ignored(conclusion: str) -> None:
    decision = decide("workflow_run", failed_run(conclusion))
    assert decision.outcome == "ignored" and conclusion in decision.reason


def test_a_run_that_passed_may_clear_its_workflow_from_a_comment() -> None:
    payload = example("workflow_run", "completed.payload.json")
    assert payload["workflow_run"]["conclusion"] == "success"
    decision = decide("workflow_run", payload)
    assert decision.outcome == "job" and decision.job is not None
    run = payload["workflow_run"]
    assert decision.job == {
        "kind": "passed",
        "repo": payload["repository"]["full_name"],
        "installation_id": decision.job["installation_id"],
        "run_id": run["id"],
        "run_attempt": run["run_attempt"],
        "head_sha": run["head_sha"],
        "workflow_id": run["workflow_id"],
        "url": run["html_url"],
    }
    del run["workflow_id"]
    assert decide("workflow_run", payload).outcome == "refused"


def test_runs_not_completed_are_ignored() -> None:
    for name in ("requested.payload.json", "requested.with-conclusion.payload.json"):
        decision = decide("workflow_run", example("workflow_run", name))
        assert decision.outcome == "ignored" and "'requested'" in decision.reason


def test_failed_workflow_job_triages_its_run_early() -> None:
    payload = example("workflow_job", "completed.failure.with-organization.payload.json")
    decision = decide("workflow_job", payload)
    assert decision.outcome == "job" and decision.job is not None
    job = decision.job
    assert (job["trigger"], job["run_id"], job["run_attempt"]) == ("workflow_job", 2202229078, 1)
    assert (job["workflow_job_id"], job["workflow_job_name"]) == (289782451, "linters")
    assert job["find_pr"] is True and job["installation_id"] is None
    assert decision.coalesce_key == "triage:Codertocat/Hello-World:2202229078:1:workflow_job"


def test_other_workflow_jobs_are_ignored() -> None:
    names = ["completed.success.with-organization.payload.json", "in_progress.payload.json"]
    names += ["queued.payload.json", "waiting.payload.json"]
    for name in names:
        assert decide("workflow_job", example("workflow_job", name)).outcome == "ignored"


def test_synchronize_marks_the_comment_outdated() -> None:
    decision = decide("pull_request", example("pull_request", "synchronize.payload.json"))
    assert decision.outcome == "job"
    assert decision.job == {
        "kind": "outdated",
        "repo": "Codertocat/Hello-World",
        "installation_id": 1,
        "pr_number": 2,
        "before": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
        "after": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
    }
    assert decide("pull_request", example("pull_request", "opened.payload.json")).job is None


def test_installations_are_recorded() -> None:
    created = decide("installation", example("installation", "created.payload.json"))
    assert created.outcome == "record"
    assert created.installation == InstallationChange(
        "upsert", 957387, "Codertocat", ("Codertocat/Hello-World",), "selected", False
    )
    suspend = decide("installation", example("installation", "suspend.payload.json"))
    assert suspend.installation is not None
    assert (suspend.installation.suspended, suspend.installation.repos) == (True, ())
    unsuspend = decide("installation", example("installation", "unsuspend.payload.json"))
    assert unsuspend.installation is not None and unsuspend.installation.suspended is False
    deleted = decide("installation", example("installation", "deleted.payload.json"))
    assert deleted.installation == InstallationChange("delete", 2)


def test_installation_repositories_are_recorded() -> None:
    added = decide(
        "installation_repositories", example("installation_repositories", "added.payload.json")
    )
    assert added.installation is not None
    assert (added.installation.op, added.installation.repos) == ("add_repos", ("Codertocat/Space",))
    removed = decide(
        "installation_repositories", example("installation_repositories", "removed.payload.json")
    )
    assert removed.installation is not None and removed.installation.op == "remove_repos"


def test_ping_pongs_and_the_rest_is_ignored_with_a_reason() -> None:
    ping = decide("ping", example("ping", "payload.json"))
    assert (ping.outcome, ping.reason) == ("pong", "Anything added dilutes everything else.")
    for event in ("check_run", "check_suite", "push", "star"):
        decision = decide(event, {"action": "created"})
        assert decision.outcome == "ignored" and event in decision.reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda p: p.pop("repository"), "repository must be an object, got nothing"),
        (lambda p: p["repository"].update(full_name="no-slash"), "repository.full_name"),
        (lambda p: p["workflow_run"].update(id="1"), "workflow_run.id must be a non-negative"),
        (lambda p: p["workflow_run"].update(id=True), "workflow_run.id must be a non-negative"),
        (lambda p: p["workflow_run"].update(id=2**70), "workflow_run.id must be a non-negative"),
        (lambda p: p["workflow_run"].update(run_attempt=0), "workflow_run.run_attempt"),
        (lambda p: p["workflow_run"].update(head_sha=None), "workflow_run.head_sha"),
        (lambda p: p["workflow_run"].update(head_sha="a\x00b"), "workflow_run.head_sha"),
        (lambda p: p["workflow_run"].update(head_branch="\ud800"), "workflow_run.head_branch"),
        (lambda p: p["workflow_run"].update(pull_requests={}), "pull_requests must be a list"),
        (lambda p: p["workflow_run"].update(pull_requests=[7]), "pull_requests[0] must be an"),
        (lambda p: p.update(installation=[]), "installation must be an object"),
        (lambda p: p.update(workflow_run="x"), "workflow_run must be an object, got 'x'"),
        (lambda p: p["workflow_run"].update(conclusion=3), "workflow_run.conclusion must be"),
    ],
)
def test_odd_fields_are_refused_with_a_reason(change: Any, reason: str) -> None:
    payload = failed_run()
    change(payload)
    decision = decide("workflow_run", payload)
    assert decision.outcome == "refused" and decision.job is None
    assert reason in decision.reason
    assert decision.reason.startswith("workflow_run: ")


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    payloads: list[object] = [[], "x", 3, None]
    for payload in payloads:
        assert decide("workflow_run", payload).outcome == "refused"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    event=st.sampled_from(sorted(HANDLED_EVENTS)),
    path=st.lists(
        st.sampled_from(
            [
                "workflow_run",
                "workflow_job",
                "installation",
                "repository",
                "pull_requests",
                "id",
                "run_attempt",
                "action",
                "number",
                "issue",
                "comment",
                "user",
                "body",
                "pull_request",
            ]
        ),
        min_size=1,
        max_size=3,
    ),
    value=json_values,
)
def test_decide_never_raises_on_changed_examples(event: str, path: list[str], value: Any) -> None:
    base = {
        "workflow_run": failed_run(),
        "workflow_job": example("workflow_job", "completed.failure.with-organization.payload.json"),
        "pull_request": example("pull_request", "synchronize.payload.json"),
        "installation": example("installation", "created.payload.json"),
        "installation_repositories": example("installation_repositories", "added.payload.json"),
        "ping": example("ping", "payload.json"),
        "issue_comment": pr_comment("/triage retry"),
    }[event]
    payload = copy.deepcopy(base)
    target: Any = payload
    for key in path[:-1]:
        target = target.get(key) if isinstance(target, dict) else None
    if isinstance(target, dict):
        target[path[-1]] = value
    decision = decide(event, payload)
    assert decision.reason
    if decision.job is not None:
        json.dumps(decision.job)
