"""Workflow runs, their attempts and jobs: the builders tests use to stage CI results."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from .models import Job, PullRequest, Repo, Step, WorkflowRun
from .specs import NewJob, NewStep, default_steps
from .state_core import StateCore


class ActionsState(StateCore):
    def add_run(
        self,
        repo: Repo,
        *,
        pull: PullRequest | None = None,
        head_sha: str | None = None,
        head_branch: str | None = None,
        head_repo: Repo | None = None,
        name: str = "CI",
        path: str = ".github/workflows/ci.yml",
        event: str | None = None,
        status: str = "completed",
        conclusion: str | None = "failure",
        pull_requests: Sequence[int] | None = None,
        html_url: str | None = None,
        jobs: Sequence[NewJob] = (),
    ) -> WorkflowRun:
        """A run (attempt 1) with `jobs`; `pull` fills the head fields from that pull request.

        Left as None, `pull_requests` is what GitHub computes: the open pull requests of this
        repository whose head is this commit, which is always empty for a run of a fork's PR.
        """
        with self.lock:
            if pull is not None:
                head_sha = head_sha or pull.head_sha
                head_branch = head_branch or pull.head_ref
                head_repo = head_repo or self.repos[pull.head_repo_id]
            sha = head_sha or self.new_sha()
            source = head_repo or repo
            now = self.now()
            run = WorkflowRun(
                id=self.next_id("run"),
                repo_id=repo.id,
                head_repo_id=source.id,
                workflow_id=self._workflow_id(repo, path),
                name=name,
                path=path,
                run_number=self.next_run_number(),
                run_attempt=1,
                event=event or ("pull_request" if pull is not None else "push"),
                status=status,
                conclusion=conclusion,
                head_sha=sha,
                head_branch=head_branch or repo.default_branch,
                display_title=pull.title if pull is not None else f"Commit {sha[:7]}",
                actor=pull.author if pull is not None else repo.owner,
                pull_request_numbers=list(pull_requests)
                if pull_requests is not None
                else self._open_pulls_at(repo, source, sha),
                html_url=html_url,
                created_at=now,
                updated_at=now,
                run_started_at=now,
            )
            self.runs[run.id] = run
            for spec in jobs:
                self.add_job(run, spec)
            return run

    def add_attempt(
        self,
        run: WorkflowRun,
        *,
        status: str = "completed",
        conclusion: str | None = "failure",
        jobs: Sequence[NewJob] = (),
    ) -> WorkflowRun:
        """Start the next attempt of `run` (as a re-run does) with its own `jobs`."""
        with self.lock:
            run.run_attempt += 1
            run.status, run.conclusion = status, conclusion
            run.updated_at = run.run_started_at = self.now()
            for spec in jobs:
                self.add_job(run, spec)
            return run

    def add_job(self, run: WorkflowRun, spec: NewJob, *, attempt: int | None = None) -> Job:
        with self.lock:
            started = self.now()
            steps = self._make_steps(spec, started)
            log = spec.log.encode() if isinstance(spec.log, str) else spec.log
            job = Job(
                id=self.next_id("job"),
                run_id=run.id,
                run_attempt=attempt or run.run_attempt,
                name=spec.name,
                status=spec.status,
                conclusion=spec.conclusion,
                steps=steps,
                created_at=started,
                started_at=started,
                completed_at=steps[-1].completed_at if spec.status == "completed" else None,
                labels=list(spec.labels),
                runner_name="GitHub Actions 2",
                html_url=spec.html_url,
                log=log,
            )
            self.jobs[job.id] = job
            return job

    def jobs_of(self, run: WorkflowRun, attempt: int | None = None) -> list[Job]:
        """The jobs of one attempt (default: the latest), or of all attempts when attempt=0."""
        wanted = run.run_attempt if attempt is None else attempt
        with self.lock:
            jobs = [job for job in self.jobs.values() if job.run_id == run.id]
            return [job for job in jobs if wanted == 0 or job.run_attempt == wanted]

    def expire_log(self, job: Job) -> None:
        with self.lock:
            job.log_expired = True

    def _workflow_id(self, repo: Repo, path: str) -> int:
        for run in self.runs.values():
            if run.repo_id == repo.id and run.path == path:
                return run.workflow_id
        return self.next_id("workflow")

    def _open_pulls_at(self, repo: Repo, head_repo: Repo, sha: str) -> list[int]:
        if head_repo.id != repo.id:
            return []
        return sorted(
            pull.number
            for (repo_id, _), pull in self.pulls.items()
            if repo_id == repo.id and pull.head_sha == sha and pull.state == "open"
        )

    @staticmethod
    def _make_steps(spec: NewJob, started: dt.datetime) -> list[Step]:
        wanted: Sequence[NewStep] = (
            spec.steps if spec.steps is not None else default_steps(spec.conclusion)
        )
        steps = []
        for number, step in enumerate(wanted, start=1):
            begin = started + dt.timedelta(seconds=2 * (number - 1))
            done = step.status == "completed"
            steps.append(
                Step(
                    number=number,
                    name=step.name,
                    status=step.status,
                    conclusion=step.conclusion if done else None,
                    started_at=begin if step.status != "queued" else None,
                    completed_at=begin + dt.timedelta(seconds=1) if done else None,
                )
            )
        return steps or [Step(1, "Set up job", "completed", "success", started, started)]
