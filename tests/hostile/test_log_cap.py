"""The App's log cap (TRIAGE_MAX_LOG_BYTES) on a log larger than it, whose failure is at the
end, as failures are: the comment shows the failure, at its real line, linked to the right step
of GitHub's log viewer. Against the fake GitHub over real HTTP."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import httpx
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import Job
from helpers import app_settings, triage_payload

from triage_bot.github_api.github import ClientOptions, RetryPolicy
from triage_bot.store.store import Store
from triage_bot.triage.pipeline import triage_job

REPO = "octo-org/widgets"
FAST = ClientOptions(
    retry=RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.05, max_wait=5.0),
    timeout=5.0,
    seconds_between_writes=0.0,
)
CAP = 64 * 1024
OUTPUT_LINES = 30_000  # ~1.7 MB of test output: 26 times the cap


def long_log(job: Job) -> tuple[bytes, int, int]:
    """(log, line of the failure, line of the failing step's `##[group]`): the steps' group
    lines at the start, then the output of step 3, whose last lines hold the failure."""
    lines = []
    for step in job.steps[:3]:
        assert step.started_at is not None
        at = (step.started_at + dt.timedelta(milliseconds=100)).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
        lines.append(f"{at} ##[group]{step.name}")
        lines.append(f"{at} ##[endgroup]")
    group_line = len(lines) - 1  # the third step's ##[group] line (1-based)
    lines += [f"{at} tests/test_{n:05d}.py::test_widget PASSED" for n in range(OUTPUT_LINES)]
    lines.append(f"{at} E   ModuleNotFoundError: No module named 'widgets.native'")
    failure_line = len(lines)
    lines += [
        f"{at} FAILED tests/test_import.py",
        f"{at} ##[error]Process completed with exit code 1.",
    ]
    return ("\n".join(lines) + "\n").encode(), failure_line, group_line


def test_a_log_past_the_cap_shows_its_failure_at_the_end_with_its_real_line(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    repo = fake_github.state.add_repo(REPO)
    installation = fake_github.install("octo-org")
    pull = fake_github.state.add_pull_request(repo, author="alice", head_ref="native")
    run = fake_github.state.add_run(repo, pull=pull)
    job = fake_github.state.add_job(run, NewJob("test (3.12)", log=b""))
    job.log, failure_line, group_line = long_log(job)
    assert len(job.log) > 20 * CAP
    settings = app_settings(fake_github, tmp_path, max_log_bytes=CAP)
    store = Store(settings.database_url)
    try:
        result = triage_job(
            triage_payload(REPO, installation.id, run), settings, store, options=FAST
        )
    finally:
        store.close()

    [comment] = fake_github.state.comments_on(repo, pull.number)
    body = comment.body
    assert "widgets.native" in body
    shown = re.search(r"test \(3\.12\), line (\d+)\]\(([^)]+)\)", body)
    assert shown is not None, body
    assert int(shown.group(1)) == failure_line
    # Step 3 began in the part of the log that was only counted: its mark was kept.
    assert shown.group(2).endswith(f"/job/{job.id}#step:3:{failure_line - group_line + 1}")
    # The tail starts after the line the cut falls in: that line is counted with the head.
    counted = job.log[: len(job.log) - CAP].count(b"\n") + 1
    [job_json] = result["jobs"]
    assert job_json["note"] == (
        f"only the last {CAP:,} bytes of the log were read: lines 1-{counted:,} were counted, "
        "not read"
    )


def test_the_fake_log_host_answers_ranges_as_azure_blob_storage_does(
    fake_github: FakeGitHub,
) -> None:
    repo = fake_github.state.add_repo(REPO)
    run = fake_github.state.add_run(repo)
    log = b"".join(b"line %03d\n" % n for n in range(100))  # 900 bytes
    job = fake_github.state.add_job(run, NewJob("build", log=log))
    url = fake_github._log_links.url_for(job.id)  # what the API's 302 leads to

    def get(wanted: str) -> httpx.Response:
        with httpx.Client() as blobs:
            return blobs.get(url, headers={"Range": wanted, "Accept-Encoding": "identity"})

    last, middle, rest = get("bytes=-18"), get("bytes=9-17"), get("bytes=891-")
    assert (last.status_code, last.content) == (206, b"line 098\nline 099\n")
    assert last.headers["content-range"] == "bytes 882-899/900"
    assert (middle.status_code, middle.content) == (206, b"line 001\n")
    assert (rest.status_code, rest.content) == (206, b"line 099\n")
    past = get("bytes=900-")
    assert past.status_code == 416 and past.headers["content-range"] == "bytes */900"
    for ignored in ("bytes=0-5,10-20", "lines=1-2", "bytes=9-3"):
        whole = get(ignored)
        assert (whole.status_code, whole.content) == (200, log), ignored
