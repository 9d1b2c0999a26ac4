"""The GitHub client against the fake GitHub: auth, jobs, streamed logs, retries, the comment."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import parse_qs

import httpx
import pytest
from fakegithub import FakeGitHub, NewJob, NewStep
from fakegithub.models import Installation, PullRequest, Repo, WorkflowRun
from helpers import compiled
from prometheus_client import REGISTRY

from triage_bot.config import Settings
from triage_bot.core.classify import JobClassifier
from triage_bot.core.render import COMMENT_MARKER
from triage_bot.github_api.github import (
    AppAuth,
    ClientOptions,
    GitHubClient,
    GitHubError,
    GitHubStatusError,
    RateLimited,
    RetryPolicy,
    TokenAuth,
    client_for_installation,
    client_for_repo,
    job_failed,
    run_from_fork,
)

REPO = "octo-org/widgets"
LOG = b"".join(
    b"2024-05-01T10:00:%02d.0000000Z line %05d of the test output\n" % (n % 60, n)
    for n in range(4000)
)  # ~200 KB
FAST = ClientOptions(
    retry=RetryPolicy(attempts=4, backoff=0.01, max_backoff=0.05, max_wait=5.0),
    timeout=2.0,
    per_page=100,
    seconds_between_requests=0.0,
    seconds_between_writes=0.0,
)


@dataclass
class World:
    fake: FakeGitHub
    repo: Repo
    installation: Installation
    pull: PullRequest
    run: WorkflowRun
    app: AppAuth
    others: list[AppAuth]


@pytest.fixture
def world(fake_github: FakeGitHub) -> Iterator[World]:
    """One installed repository with an open pull request whose CI run failed."""
    repo = fake_github.state.add_repo(REPO)
    installation = fake_github.install("octo-org")
    pull = fake_github.state.add_pull_request(repo, author="alice", head_ref="fix-imports")
    jobs = [
        NewJob("lint", conclusion="success"),
        NewJob("test (1)", log=LOG),
        NewJob("test (2)", conclusion="timed_out"),
        NewJob("test (3)", conclusion="cancelled"),
        NewJob("test (4)"),
    ]
    run = fake_github.state.add_run(repo, pull=pull, jobs=jobs)
    app = AppAuth(
        fake_github.app_id, fake_github.private_key_pem, fake_github.base_url, options=FAST
    )
    world = World(fake_github, repo, installation, pull, run, app, [])
    yield world
    for auth in [app, *world.others]:
        auth.close()


def client(world: World, options: ClientOptions = FAST) -> GitHubClient:
    app = world.app
    if options is not FAST:
        fake = world.fake
        app = AppAuth(fake.app_id, fake.private_key_pem, fake.base_url, options=options)
        world.others.append(app)
    return client_for_installation(app, world.installation.id)


def job_id(world: World, name: str) -> int:
    return next(j.id for j in world.fake.state.jobs_of(world.run, 0) if j.name == name)


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


class Collect:
    """A consumer that keeps every chunk (and can stop after `stop_after` chunks)."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.chunks: list[bytes] = []
        self.stop_after = stop_after

    def __call__(self, chunk: bytes) -> bool:
        self.chunks.append(chunk)
        return self.stop_after is None or len(self.chunks) < self.stop_after

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


# ---- auth ---------------------------------------------------------------------------------


def test_app_jwt_buys_one_installation_token_that_clients_share(world: World) -> None:
    settings = Settings(
        app_id=world.fake.app_id,
        private_key=world.fake.private_key_pem,
        github_api_url=world.fake.base_url,
    )
    for _ in range(2):
        with client_for_repo(settings, REPO, options=FAST) as gh:
            assert gh.get_run(REPO, world.run.id).id == world.run.id

    (exchange,) = world.fake.requests(r"/access_tokens$", method="POST")
    assert (exchange.authorization or "").startswith("Bearer ey")
    assert len(world.fake.requests(r"/installation$")) == 1  # the look-up is cached too
    runs = world.fake.requests(r"/actions/runs/\d+$")
    assert {r.authorization for r in runs} == {f"token {next(iter(world.fake.state.tokens))}"}


def test_a_token_near_its_expiry_is_replaced_and_a_refused_one_renewed(world: World) -> None:
    # Tokens last an hour; a margin of an hour makes every cached token "near expiry".
    eager = AppAuth(
        world.fake.app_id, world.fake.private_key_pem, world.fake.base_url, refresh_margin=3600
    )
    first = eager.installation_token(world.installation.id)
    second = eager.installation_token(world.installation.id)
    assert first.token != second.token
    assert world.app.installation_token(world.installation.id) is world.app.installation_token(
        world.installation.id
    )
    assert len(world.fake.requests(r"/access_tokens$")) == 3
    eager.close()

    with client(world) as gh:
        gh.get_run(REPO, world.run.id)
        cached = world.app.installation_token(world.installation.id).token
        world.fake.state.tokens[cached].expires_at = world.fake.state.now()  # revoked early
        assert gh.get_run(REPO, world.run.id).id == world.run.id
    statuses = [r.status for r in world.fake.requests(r"/actions/runs/\d+$")]
    assert statuses == [200, 401, 200]
    assert world.app.installation_token(world.installation.id).token != cached


def test_concurrent_callers_share_one_token_exchange(world: World) -> None:
    app = world.app
    with ThreadPoolExecutor(8) as pool:
        tokens = set(
            pool.map(lambda _: app.installation_token(world.installation.id).token, range(8))
        )
    assert len(tokens) == 1 and len(world.fake.requests(r"/access_tokens$")) == 1


def test_installation_for_repo_and_the_bot_login(world: World) -> None:
    assert world.app.installation_for_repo("Octo-Org/Widgets") == world.installation.id
    assert world.app.bot_login == "triage-bot[bot]"
    world.fake.state.add_repo("elsewhere/thing")
    with pytest.raises(GitHubStatusError) as missing:
        world.app.installation_for_repo("elsewhere/thing")
    assert missing.value.status == 404


# ---- runs and jobs --------------------------------------------------------------------------


def test_run_and_job_details(world: World) -> None:
    with client(world) as gh:
        run = gh.get_run(REPO, world.run.id)
        job = gh.get_job(REPO, job_id(world, "test (1)"))
    assert (run.run_attempt, run.name, run.event, run.conclusion) == (
        1,
        "CI",
        "pull_request",
        "failure",
    )
    assert (run.head_sha, run.head_branch, run.repository.full_name) == (
        world.pull.head_sha,
        "fix-imports",
        REPO,
    )
    assert run.workflow_id == world.run.workflow_id and not run_from_fork(run)
    assert [p.number for p in run.pull_requests] == [world.pull.number]
    assert run.html_url.endswith(f"/actions/runs/{world.run.id}")
    assert [(s.number, s.name) for s in job.steps][2] == (3, "Run tests")
    assert job.steps[2].conclusion == "failure" and job.steps[2].started_at is not None
    assert job.html_url.endswith(f"/job/{job.id}") and job_failed(job)


def test_failed_jobs_are_read_across_pages_and_cancelled_ones_kept_apart(world: World) -> None:
    few = ClientOptions(retry=FAST.retry, per_page=2, seconds_between_writes=0)
    with client(world, few) as gh:
        jobs = gh.list_jobs(REPO, world.run.id)
        attempt = gh.list_jobs(REPO, world.run.id, attempt=1)

    assert [j.name for j in jobs.failed] == ["test (1)", "test (2)", "test (4)"]
    assert [j.name for j in jobs.cancelled] == ["test (3)"]
    assert attempt == jobs and len(jobs.jobs) == 5
    pages = world.fake.requests(r"/actions/runs/\d+/jobs$")
    assert [parse_qs(r.query).get("page") for r in pages[:3]] == [None, ["2"], ["3"]]
    assert pages[1].path.startswith(f"/repositories/{world.repo.id}/")  # the Link, as given


def test_a_rerun_attempt_lists_only_its_jobs_and_reruns_are_sent(world: World) -> None:
    world.fake.state.add_attempt(world.run, jobs=[NewJob("test (1)")])
    with client(world) as gh:
        assert [j.run_attempt for j in gh.list_jobs(REPO, world.run.id).jobs] == [2]
        assert len(gh.list_jobs(REPO, world.run.id, attempt=1).jobs) == 5
        gh.rerun_failed_jobs(REPO, world.run.id)
        gh.rerun_job(REPO, job_id(world, "test (4)"))
    assert [r.kind for r in world.fake.state.reruns] == ["failed_jobs", "job"]


def test_workflow_runs_on_a_branch(world: World) -> None:
    base = world.fake.state.add_run(world.repo, head_branch="main", conclusion="success")
    world.fake.state.add_run(world.repo, head_branch="main", path=".github/workflows/other.yml")
    with client(world) as gh:
        runs = gh.list_workflow_runs(REPO, world.run.workflow_id, "main")
    assert [r.id for r in runs] == [base.id]


def test_the_merge_base_of_a_pull_request_and_none_for_refs_github_cannot_compare(
    world: World,
) -> None:
    with client(world) as gh:
        assert gh.merge_base(REPO, "main", world.pull.head_sha) == world.pull.base_sha
        assert gh.merge_base(REPO, "release/1.x", world.pull.head_sha) is None  # 404
        assert gh.merge_base(REPO, "main", "0" * 40) is None
    [asked, *_] = world.fake.requests(r"/compare/")
    assert asked.path.endswith(f"/compare/main...{world.pull.head_sha}")


# ---- logs -----------------------------------------------------------------------------------


def test_a_log_streams_to_the_consumer_in_chunks_and_no_token_reaches_the_log_host(
    world: World,
) -> None:
    world.fake.faults.slow_logs(chunk_size=16 * 1024, pause=0.005)
    collect = Collect()
    with client(world) as gh:
        outcome = gh.stream_job_log(REPO, job_id(world, "test (1)"), collect)

    assert outcome.ok and not outcome.capped and outcome.bytes_read == len(LOG)
    assert collect.data == LOG and len(collect.chunks) > 5  # handed over as it arrived
    (redirect,) = world.fake.requests(r"/logs$")
    assert redirect.status == 302 and (redirect.authorization or "").startswith("token ghs_")
    (download,) = world.fake.requests(host="logs")
    assert download.authorization is None and download.status == 200


def test_the_signed_log_url_never_reaches_the_logs(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    # httpx logs each URL at INFO (PyGithub may log an answer's headers at DEBUG, the 302's
    # location among them): a reader of the bot's logs must not get a working log link.
    with caplog.at_level(logging.DEBUG), client(world) as gh:
        assert gh.stream_job_log(REPO, job_id(world, "test (1)"), Collect()).ok
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/logs" in logged and "127.0.0.2" in logged  # both requests were logged
    assert "urlSignature" not in logged


def test_the_classifier_reads_while_downloading_and_keeps_the_tail(
    world: World,
) -> None:
    world.fake.faults.slow_logs(chunk_size=16 * 1024, pause=0.005)
    classifier = JobClassifier(compiled(), "test (1)", max_bytes=10_000)
    with client(world) as gh:
        outcome = gh.stream_job_log(
            REPO, job_id(world, "test (1)"), classifier.feed, None, classifier.expect_size
        )
    result = classifier.finish()

    assert outcome.ok and not outcome.capped and outcome.bytes_read == len(LOG)
    # Told the size by Content-Length: the head was counted as it passed, not held.
    # The line the cut falls in goes with the head.
    counted = LOG[:-10_000].count(b"\n") + 1
    assert classifier.tail is not None and classifier.tail.skipped_lines == counted
    assert result.truncated and result.bytes_read < 10_000 and result.lines == 4000

    world.fake.faults.clear()
    collect = Collect()
    with client(world) as gh:
        capped = gh.stream_job_log(REPO, job_id(world, "test (1)"), collect, max_bytes=5000)
        whole = gh.stream_job_log(REPO, job_id(world, "test (1)"), Collect(), max_bytes=len(LOG))
        declined = Collect(stop_after=1)
        enough = gh.stream_job_log(REPO, job_id(world, "test (1)"), declined)
    assert capped.capped and capped.bytes_read == 5000 and collect.data == LOG[:5000]
    assert whole.ok and not whole.capped  # exactly the cap is all of it
    assert enough.ok and enough.capped and enough.bytes_read == len(declined.data) < len(LOG)


def test_expired_and_missing_logs_are_outcomes_not_errors(world: World) -> None:
    expired, missing = job_id(world, "test (1)"), job_id(world, "test (2)")
    world.fake.state.expire_log(world.fake.state.jobs[expired])
    world.fake.state.jobs[missing].log = None
    with client(world) as gh:
        gone = gh.stream_job_log(REPO, expired, Collect())
        none = gh.stream_job_log(REPO, missing, Collect())
        broken = gh.stream_job_log(REPO, 1, Collect())  # no such job: 404 too
    assert (gone.status, none.status, broken.status) == ("expired", "missing", "missing")
    assert "expired" in gone.reason and gone.bytes_read == 0
    assert world.fake.requests(host="logs") == []


def test_a_download_dropped_midway_resumes_where_it_stopped(world: World) -> None:
    # The first download stalls after its first chunk, longer than the read timeout.
    world.fake.faults.slow_logs(chunk_size=50_000, pause=3.0, times=1)
    impatient = ClientOptions(retry=FAST.retry, timeout=0.5, seconds_between_writes=0)
    collect = Collect()
    with client(world, impatient) as gh:
        outcome = gh.stream_job_log(REPO, job_id(world, "test (1)"), collect)

    assert outcome.ok and outcome.resumed == 1 and collect.data == LOG  # no byte twice
    first, second = world.fake.requests(host="logs")
    assert first.header("Range") is None and second.header("Range") == "bytes=50000-"
    assert len(world.fake.requests(r"/logs$")) == 2  # a fresh signed URL for the resume


def test_log_host_failures_are_retried_then_reported_unavailable(world: World) -> None:
    world.fake.faults.fail("", status=503, times=1, host="logs")
    with client(world) as gh:
        recovered = gh.stream_job_log(REPO, job_id(world, "test (1)"), Collect())
        world.fake.faults.fail("", status=502, times=None, host="logs")
        failed = gh.stream_job_log(REPO, job_id(world, "test (1)"), Collect())
    assert recovered.ok and recovered.bytes_read == len(LOG)
    assert failed.status == "unavailable" and "502" in failed.reason and not failed.partial


# ---- retries --------------------------------------------------------------------------------


def test_two_502s_then_success_and_the_metrics_count_them(world: World) -> None:
    endpoint = "GET /repos/{owner}/{repo}/actions/runs/{id}"
    calls = "triage_bot_github_api_calls_total"
    before = (
        sample(calls, {"endpoint": endpoint, "status": "502"}),
        sample("triage_bot_github_api_retries_total", {"reason": "5xx"}),
    )
    world.fake.faults.fail(r"/actions/runs/\d+$", status=502, times=2)
    with client(world) as gh:
        assert gh.get_run(REPO, world.run.id).conclusion == "failure"

    assert [r.status for r in world.fake.requests(r"/actions/runs/\d+$")] == [502, 502, 200]
    after = (
        sample(calls, {"endpoint": endpoint, "status": "502"}),
        sample("triage_bot_github_api_retries_total", {"reason": "5xx"}),
    )
    assert (after[0] - before[0], after[1] - before[1]) == (2, 2)


def test_each_answer_is_counted_with_its_own_status(world: World) -> None:
    # A success is not always a 200: a created comment is a 201, a log's signed URL a 302.
    calls = "triage_bot_github_api_calls_total"
    comments = {"endpoint": "POST /repos/{owner}/{repo}/issues/{id}/comments", "status": "201"}
    logs = {"endpoint": "GET /repos/{owner}/{repo}/actions/jobs/{id}/logs", "status": "302"}
    run = {"endpoint": "GET /repos/{owner}/{repo}/actions/runs/{id}", "status": "200"}
    before = [sample(calls, labels) for labels in (comments, logs, run)]
    with client(world) as gh:
        gh.upsert_comment(REPO, world.pull.number, f"{COMMENT_MARKER}\ncounted")
        assert gh.stream_job_log(REPO, job_id(world, "test (1)"), Collect()).ok
        assert gh.get_run(REPO, world.run.id).conclusion == "failure"
    after = [sample(calls, labels) for labels in (comments, logs, run)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1]


def test_persistent_5xx_gives_up_after_the_attempts(world: World) -> None:
    world.fake.faults.fail(r"/pulls/\d+$", status=500, times=None)
    with client(world) as gh, pytest.raises(GitHubError, match="500"):
        gh.get_pull(REPO, world.pull.number)
    assert len(world.fake.requests(r"/pulls/\d+$")) == FAST.retry.attempts


def test_secondary_rate_limit_waits_for_retry_after(world: World) -> None:
    world.fake.faults.secondary_rate_limit(r"/pulls/\d+$", retry_after=1)
    with client(world) as gh:
        started = time.monotonic()
        pull = gh.get_pull(REPO, world.pull.number)
    assert time.monotonic() - started >= 1.0
    assert (pull.user.login, pull.head.ref, pull.base.ref) == ("alice", "fix-imports", "main")
    assert [r.status for r in world.fake.requests(r"/pulls/\d+$")] == [403, 200]


def test_429_waits_for_retry_after_even_for_a_post(world: World) -> None:
    # A refusal for rate reasons happens before GitHub acts, so a write may be resent.
    world.fake.faults.too_many_requests(r"/rerun-failed-jobs$", retry_after=1)
    with client(world) as gh:
        started = time.monotonic()
        gh.rerun_failed_jobs(REPO, world.run.id)
    assert time.monotonic() - started >= 1.0
    assert [r.status for r in world.fake.requests(r"/rerun-failed-jobs$")] == [429, 201]
    assert len(world.fake.state.reruns) == 1


def test_primary_rate_limit_waits_for_the_reset(world: World) -> None:
    world.fake.faults.exhaust_rate_limit(reset_in=1.0)
    reset = int(httpx.get(f"{world.fake.base_url}/rate_limit").headers["x-ratelimit-reset"])
    with client(world) as gh:
        assert gh.get_run(REPO, world.run.id).id == world.run.id
    # The first request, the token exchange, met the limit and was sent again after it.
    exchanges = world.fake.requests(r"/access_tokens$")
    assert [r.status for r in exchanges] == [403, 201] and exchanges[1].at >= reset


def test_a_rate_limit_longer_than_the_max_wait_raises_rate_limited(world: World) -> None:
    world.fake.faults.exhaust_rate_limit(reset_in=30)
    started = time.time()
    with client(world) as gh, pytest.raises(RateLimited) as limited:
        gh.get_run(REPO, world.run.id)
    assert started + 29 <= limited.value.resume_at <= started + 33
    assert limited.value.reason == "rate_limit" and limited.value.retry_in > 25


def test_a_timeout_is_retried(world: World) -> None:
    world.fake.faults.delay(r"/pulls/\d+$", 3.0, times=1)
    impatient = ClientOptions(retry=FAST.retry, timeout=0.5, seconds_between_writes=0)
    with client(world, impatient) as gh:
        assert gh.get_pull(REPO, world.pull.number).number == world.pull.number
    assert len(world.fake.requests(r"/pulls/\d+$")) == 2


def test_backoff_grows_is_jittered_and_bounded_and_a_5xx_resends_only_safe_methods() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=8.0)
    for attempt, step in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = {policy.backoff_for(attempt) for _ in range(20)}
        assert all(step / 2 <= d <= step for d in delays) and len(delays) > 1
    retry = policy.urllib3_retry()
    assert retry.is_retry("GET", 502) and retry.is_retry("PUT", 503)
    assert not retry.is_retry("POST", 502) and not retry.is_retry("PATCH", 500)
    assert retry.is_retry("POST", 429) and retry.is_retry("PATCH", 403)  # refused before acting
    assert policy.urllib3_retry(post_is_safe=True).is_retry("POST", 502)
    assert not retry.is_retry("GET", 404)


# ---- pull requests and the sticky comment ---------------------------------------------------


def test_a_fork_pull_request_is_found_by_head_branch_and_sha(world: World) -> None:
    fork = world.fake.state.add_repo("alice/widgets", fork=True)
    other = world.fake.state.add_repo("mallory/widgets", fork=True)
    state = world.fake.state
    theirs = state.add_pull_request(world.repo, head_repo=fork, head_ref="patch-1", author="alice")
    state.add_pull_request(world.repo, head_repo=other, head_ref="patch-1", author="mallory")
    run = state.add_run(world.repo, pull=theirs)
    assert run.pull_request_numbers == []  # as GitHub: empty for a fork's run
    stale = state.add_run(world.repo, head_repo=fork, head_branch="patch-1")  # another commit

    with client(world) as gh:
        found = gh.pulls_for_run(REPO, gh.get_run(REPO, run.id))
        none = gh.pulls_for_run(REPO, gh.get_run(REPO, stale.id))
        own = gh.pulls_for_run(REPO, gh.get_run(REPO, world.run.id))
    assert [(p.number, p.head.sha) for p in found] == [(theirs.number, theirs.head_sha)]
    assert none == [] and [p.number for p in own] == [world.pull.number]
    searches = [parse_qs(r.query) for r in world.fake.requests(r"/pulls$")]
    assert [(q["head"], q["state"]) for q in searches] == [(["alice:patch-1"], ["open"])] * 2


def test_upsert_creates_once_edits_on_change_and_leaves_an_equal_body_alone(
    world: World,
) -> None:
    number = world.pull.number
    quoted = f"> {COMMENT_MARKER}\n> 3 failures\n\nwhy?"
    world.fake.state.add_comment(world.repo, number, "alice", quoted)
    world.fake.state.add_comment(world.repo, number, "mallory", f"{COMMENT_MARKER}\nfake")
    few = ClientOptions(retry=FAST.retry, per_page=2, seconds_between_writes=0)
    with client(world, few) as gh:
        first = gh.upsert_comment(REPO, number, f"{COMMENT_MARKER}\n3 failures")
        world.fake.state.add_comment(world.repo, number, "bob", "thanks")
        again = gh.upsert_comment(REPO, number, f"{COMMENT_MARKER}\n3 failures")
        changed = gh.upsert_comment(REPO, number, f"{COMMENT_MARKER}\n2 failures")
        found = gh.find_sticky_comment(REPO, number)

    assert (first.action, again.action, changed.action) == ("created", "unchanged", "updated")
    assert first.id == again.id == changed.id and found is not None and found.id == first.id
    assert len(world.fake.requests(r"/comments$", method="POST")) == 1
    assert len(world.fake.requests(r"/comments/\d+$", method="PATCH")) == 1
    ours = [c for c in world.fake.state.comments_on(world.repo, number) if "failures" in c.body]
    assert [(c.author.login, c.body) for c in ours] == [
        ("alice", quoted),
        ("triage-bot[bot]", f"{COMMENT_MARKER}\n2 failures"),
    ]


def test_an_ambiguous_create_is_checked_before_posting_again(world: World) -> None:
    world.fake.faults.fail(r"/comments$", status=502, times=1, method="POST")
    with client(world) as gh:
        result = gh.upsert_comment(REPO, world.pull.number, f"{COMMENT_MARKER}\nhi")
    assert result.action == "created"
    assert [r.method for r in world.fake.requests(r"/comments$")] == ["GET", "POST", "GET", "POST"]
    assert len(world.fake.state.comments_on(world.repo, world.pull.number)) == 1


def test_a_token_user_finds_its_own_comment(world: World) -> None:
    token = TokenAuth(world.fake.token_for(world.installation), login="triage-bot[bot]")
    world.fake.state.add_comment(world.repo, world.pull.number, "triage-bot[bot]", COMMENT_MARKER)
    with GitHubClient(world.fake.base_url, token, options=FAST) as gh:
        assert gh.upsert_comment(REPO, world.pull.number, COMMENT_MARKER).action == "unchanged"
    anonymous = TokenAuth(world.fake.token_for(world.installation))
    with (
        GitHubClient(world.fake.base_url, anonymous, options=FAST) as gh,
        pytest.raises(GitHubError, match="pass TokenAuth"),
    ):
        gh.find_sticky_comment(REPO, world.pull.number)


# ---- repository look-ups --------------------------------------------------------------------


def test_permission_contents_and_directory(world: World) -> None:
    config = "patterns:\n  - extra\n" * 20  # long enough for GitHub's wrapped base64
    world.fake.state.add_file(world.repo, ".github/triage-bot.yml", config)
    world.fake.state.add_file(world.repo, ".github/triage-bot/patterns/a.yml", "id: a\n")
    world.fake.state.grant(world.repo, "maria", "maintain")
    with client(world) as gh:
        maria = gh.permission(REPO, "maria")
        stranger = gh.permission(REPO, "nobody")
        blob = gh.get_file_blob(REPO, ".github/triage-bot.yml")
        assert blob is not None and blob.decoded_content == config.encode()
        assert gh.get_file_blob(REPO, ".github/triage-bot.yml", ref="other") is None
        assert gh.get_file_blob(REPO, ".github/triage-bot/patterns") is None
        entries = gh.list_entries(REPO, ".github/triage-bot/patterns") or []
        listing = [entry.path for entry in entries]
    assert maria is not None and (maria.permission, maria.role_name) == ("write", "maintain")
    assert maria.can_write and stranger is None
    assert listing == [".github/triage-bot/patterns/a.yml"]


def test_steps_of_a_job_still_running(world: World) -> None:
    steps = [NewStep("Set up job"), NewStep("Run tests", status="in_progress")]
    running = world.fake.state.add_job(
        world.run, NewJob("slow", status="in_progress", conclusion=None, steps=steps)
    )
    with client(world) as gh:
        job = gh.get_job(REPO, running.id)
    assert job.completed_at is None and job.steps[1].completed_at is None and not job_failed(job)
