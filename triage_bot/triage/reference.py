"""The passing reference of each failed job: the latest successful run of the same job.

"The same job" is the same workflow file and the same job name once its matrix values and
shard number are set aside (same_job.job_family); a job of the exact same name wins over a
sibling of its family. Runs are looked at in this order, newest first within each:

1. the runs at the pull request's merge base with its base branch (GitHub's compare endpoint
   gives the merge base): what the branch started from, the fairest reference;
2. the base branch's latest finished runs (same_job.base_runs, as the verdict comparison);
3. earlier commits of the run's own head branch (a push run of `main` has no pull request:
   its reference is the last commit of `main` where the job passed).

A run counts whatever its conclusion: a failed run's other jobs may have passed. The look-up
is done once per triage for all its failed jobs, in at most `MAX_LOOKUP_CALLS` requests
(a listing of runs or of one run's jobs is one), whatever the number of jobs: a few calls per
run, never one per job. Jobs left without a reference are compared with nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

from triage_bot.config import DEFAULT_COMPARE_TIMEOUT, DEFAULT_MAX_LOG_BYTES
from triage_bot.core import sources
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.compare import PassingFile, PassingUnreadable
from triage_bot.core.report import Reference
from triage_bot.github_api.github import GitHubClient, WorkflowJob, WorkflowRun
from triage_bot.triage.passing_cache import PassingCache
from triage_bot.triage.same_job import base_runs, job_family, same_workflow

log = logging.getLogger(__name__)

# Requests the look-up may make for one triage: the merge base, its runs, the base branch's
# runs and the head branch's (4 listings), and the jobs of 4 candidate runs.
MAX_LOOKUP_CALLS = 8
# Candidate runs whose jobs are listed, per source: the latest few; an older run would
# compare with code that has moved on.
RUNS_PER_SOURCE = 3


@dataclass(frozen=True)
class PassingJob:
    """The passing job a failed job is compared with, and the run it belongs to."""

    run: WorkflowRun
    job: WorkflowJob
    where: str  # "the merge base with main", "main", "an earlier commit of fix-imports"

    @property
    def label(self) -> str:
        return f"run #{self.run.run_number}, job {self.job.name}, passing"

    @property
    def url(self) -> str | None:
        return self.job.html_url or self.run.html_url or None


class _Budget:
    def __init__(self, calls: int) -> None:
        self.left = calls

    def spend(self) -> bool:
        """Whether one more request may be made (and count it)."""
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def find_references(
    client: GitHubClient,
    run: WorkflowRun,
    failed: Sequence[WorkflowJob],
    base_ref: str | None,
    *,
    max_calls: int = MAX_LOOKUP_CALLS,
) -> dict[int, PassingJob]:
    """The passing reference of each failed job that has one, by the failed job's id."""
    budget = _Budget(max_calls)
    wanted = {job.id: job for job in failed}
    found: dict[int, PassingJob] = {}
    repo = run.repository.full_name
    if not wanted:
        return found
    for candidate, where in _candidates(client, run, base_ref, budget):
        if not budget.spend():
            break
        jobs = client.list_jobs(repo, candidate.id).jobs
        for job_id, job in list(wanted.items()):
            counterpart = passing_counterpart(job.name, jobs)
            if counterpart is not None:
                found[job_id] = PassingJob(candidate, counterpart, where)
                del wanted[job_id]
        if not wanted:
            break  # before the next listing of runs is asked for
    return found


def passing_counterpart(name: str, jobs: Sequence[WorkflowJob]) -> WorkflowJob | None:
    """The job of `jobs` that passed and is `name`'s: the same name, else the same family
    with the most matrix values in common ("test (3.12, ubuntu)" for "test (3.11, ubuntu)")."""
    passed = [job for job in jobs if job.conclusion == "success"]
    exact = next((job for job in passed if job.name == name), None)
    if exact is not None:
        return exact
    family = job_family(name)
    siblings = [job for job in passed if job_family(job.name) == family]
    if not siblings:
        return None
    words = set(_values(name))
    return max(siblings, key=lambda job: len(words & set(_values(job.name))))


def _values(name: str) -> list[str]:
    return name.replace("(", " ").replace(")", " ").replace(",", " ").split()


# ---- where to look ---------------------------------------------------------------------------


def _candidates(
    client: GitHubClient, run: WorkflowRun, base_ref: str | None, budget: _Budget
) -> Iterator[tuple[WorkflowRun, str]]:
    """Runs of the run's workflow that may hold its jobs passing, best first; each listing
    is made only when the runs before it did not give every job its reference."""
    seen = {run.id}

    def fresh(runs: Sequence[WorkflowRun], where: str) -> Iterator[tuple[WorkflowRun, str]]:
        kept = [r for r in runs if r.id not in seen and r.head_sha != run.head_sha]
        for candidate in kept[:RUNS_PER_SOURCE]:
            seen.add(candidate.id)
            yield candidate, where

    repo = run.repository.full_name
    if base_ref:
        merge_base = client.merge_base(repo, base_ref, run.head_sha) if budget.spend() else None
        if merge_base and budget.spend():
            at_base = [
                r
                for r in client.runs_for_commit(repo, merge_base)
                if same_workflow(r, run) and r.status == "completed"
            ]
            yield from fresh(at_base, f"the merge base with {base_ref}")
        if budget.spend():
            yield from fresh(base_runs(client, run, base_ref), base_ref)
    if run.head_branch and budget.spend():
        yield from fresh(
            _earlier_on_head_branch(client, run), f"an earlier commit of {run.head_branch}"
        )


def _earlier_on_head_branch(client: GitHubClient, run: WorkflowRun) -> list[WorkflowRun]:
    repo = run.repository.full_name
    branch = run.head_branch or ""
    runs = client.list_workflow_runs(repo, run.workflow_id, branch, status="completed")
    home = run.head_repository.full_name if run.head_repository else repo
    started = _created(run)
    return [
        r
        for r in runs
        # The same branch of the same repository (a fork's branch may share the name).
        if (r.head_repository.full_name if r.head_repository else repo) == home
        and _created(r) <= started
    ]


def _created(run: WorkflowRun) -> dt.datetime:
    return run.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)


# ---- the passing logs, in the background -------------------------------------------------------


@dataclass(frozen=True)
class CompareWith:
    """How a triage compares each failed job with its passing reference."""

    base_ref: str | None = None  # the pull request's base branch (None: not a pull request's run)
    cache: PassingCache | None = None  # None: every reference log is downloaded
    # Seconds from the triage's start that a job waits for its passing log; past them the
    # job is classified without it (the comment is never held up by a reference).
    timeout: float = DEFAULT_COMPARE_TIMEOUT
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES


class NoPassingLog(Exception):
    """Why a reference's log cannot be compared with, in a few words."""


# Look-ups and reference downloads run here, beside the failing logs' threads (run.py): a job
# waiting for its reference never holds up the thread its reference needs.
_reference_pool = ThreadPoolExecutor(4, thread_name_prefix="triage-reference")


class References:
    """The passing references of one triage's failed jobs: looked up at once, in the
    background, and each reference's log downloaded (or read from the cache) once, also in
    the background, while the failing logs stream. `for_job` waits for one job's; `notes`
    says, one line per reason, which jobs were compared with nothing and why."""

    def __init__(
        self,
        client: GitHubClient,
        run: WorkflowRun,
        failed: Sequence[WorkflowJob],
        compare: CompareWith,
        catalog: CompiledCatalog,
    ) -> None:
        self._client, self._run, self._compare = client, run, compare
        self._catalog = catalog
        self._repo = run.repository.full_name
        self._deadline = time.monotonic() + compare.timeout
        self._lock = threading.Lock()
        self._why: dict[str, list[WorkflowJob]] = {}  # reason -> the jobs it concerns
        self._order = {job.id: index for index, job in enumerate(failed)}
        self._downloads: dict[int, Future[Path]] = {}  # by the passing job's id
        self._opened: list[BinaryIO] = []  # the passing logs being compared with
        self._scratch: tempfile.TemporaryDirectory[str] | None = None  # when not cached
        self._lookup = _reference_pool.submit(self._look_up, list(failed))

    def for_job(self, job: WorkflowJob) -> tuple[PassingFile | None, Reference | None]:
        """The job's passing log and reference, waiting for them until the deadline; (None,
        None) when there is nothing to compare with (the reason goes to `notes`). The log
        is read once the job's own is classified, for the lines it asks about."""
        try:
            found = self._lookup.result(timeout=self._left())
        except FutureTimeout:
            return self._without(job, "the look-up of the passing runs took too long")
        except Exception as error:  # the comparison is extra: the triage stands without it
            log.warning("%s run %d: no reference look-up", self._repo, self._run.id, exc_info=True)
            return self._without(job, f"the passing runs could not be looked up: {error}")
        reference = found.get(job.id)
        if reference is None:
            return self._without(job, f"no passing run of the job was found ({self._places()})")
        passing_job, download = reference
        try:
            path = download.result(timeout=self._left())
            opened = path.open("rb")  # held open: a pruned entry is still read whole
        except FutureTimeout:
            why = f"the log of the passing run took longer than {self._compare.timeout:g} s"
            return self._without(job, why)
        except NoPassingLog as error:
            return self._without(job, str(error))
        except Exception as error:
            log.warning("%s job %d: no passing log", self._repo, job.id, exc_info=True)
            return self._without(job, f"the log of the passing run could not be read: {error}")
        with self._lock:
            self._opened.append(opened)
        passing = PassingFile(partial(_file_chunks, opened), self._catalog.prefilter.name)
        return passing, Reference(passing_job.label, passing_job.url)

    def unread(self, job: WorkflowJob, why: str) -> None:
        """The job's passing log could not be read after all (`why`): say so in the notes."""
        self._without(job, why)

    def close(self) -> None:
        """Drop the downloads not started (their jobs went without); one under way finishes
        into the cache, for the next triage."""
        self._lookup.cancel()
        for download in list(self._downloads.values()):
            download.cancel()
        with self._lock:
            opened, self._opened = self._opened, []
        for file in opened:
            file.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    def notes(self) -> list[str]:
        with self._lock:
            reasons = [
                (why, sorted(jobs, key=lambda j: self._order[j.id]))
                for why, jobs in self._why.items()
            ]
        reasons.sort(key=lambda reason: self._order[reason[1][0].id])  # the run's job order
        return [
            f"not compared with a passing run: {why}: {_names([j.name for j in jobs])}"
            for why, jobs in reasons
        ]

    # ---- in the background ------------------------------------------------------------------

    def _look_up(self, failed: list[WorkflowJob]) -> dict[int, tuple[PassingJob, Future[Path]]]:
        found = find_references(self._client, self._run, failed, self._compare.base_ref)
        started: dict[int, tuple[PassingJob, Future[Path]]] = {}
        for job_id, passing_job in found.items():
            download = self._downloads.get(passing_job.job.id)
            if download is None:  # two failed jobs of one family may share their reference
                download = _reference_pool.submit(self._passing_log, passing_job)
                self._downloads[passing_job.job.id] = download
            started[job_id] = (passing_job, download)
        return started

    def _passing_log(self, reference: PassingJob) -> Path:
        """The passing job's log on disk: from the cache, else downloaded into it (or, with
        no cache or one that cannot be written, into a folder of this triage's own)."""
        cache, api_url, job_id = self._compare.cache, self._client.api_url, reference.job.id
        cached = cache.get(api_url, self._repo, job_id) if cache else None
        if cached is not None:
            return cached
        download = partial(self._download, reference)
        kept = cache.put(api_url, self._repo, job_id, download) if cache else None
        if kept is None:
            kept = self._scratch_cache().put(api_url, self._repo, job_id, download)
        if kept is None:
            raise NoPassingLog("the log of the passing run could not be written to disk")
        return kept

    def _download(self, reference: PassingJob, file: BinaryIO) -> bool:
        def write(chunk: bytes) -> bool:
            file.write(chunk)
            return True

        job_id, max_bytes = reference.job.id, self._compare.max_log_bytes
        outcome = self._client.stream_job_log(self._repo, job_id, write, max_bytes)
        run = f"run #{reference.run.run_number}"
        if outcome.status == "expired":
            raise NoPassingLog(f"the log of the passing {run} has expired")
        if outcome.status == "missing":
            raise NoPassingLog(f"GitHub has no log for the passing {run}")
        if outcome.status != "ok":
            raise NoPassingLog(
                f"the log of the passing {run} could not be downloaded ({outcome.reason})"
            )
        return True

    def _scratch_cache(self) -> PassingCache:
        with self._lock:
            if self._scratch is None:
                self._scratch = tempfile.TemporaryDirectory(prefix="triage-passing-")
            return PassingCache(Path(self._scratch.name), max_bytes=1 << 62)

    def _left(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def _without(self, job: WorkflowJob, why: str) -> tuple[None, None]:
        with self._lock:
            self._why.setdefault(why, []).append(job)
        return None, None

    def _places(self) -> str:
        places = []
        if self._compare.base_ref:
            places.append(f"on {self._compare.base_ref}")
        if self._run.head_branch:
            places.append(f"on earlier commits of {self._run.head_branch}")
        return " or ".join(places) or "nowhere to look"


def _names(jobs: Sequence[str], shown: int = 5) -> str:
    more = f" and {len(jobs) - shown} more" if len(jobs) > shown else ""
    return ", ".join(jobs[:shown]) + more


def _file_chunks(opened: BinaryIO) -> Iterator[bytes]:
    """An open passing log from its start (positioned reads: the handle may be shared by two
    failed jobs of one family, read in two threads)."""
    offset = 0
    try:
        while chunk := os.pread(opened.fileno(), sources.CHUNK_BYTES, offset):
            offset += len(chunk)
            yield chunk
    except (OSError, ValueError) as error:  # ValueError: closed meanwhile
        raise PassingUnreadable(f"the log of the passing run could not be read: {error}") from None
