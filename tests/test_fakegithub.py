"""The fake GitHub, exercised through the real clients the bot uses: PyGithub and httpx."""

from __future__ import annotations

import base64
import datetime as dt
import threading
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fakegithub import FakeGitHub, FakeGitHubError, NewJob
from fakegithub.fixtures import fake_github
from fakegithub.models import Installation, PullRequest, Repo, WorkflowRun
from fakegithub.openapi import OpenApiSpec
from fakegithub.routes import all_routes
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry

__all__ = ["fake_github"]  # the fixture, imported here until conftest.py imports it

LOG_TEXT = b"\xef\xbb\xbf2024-05-01T10:00:00.0000000Z ##[group]Run pytest\nE   boom\n"


@dataclass
class World:
    repo: Repo
    installation: Installation
    pull: PullRequest
    run: WorkflowRun
    token: str


@pytest.fixture
def world(fake_github: FakeGitHub) -> World:
    """One installed repository with an open pull request whose CI run failed in 5 jobs."""
    repo = fake_github.state.add_repo("octo-org/widgets")
    installation = fake_github.install("octo-org")
    pull = fake_github.state.add_pull_request(repo, author="alice", head_ref="fix-imports")
    jobs = [NewJob(f"test ({n})", log=LOG_TEXT) for n in range(1, 6)]
    run = fake_github.state.add_run(repo, pull=pull, jobs=jobs)
    return World(repo, installation, pull, run, fake_github.token_for(installation))


def installation_client(
    fake: FakeGitHub,
    installation: Installation,
    *,
    per_page: int = 30,
    retry: GithubRetry | None = None,
) -> Github:
    """PyGithub as the installation; no retries unless asked, no self-throttling.

    PyGithub waits 0.25 s between requests and 1 s between writes by default, and `lazy`
    saves a request for objects used only as a path (get_repo, get_workflow_run).
    """
    app_auth = Auth.AppAuth(fake.app_id, fake.private_key_pem)
    return Github(
        auth=app_auth.get_installation_auth(installation.id),
        base_url=fake.base_url,
        per_page=per_page,
        retry=retry,
        seconds_between_requests=0,
        seconds_between_writes=0,
        lazy=True,
    )


def api(fake: FakeGitHub, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"token {token}"} if token else {}
    return httpx.Client(base_url=fake.base_url, headers=headers, timeout=5)


# ---- authentication ---------------------------------------------------------------------------


def test_pygithub_authenticates_as_the_app_and_gets_an_installation_token(
    fake_github: FakeGitHub, world: World
) -> None:
    integration = GithubIntegration(
        auth=Auth.AppAuth(fake_github.app_id, fake_github.private_key_pem),
        base_url=fake_github.base_url,
        seconds_between_requests=0,  # PyGithub throttles itself by 0.25 s otherwise
    )
    assert integration.get_app().slug == "triage-bot"
    found = integration.get_repo_installation("octo-org", "widgets")
    assert found.id == world.installation.id

    token = integration.get_access_token(world.installation.id)

    assert token.token.startswith("ghs_") and token.token in fake_github.state.tokens
    lifetime = token.expires_at - dt.datetime.now(dt.UTC)
    assert dt.timedelta(minutes=59) < lifetime <= dt.timedelta(hours=1)
    exchange = fake_github.requests(r"/access_tokens$", method="POST")[-1]
    assert (exchange.authorization or "").startswith("Bearer ey")


def _jwt(private_key: object, app_id: int, issued: int, expires: int) -> str:
    return jwt.encode({"iss": str(app_id), "iat": issued, "exp": expires}, private_key, "RS256")  # type: ignore[arg-type]


def test_app_jwts_signed_with_another_key_or_too_long_lived_are_refused(
    fake_github: FakeGitHub,
) -> None:
    now = int(time.time())
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    own = serialization.load_pem_private_key(fake_github.private_key_pem.encode(), None)
    cases = {
        "other key": _jwt(stranger, fake_github.app_id, now - 60, now + 300),
        "exp over 10 min": _jwt(own, fake_github.app_id, now - 60, now + 900),
        "expired": _jwt(own, fake_github.app_id, now - 700, now - 100),
        "wrong iss": _jwt(own, fake_github.app_id + 1, now - 60, now + 300),
    }
    with api(fake_github) as client:
        good = _jwt(own, fake_github.app_id, now - 60, now + 300)
        assert client.get("/app", headers={"Authorization": f"Bearer {good}"}).status_code == 200
        for name, token in cases.items():
            answer = client.get("/app", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 401, name


def test_api_calls_need_a_live_token_for_a_reachable_repository(
    fake_github: FakeGitHub, world: World
) -> None:
    path = f"/repos/octo-org/widgets/actions/runs/{world.run.id}"
    other = fake_github.state.add_repo("someone-else/private-things", private=True)
    with api(fake_github) as anonymous:
        assert anonymous.get(path).status_code == 401
        assert anonymous.get(path, headers={"Authorization": "token ghs_nope"}).status_code == 401
    with api(fake_github, world.token) as client:
        assert client.get(path).status_code == 200
        assert client.get(f"/repos/{other.full_name}/actions/runs/1").status_code == 404
        fake_github.state.tokens[world.token].expires_at = fake_github.state.now()
        refused = client.get(path)
    assert refused.status_code == 401 and refused.json()["message"] == "Bad credentials"


# ---- actions ----------------------------------------------------------------------------------


def test_pygithub_lists_a_runs_jobs_across_pages_following_link_headers(
    fake_github: FakeGitHub, world: World
) -> None:
    gh = installation_client(fake_github, world.installation, per_page=2)
    run = gh.get_repo("octo-org/widgets").get_workflow_run(world.run.id)

    names = [job.name for job in run.jobs()]

    assert names == [f"test ({n})" for n in range(1, 6)]
    pages = fake_github.requests(r"/actions/runs/\d+/jobs$")
    assert [parse_qs(r.query) for r in pages] == [
        {"per_page": ["2"]},
        {"per_page": ["2"], "page": ["2"]},
        {"per_page": ["2"], "page": ["3"]},
    ]
    # GitHub's Link URLs name the repository by id; clients must follow them verbatim.
    assert pages[1].path == f"/repositories/{world.repo.id}/actions/runs/{world.run.id}/jobs"


def test_jobs_filter_latest_attempt_or_all_and_attempt_endpoint(
    fake_github: FakeGitHub, world: World
) -> None:
    fake_github.state.add_attempt(world.run, jobs=[NewJob("test (3)", conclusion="success")])
    base = f"/repos/octo-org/widgets/actions/runs/{world.run.id}"
    with api(fake_github, world.token) as client:
        latest = client.get(f"{base}/jobs").json()
        every = client.get(f"{base}/jobs", params={"filter": "all", "per_page": 4})
        first = client.get(f"{base}/attempts/1/jobs").json()
        missing = client.get(f"{base}/attempts/3/jobs")
    assert [j["run_attempt"] for j in latest["jobs"]] == [2]
    assert every.json()["total_count"] == 6 and len(every.json()["jobs"]) == 4
    assert 'rel="next"' in every.headers["link"] and 'rel="last"' in every.headers["link"]
    assert first["total_count"] == 5
    assert missing.status_code == 404


def test_reruns_are_recorded_and_refused_while_running(
    fake_github: FakeGitHub, world: World
) -> None:
    gh = installation_client(fake_github, world.installation)
    run = gh.get_repo("octo-org/widgets").get_workflow_run(world.run.id)
    assert run.rerun_failed_jobs()
    job_id = fake_github.state.jobs_of(world.run)[0].id
    with api(fake_github, world.token) as client:
        job_rerun = client.post(f"/repos/octo-org/widgets/actions/jobs/{job_id}/rerun")
        world.run.status = "in_progress"
        refused = client.post(f"/repos/octo-org/widgets/actions/runs/{world.run.id}/rerun")
    assert job_rerun.status_code == 201 and job_rerun.json() == {}
    assert refused.status_code == 403
    kinds = [(r.kind, r.job_id, r.requested_by) for r in fake_github.state.reruns]
    assert kinds == [("failed_jobs", None, "triage-bot[bot]"), ("job", job_id, "triage-bot[bot]")]


# ---- logs -------------------------------------------------------------------------------------


def _log_path(world: World, fake: FakeGitHub) -> str:
    job = fake.state.jobs_of(world.run)[0]
    return f"/repos/octo-org/widgets/actions/jobs/{job.id}/logs"


def test_httpx_follows_the_log_redirect_and_sends_no_token_to_the_log_host(
    fake_github: FakeGitHub, world: World
) -> None:
    with api(fake_github, world.token) as client:
        answer = client.get(_log_path(world, fake_github), follow_redirects=True)

    assert answer.status_code == 200 and answer.content == LOG_TEXT
    assert urlsplit(str(answer.url)).netloc != urlsplit(fake_github.base_url).netloc
    (download,) = fake_github.requests(host="logs")
    assert download.authorization is None and download.status == 200


def test_log_host_refuses_authorization_and_tampered_urls(
    fake_github: FakeGitHub, world: World
) -> None:
    with api(fake_github, world.token) as client:
        redirect = client.get(_log_path(world, fake_github))
    assert redirect.status_code == 302
    location = redirect.headers["location"]

    with httpx.Client() as log_host:
        leaked = log_host.get(location, headers={"Authorization": f"token {world.token}"})
        tampered = log_host.get(location.replace("/jobs/", "/jobs/1"))
        clean = log_host.get(location)

    assert leaked.status_code == 400
    assert tampered.status_code == 403
    assert clean.content == LOG_TEXT


def test_expired_log_is_410_and_a_missing_one_404(fake_github: FakeGitHub, world: World) -> None:
    first, second = fake_github.state.jobs_of(world.run)[:2]
    fake_github.state.expire_log(first)
    second.log = None
    with api(fake_github, world.token) as client:
        expired = client.get(f"/repos/octo-org/widgets/actions/jobs/{first.id}/logs")
        missing = client.get(f"/repos/octo-org/widgets/actions/jobs/{second.id}/logs")
    assert expired.status_code == 410 and "expired" in expired.json()["message"]
    assert missing.status_code == 404


def test_slow_log_bodies_arrive_in_pieces(fake_github: FakeGitHub, world: World) -> None:
    fake_github.faults.slow_logs(chunk_size=16, pause=0.01)
    with api(fake_github, world.token) as client:
        location = client.get(_log_path(world, fake_github)).headers["location"]
    pieces = []
    with httpx.stream("GET", location) as body:
        pieces = list(body.iter_raw())
    assert b"".join(pieces) == LOG_TEXT
    assert len(pieces) >= len(LOG_TEXT) // 16  # each piece was flushed on its own


# ---- comments and repository look-ups --------------------------------------------------------


def test_pygithub_creates_edits_and_lists_comments_as_the_bot(
    fake_github: FakeGitHub, world: World
) -> None:
    fake_github.state.add_comment(world.repo, world.pull.number, "alice", "CI is red?")
    gh = installation_client(fake_github, world.installation, per_page=2)
    pull = gh.get_repo("octo-org/widgets").get_pull(world.pull.number)

    made = pull.create_issue_comment("<!-- triage-bot -->\nchecking")
    made.edit("<!-- triage-bot -->\n3 failures")
    fake_github.state.add_comment(world.repo, world.pull.number, "bob", "thanks")
    listed = list(pull.get_issue_comments())

    assert [(c.user.login, c.body.splitlines()[-1]) for c in listed] == [
        ("alice", "CI is red?"),
        ("triage-bot[bot]", "3 failures"),
        ("bob", "thanks"),
    ]
    assert listed[1].user.type == "Bot" and listed[1].performed_via_github_app.slug == "triage-bot"
    assert len(fake_github.requests(r"/issues/\d+/comments$", method="GET")) == 2  # two pages
    stored = fake_github.state.comments[made.id]
    assert stored.author.login == "triage-bot[bot]" and stored.body.endswith("3 failures")


def test_comment_bodies_are_checked_like_github(fake_github: FakeGitHub, world: World) -> None:
    path = f"/repos/octo-org/widgets/issues/{world.pull.number}/comments"
    with api(fake_github, world.token) as client:
        not_text = client.post(path, json={"body": 42})
        too_long = client.post(path, json={"body": "x" * 65537})
        no_issue = client.post("/repos/octo-org/widgets/issues/999/comments", json={"body": "hi"})
    assert not_text.status_code == 422 and too_long.status_code == 422
    assert no_issue.status_code == 404
    assert fake_github.state.comments == {}


def test_pull_permission_and_contents_through_pygithub(
    fake_github: FakeGitHub, world: World
) -> None:
    config = "patterns:\n  - extra\n"
    fake_github.state.add_file(world.repo, ".github/triage-bot.yml", config)
    fake_github.state.add_file(world.repo, ".github/triage-bot/patterns/a.yml", "id: a\n")
    fake_github.state.grant(world.repo, "maria", "maintain")
    repo = installation_client(fake_github, world.installation).get_repo("octo-org/widgets")

    pull = repo.get_pull(world.pull.number)
    content = repo.get_contents(".github/triage-bot.yml", ref="main")
    listing = repo.get_contents(".github/triage-bot/patterns")

    assert (pull.head.ref, pull.head.sha, pull.user.login) == (
        "fix-imports",
        world.pull.head_sha,
        "alice",
    )
    assert not isinstance(content, list) and content.decoded_content == config.encode()
    assert "\n" in content.content  # GitHub wraps base64 at 60 columns
    assert isinstance(listing, list) and [c.path for c in listing] == [
        ".github/triage-bot/patterns/a.yml"
    ]
    assert repo.get_collaborator_permission("maria") == "write"  # legacy name of "maintain"
    with pytest.raises(GithubException) as missing:
        repo.get_contents(".github/triage-bot.yml", ref="other-branch")
    assert missing.value.status == 404


def test_contents_are_base64_of_the_stored_bytes(fake_github: FakeGitHub, world: World) -> None:
    data = bytes(range(256)) * 3
    fake_github.state.add_file(world.repo, "bin/blob", data, ref="abc123")
    with api(fake_github, world.token) as client:
        answer = client.get("/repos/octo-org/widgets/contents/bin/blob", params={"ref": "abc123"})
    assert base64.b64decode(answer.json()["content"]) == data


# ---- endpoints outside the OpenAPI subset -----------------------------------------------------


def test_pull_list_filters_by_owner_branch_and_runs_by_branch(
    fake_github: FakeGitHub, world: World
) -> None:
    fake_github.state.add_pull_request(world.repo, head_ref="other")
    with api(fake_github, world.token) as client:
        by_head = client.get(
            "/repos/octo-org/widgets/pulls", params={"head": "octo-org:fix-imports"}
        )
        bare = client.get("/repos/octo-org/widgets/pulls", params={"head": "fix-imports"})
        runs = client.get("/repos/octo-org/widgets/actions/runs", params={"branch": "fix-imports"})
        none = client.get("/repos/octo-org/widgets/actions/runs", params={"status": "success"})
    assert [p["number"] for p in by_head.json()] == [world.pull.number]
    assert len(bare.json()) == 2  # a head without "owner:" filters nothing, as on GitHub
    assert [r["id"] for r in runs.json()["workflow_runs"]] == [world.run.id]
    assert runs.json()["workflow_runs"][0]["pull_requests"][0]["number"] == world.pull.number
    assert none.json()["total_count"] == 0


def test_check_runs_accumulate_annotations_and_cap_each_request(
    fake_github: FakeGitHub, world: World
) -> None:
    note = {"path": "a.py", "start_line": 1, "end_line": 1, "annotation_level": "failure"}
    output = {"title": "t", "summary": "s", "annotations": [{**note, "message": "m"}]}
    with api(fake_github, world.token) as client:
        made = client.post(
            "/repos/octo-org/widgets/check-runs",
            json={"name": "triage", "head_sha": world.pull.head_sha, "output": output},
        )
        check_id = made.json()["id"]
        too_many = {**output, "annotations": [{**note, "message": "m"}] * 51}
        capped = client.patch(
            f"/repos/octo-org/widgets/check-runs/{check_id}", json={"output": too_many}
        )
        done = client.patch(
            f"/repos/octo-org/widgets/check-runs/{check_id}",
            json={"conclusion": "failure", "output": output},
        )
    assert made.status_code == 201 and capped.status_code == 422
    assert done.json()["status"] == "completed"
    assert done.json()["output"]["annotations_count"] == 2


def test_every_operation_of_the_subset_is_served_within_the_spec(
    fake_github: FakeGitHub, world: World
) -> None:
    spec = OpenApiSpec.load().document["paths"]
    documented = {(m.upper(), path) for path, item in spec.items() for m in item}
    served = {(r.method, r.template) for r in all_routes() if r.in_subset}
    assert served == documented

    job = fake_github.state.jobs_of(world.run)[0]
    comment = fake_github.state.add_comment(world.repo, world.pull.number, "alice", "hi")
    base = "/repos/octo-org/widgets"
    with api(fake_github, world.token) as client:
        answers = {
            "comment": client.get(f"{base}/issues/comments/{comment.id}").status_code,
            "rerun": client.post(f"{base}/actions/runs/{world.run.id}/rerun", json={}).status_code,
            "no job": client.get(f"{base}/actions/jobs/1").status_code,
            "no pull": client.get(f"{base}/pulls/999").status_code,
            "stranger": client.get(f"{base}/collaborators/nobody/permission").status_code,
            "job": client.get(f"{base}/actions/jobs/{job.id}").status_code,
        }
    assert answers == {
        "comment": 200,
        "rerun": 201,
        "no job": 404,
        "no pull": 404,
        "stranger": 404,
        "job": 200,
    }
    assert fake_github.problems.take() == []  # every answer above validated


def test_a_narrowed_token_reaches_only_its_repositories_and_permissions(
    fake_github: FakeGitHub, world: World
) -> None:
    fake_github.state.add_repo("octo-org/other")
    app_jwt = Auth.AppAuth(fake_github.app_id, fake_github.private_key_pem).create_jwt()
    wanted = {"repositories": ["widgets"], "permissions": {"actions": "read", "issues": "read"}}
    with api(fake_github) as client:
        exchange = client.post(
            f"/app/installations/{world.installation.id}/access_tokens",
            json=wanted,
            headers={"Authorization": f"Bearer {app_jwt}"},
        )
        too_much = client.post(
            f"/app/installations/{world.installation.id}/access_tokens",
            json={"permissions": {"administration": "write"}},
            headers={"Authorization": f"Bearer {app_jwt}"},
        )
    assert exchange.status_code == 201 and too_much.status_code == 422
    assert [r["full_name"] for r in exchange.json()["repositories"]] == ["octo-org/widgets"]
    narrowed = exchange.json()["token"]
    comments = f"/repos/octo-org/widgets/issues/{world.pull.number}/comments"
    with api(fake_github, narrowed) as client:
        assert client.get(f"/repos/octo-org/widgets/actions/runs/{world.run.id}").status_code == 200
        assert client.get("/repos/octo-org/other/actions/runs/1").status_code == 404
        refused = client.post(comments, json={"body": "hi"})
    assert refused.status_code == 403
    assert refused.json()["message"] == "Resource not accessible by integration"


# ---- faults -----------------------------------------------------------------------------------


def test_two_502s_then_success_show_in_the_request_log(
    fake_github: FakeGitHub, world: World
) -> None:
    fake_github.faults.fail(r"/actions/runs/\d+$", status=502, times=2)
    retry = GithubRetry(total=3, backoff_factor=0.01)
    gh = installation_client(fake_github, world.installation, retry=retry)

    run = gh.get_repo("octo-org/widgets").get_workflow_run(world.run.id)

    assert run.conclusion == "failure"  # a lazy object: reading it makes the request
    assert [r.status for r in fake_github.requests(r"/actions/runs/\d+$")] == [502, 502, 200]


def test_secondary_limit_and_429_carry_retry_after(fake_github: FakeGitHub, world: World) -> None:
    fake_github.faults.secondary_rate_limit(r"/pulls/", retry_after=7)
    fake_github.faults.too_many_requests(r"/pulls/", retry_after=3)
    path = f"/repos/octo-org/widgets/pulls/{world.pull.number}"
    with api(fake_github, world.token) as client:
        secondary, throttled, fine = (client.get(path) for _ in range(3))
    assert (secondary.status_code, secondary.headers["retry-after"]) == (403, "7")
    assert secondary.json()["message"].startswith("You have exceeded a secondary rate limit")
    assert (throttled.status_code, throttled.headers["retry-after"]) == (429, "3")
    assert fine.status_code == 200


def test_primary_rate_limit_exhaustion_then_recovery(fake_github: FakeGitHub, world: World) -> None:
    path = f"/repos/octo-org/widgets/actions/runs/{world.run.id}"
    fake_github.faults.exhaust_rate_limit(reset_in=0.2)
    with api(fake_github, world.token) as client:
        limited = client.get(path)
        reset = int(limited.headers["x-ratelimit-reset"])
        time.sleep(max(0.0, reset - time.time()) + 0.05)
        recovered = client.get(path)
    assert limited.status_code == 403 and limited.headers["x-ratelimit-remaining"] == "0"
    assert limited.json()["message"].startswith("API rate limit exceeded")
    assert recovered.status_code == 200
    assert int(recovered.headers["x-ratelimit-remaining"]) == 4999


def test_delay_fault_provokes_a_client_timeout(fake_github: FakeGitHub, world: World) -> None:
    fake_github.faults.delay(r"/pulls/", 1.0, times=1)
    path = f"/repos/octo-org/widgets/pulls/{world.pull.number}"
    with api(fake_github, world.token) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.get(path, timeout=0.2)
        assert client.get(path).status_code == 200


def test_every_response_carries_githubs_usual_headers(
    fake_github: FakeGitHub, world: World
) -> None:
    with api(fake_github, world.token) as client:
        first = client.get(f"/repos/octo-org/widgets/pulls/{world.pull.number}")
        limits = client.get("/rate_limit")
    assert first.headers["content-type"] == "application/json; charset=utf-8"
    for name in ("limit", "remaining", "reset", "used", "resource"):
        assert f"x-ratelimit-{name}" in first.headers
    assert first.headers["x-github-request-id"] != limits.headers["x-github-request-id"]
    assert limits.json()["resources"]["core"]["used"] == 1  # /rate_limit itself is free


# ---- the fake checks itself -------------------------------------------------------------------


def test_an_off_spec_response_is_caught_by_the_validator(
    fake_github: FakeGitHub, world: World
) -> None:
    job = fake_github.state.jobs_of(world.run)[0]
    job.status = "exploded"  # not one of the statuses the OpenAPI description allows
    with api(fake_github, world.token) as client:
        answer = client.get(f"/repos/octo-org/widgets/actions/jobs/{job.id}")

    assert answer.status_code == 500
    assert "invalid response" in answer.json()["message"]
    with pytest.raises(FakeGitHubError, match="exploded"):
        fake_github.check()


def test_stop_ends_every_thread_even_with_a_keep_alive_connection_open() -> None:
    before = set(threading.enumerate())
    fake = FakeGitHub().start()
    client = httpx.Client(base_url=fake.base_url)
    assert client.get("/app").status_code == 401  # leaves an idle keep-alive connection
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 1.0
    assert set(threading.enumerate()) <= before
    client.close()
