"""Each failed job's passing reference, against the fake GitHub over real HTTP: found on the
merge base, the base branch or the head branch; its log downloaded once (then from the disk
cache), never holding up the triage; missing, expired or slow references leave the report whole
with a note. The logs are a real pass/fail pair of one GitHub Actions job
(tests/triage/data/grasscutter-build/SOURCE.md)."""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import Job, PullRequest, Repo, WorkflowRun
from helpers import app_settings, triage_payload

from triage_bot.config import Settings
from triage_bot.core.compare import PassingUnreadable
from triage_bot.core.report import Reference, Report
from triage_bot.github_api.github import ClientOptions, GitHubClient, RetryPolicy, client_for_repo
from triage_bot.repo.repo_catalog import builtin_catalog
from triage_bot.store.store import Store
from triage_bot.triage.passing_cache import PassingCache
from triage_bot.triage.pipeline import triage_job
from triage_bot.triage.reference import MAX_LOOKUP_CALLS, CompareWith, References
from triage_bot.triage.run import triage_run
from triage_bot.triage.same_job import job_family

REPO = "octo-org/widgets"
PAIR = Path(__file__).parent / "data" / "grasscutter-build"
FAIL_LOG = (PAIR / "fail.log").read_bytes()
PASS_LOG = (PAIR / "pass.log").read_bytes()
# fail.log 620 (the passing run printed it too) and 623 (the cause), without GitHub's timestamps.
SHARED_WARNING = FAIL_LOG.splitlines()[619].decode()[29:]
THE_ERROR = FAIL_LOG.splitlines()[622].decode()[29:]
FAST = ClientOptions(
    retry=RetryPolicy(attempts=2, backoff=0.01, max_backoff=0.05, max_wait=5.0),
    timeout=5.0,
    seconds_between_writes=0.0,
)


@dataclass
class World:
    fake: FakeGitHub
    repo: Repo
    pull: PullRequest
    settings: Settings
    client: GitHubClient
    cache: PassingCache

    def passing_run(self, *, sha: str | None = None, branch: str = "main", **kw: Any) -> Job:
        """A push run of the workflow on `branch` whose `build` job passed; its job."""
        jobs = kw.pop("jobs", [NewJob("build", conclusion="success", log=PASS_LOG)])
        run = self.fake.state.add_run(
            self.repo, head_sha=sha, head_branch=branch, event="push", conclusion="success",
            jobs=jobs, pull_requests=[], **kw,
        )  # fmt: skip
        return self.fake.state.jobs_of(run)[0]

    def failing_run(self, names: tuple[str, ...] = ("build",)) -> WorkflowRun:
        jobs = [NewJob(name, log=FAIL_LOG) for name in names]
        return self.fake.state.add_run(self.repo, pull=self.pull, jobs=jobs)

    def triage(self, run: WorkflowRun, **compare: Any) -> Report:
        with_ = CompareWith(**{"base_ref": "main", "cache": self.cache, **compare})
        report, _ = triage_run(self.client, REPO, run.id, None, builtin_catalog(), compare=with_)
        return report

    def log_downloads(self, job: Job) -> int:
        return len(self.fake.requests(rf"/actions/jobs/{job.id}/logs$"))


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    repo = fake_github.state.add_repo(REPO)
    fake_github.install("octo-org")
    pull = fake_github.state.add_pull_request(repo, head_ref="fix-blossoms")
    settings = app_settings(fake_github, tmp_path)
    with client_for_repo(settings, REPO, options=FAST) as client:
        yield World(fake_github, repo, pull, settings, client, PassingCache(tmp_path / "compare"))


def job_url(world: World, job: Job) -> str:
    return f"{world.fake.base_url.rstrip('/')}/{REPO}/actions/runs/{job.run_id}/job/{job.id}"


def run_number(world: World, job: Job) -> int:
    return world.fake.state.runs[job.run_id].run_number


def lookups(world: World, run: WorkflowRun, since: int) -> list[str]:
    """The requests of the reference look-up among those made since the `since`th."""
    return [
        r.path
        for r in world.fake.requests()[since:]
        if "/compare/" in r.path
        or r.path.endswith("/actions/runs")
        or (r.path.endswith("/jobs") and f"/runs/{run.id}/" not in r.path)
    ]


# ---- the reference ---------------------------------------------------------------------------


def test_a_failed_job_gets_its_passing_run_on_the_merge_base_and_its_log(world: World) -> None:
    at_merge_base = world.passing_run(sha=world.pull.base_sha)
    newer_on_main = world.passing_run()  # main moved on since the branch left it
    run = world.failing_run()
    before = len(world.fake.requests())
    report = world.triage(run)
    # The merge base, its runs, the jobs of its run: nothing more once every job has one.
    assert len(lookups(world, run, before)) == 3
    [job] = report.jobs
    assert job.reference == Reference(
        f"run #{run_number(world, at_merge_base)}, job build, passing",
        job_url(world, at_merge_base),
    )
    assert job.result.root_cause is not None  # the triage itself is whole
    assert not any("passing" in note for note in report.footer_notes)
    assert world.log_downloads(at_merge_base) == 1 and world.log_downloads(newer_on_main) == 0
    # What the classifier was given: the passing log's lines, as the real pair has them.
    [failed] = world.client.list_jobs(REPO, run.id).failed
    references = References(world.client, world.client.get_run(REPO, run.id), [failed],
                            CompareWith("main", world.cache), builtin_catalog())  # fmt: skip
    passing, reference = references.for_job(failed)
    assert passing is not None and reference == job.reference
    # javac's deprecation warning both runs printed; the failing run's error, this one not.
    assert passing.has_many([THE_ERROR, SHARED_WARNING]) == [False, True]
    references.close()
    with pytest.raises(PassingUnreadable):  # its log is closed with the References
        passing.has_many([SHARED_WARNING])


def test_without_a_run_at_the_merge_base_the_latest_passing_run_of_main_is_taken(
    world: World,
) -> None:
    older = world.passing_run()
    latest = world.passing_run()
    # A later run of main where the job failed is passed over: it is not a passing reference.
    world.passing_run(jobs=[NewJob("build", conclusion="failure", log=FAIL_LOG)])
    [job] = world.triage(world.failing_run()).jobs
    assert job.reference is not None and job.reference.url == job_url(world, latest)
    assert world.log_downloads(older) == 0


def test_matrix_and_shard_names_find_their_family_and_the_same_cell_first(world: World) -> None:
    jobs = [
        NewJob("build (11, windows)", conclusion="success", log=PASS_LOG),
        NewJob("build (17, ubuntu)", conclusion="success", log=PASS_LOG),
        NewJob("build (17, ubuntu) shard 2/4", conclusion="success", log=PASS_LOG),
    ]
    world.passing_run(sha=world.pull.base_sha, jobs=jobs)
    passing = {j.name: j for j in world.fake.state.jobs.values() if j.conclusion == "success"}
    run = world.failing_run(("build (17, ubuntu) shard 2/4", "build (21, ubuntu)", "lint"))
    report = world.triage(run)
    references = {j.name: j.reference for j in report.jobs}
    assert references["build (17, ubuntu) shard 2/4"] == Reference(
        f"run #{run_number(world, passing['build (11, windows)'])}, "
        "job build (17, ubuntu) shard 2/4, passing",
        job_url(world, passing["build (17, ubuntu) shard 2/4"]),
    )
    # No "build (21, ubuntu)" passed: its family's cell with the most in common stands in.
    cell = references["build (21, ubuntu)"]
    assert cell is not None and cell.url == job_url(world, passing["build (17, ubuntu)"])
    assert references["lint"] is None
    assert "no passing run of the job was found (on main or on earlier commits of " in (
        "\n".join(report.footer_notes)
    )


def test_a_push_run_compares_with_an_earlier_passing_commit_of_its_branch(world: World) -> None:
    earlier = world.passing_run(branch="release")
    jobs = [NewJob("build", log=FAIL_LOG)]
    run = world.fake.state.add_run(world.repo, head_branch="release", event="push", jobs=jobs)
    report, _ = triage_run(world.client, REPO, run.id, None, builtin_catalog(),
                           compare=CompareWith(None, world.cache))  # fmt: skip
    [job] = report.jobs
    assert job.reference is not None and job.reference.url == job_url(world, earlier)


def test_the_look_up_makes_a_few_requests_however_many_jobs_fail(world: World) -> None:
    for _ in range(6):  # many runs on main and on the branch, none with a passing `build-N`
        world.passing_run(jobs=[NewJob("docs", conclusion="success")])
        world.passing_run(branch="fix-blossoms", jobs=[NewJob("docs", conclusion="success")])
    world.passing_run(sha=world.pull.base_sha, jobs=[NewJob("docs", conclusion="success")])
    names = tuple(f"build-{n}" for n in range(12))
    run = world.failing_run(names)
    before = len(world.fake.requests())
    report = world.triage(run)
    assert len(lookups(world, run, before)) == MAX_LOOKUP_CALLS
    assert all(job.reference is None for job in report.jobs)
    [note] = [n for n in report.footer_notes if "passing" in n]
    assert note.endswith("build-0, build-1, build-2, build-3, build-4 and 7 more")


# ---- never in the way ------------------------------------------------------------------------


def test_an_expired_reference_log_leaves_the_report_whole_with_a_note(world: World) -> None:
    passing = world.passing_run(sha=world.pull.base_sha)
    passing.log_expired = True  # GitHub answers 410
    report = world.triage(world.failing_run())
    [job] = report.jobs
    assert job.reference is None and job.result.root_cause is not None
    number = run_number(world, passing)
    assert (
        f"not compared with a passing run: the log of the passing run #{number} has expired: build"
        in report.footer_notes
    )


def test_a_slow_reference_log_is_not_waited_for_past_the_timeout(world: World) -> None:
    passing = world.passing_run(sha=world.pull.base_sha)
    world.fake.faults.delay(rf"/actions/jobs/{passing.id}/logs$", 3.0, times=1)
    started = time.monotonic()
    report = world.triage(world.failing_run(), timeout=0.5)
    assert time.monotonic() - started < 2.5
    [job] = report.jobs
    assert job.reference is None and job.result.root_cause is not None
    assert any("took longer than 0.5 s: build" in note for note in report.footer_notes)


def test_a_failing_look_up_leaves_the_report_whole_with_a_note(world: World) -> None:
    world.passing_run(sha=world.pull.base_sha)
    world.fake.faults.fail(r"/compare/", status=500, times=None)
    report = world.triage(world.failing_run())
    assert report.jobs[0].result.root_cause is not None
    assert any("the passing runs could not be looked up" in n for n in report.footer_notes)


# ---- the cache -------------------------------------------------------------------------------


def test_a_second_triage_reads_the_reference_from_the_cache(world: World) -> None:
    passing = world.passing_run(sha=world.pull.base_sha)
    first = world.triage(world.failing_run())
    second = world.triage(world.failing_run())  # a new push of the pull request, say
    assert first.jobs[0].reference == second.jobs[0].reference is not None
    assert world.log_downloads(passing) == 1
    [kept] = world.cache.root.glob("*.log")
    assert kept.read_bytes() == PASS_LOG  # the log as GitHub served it


def _write(data: bytes) -> Callable[[BinaryIO], bool]:
    def write(file: BinaryIO) -> bool:
        file.write(data)
        return True

    return write


def test_the_cache_is_bounded_and_expires(tmp_path: Path) -> None:
    log = b"".join(b"line %d\n" % n for n in range(3000))
    cache = PassingCache(tmp_path, max_bytes=3 * len(log) + 1024, max_age_s=3600)
    for job_id in range(1, 6):
        cache.put("api", "o/r", job_id, _write(log))
        path = cache.path("api", "o/r", job_id)
        os.utime(path, (time.time() - 100 + job_id, time.time() - 100 + job_id))
    assert cache.size() <= cache.max_bytes
    kept = [job_id for job_id in range(1, 6) if cache.path("api", "o/r", job_id).exists()]
    assert kept == [3, 4, 5]  # the least recently used went first
    found = cache.get("api", "o/r", 3)
    assert found is not None and found.read_bytes() == log
    assert cache.get("api", "o/other", 3) is None  # another repository's job 3
    # Expired: older than max_age_s, it counts as absent and is removed.
    old = time.time() - 7200
    os.utime(cache.path("api", "o/r", 4), (old, old))
    assert cache.get("api", "o/r", 4) is None and not cache.path("api", "o/r", 4).exists()


def test_a_download_that_fails_half_way_leaves_nothing_behind(tmp_path: Path) -> None:
    cache = PassingCache(tmp_path)

    class Torn(Exception):
        pass

    def torn(file: BinaryIO) -> bool:
        file.write(b"the first half of a log\n")
        raise Torn  # as the download raises NoPassingLog

    with pytest.raises(Torn):
        cache.put("api", "o/r", 7, torn)
    assert cache.put("api", "o/r", 8, lambda file: False) is None  # not whole: not kept
    assert list(tmp_path.iterdir()) == [] and cache.get("api", "o/r", 7) is None


# ---- end to end ------------------------------------------------------------------------------


def test_the_pipeline_compares_with_the_base_branch_of_the_pull_request(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    passing = world.passing_run(sha=world.pull.base_sha)
    run = world.failing_run()
    installation = world.fake.install("octo-org")
    with closing(Store(world.settings.database_url)) as store:
        payload = triage_payload(REPO, installation.id, run)
        result = triage_job(payload, world.settings, store, options=FAST)
    assert result["comments"][0]["action"] == "created"
    [body] = [c.body for c in world.fake.state.comments_on(world.repo, world.pull.number)]
    assert "not compared with a passing run" not in body
    assert "variable activity is already defined" in body
    # The comment names the reference, linked to the passing job.
    number = run_number(world, passing)
    # (a word joiner keeps "#1" from linking to issue 1: the label is sanitised like a log's)
    label = f"run #\u2060{number}, job build, passing"
    assert f"compared with [{label}]({job_url(world, passing)})" in body
    assert world.log_downloads(passing) == 1
    assert list((tmp_path / "cache" / "compare").glob(f"{passing.id}-*.log"))


def test_through_the_app_a_root_cause_the_passing_run_also_printed_is_demoted(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # numpy's pair (tests/compare_pairs, BugSwarm): its feature probes print compiler errors
    # in every run. With the base branch's passing run of the job, the failing test wins.
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    pairs = Path(__file__).parents[1] / "compare_pairs"
    [row] = [
        r for r in json.loads((pairs / "index.json").read_text())["logs"] if "numpy" in r["file"]
    ]
    fail_log = gzip.decompress((pairs / row["file"]).read_bytes())
    pass_log = gzip.decompress((pairs / row["passing"]).read_bytes())
    world.passing_run(
        sha=world.pull.base_sha, jobs=[NewJob("build", conclusion="success", log=pass_log)]
    )
    run = world.fake.state.add_run(
        world.repo, pull=world.pull, jobs=[NewJob("build", log=fail_log)]
    )
    installation = world.fake.install("octo-org")
    with closing(Store(world.settings.database_url)) as store:
        result = triage_job(
            triage_payload(REPO, installation.id, run), world.settings, store, options=FAST
        )

    [job] = result["jobs"]
    root = job["root_cause"]
    assert any(first <= root["line"] <= last for first, last in row["ranges"]) and root["new"]
    old = [m for m in job["also"] if m["new"] is False]
    assert old and all("also in the passing run" in m["reason"] for m in old)
    [body] = [c.body for c in world.fake.state.comments_on(world.repo, world.pull.number)]
    assert f"line {root['line']}" in body and "compared with" in body


def test_a_reusable_workflows_job_sheds_the_matrix_values_of_each_of_its_parts() -> None:
    # GitHub names a called workflow's job "caller (matrix) / called (matrix)".
    assert job_family("build (3.11, ubuntu) / test (pg 16) shard 2/4") == "build / test"
    assert job_family("build (3.11) / test") == job_family("build (3.12) / test")
    assert job_family("lint / ruff") == "lint / ruff"
    assert job_family("(x) / y") == "(x) / y"
