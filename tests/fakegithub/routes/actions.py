"""GitHub Actions: a run, its jobs (per attempt, paginated), a job, its log, and re-runs."""

from __future__ import annotations

from ..http_types import HttpError, Response, json_response
from ..models import Job, Repo, Rerun, RerunKind, WorkflowRun
from ..pagination import paginate
from ..payloads.actions import job_payload, pull_minimal_payload, run_payload
from ..routing import Route, RouteContext

READ = (("actions", "read"),)
WRITE = (("actions", "write"),)
_RUN = "/repos/{owner}/{repo}/actions/runs/{run_id}"
_JOB = "/repos/{owner}/{repo}/actions/jobs/{job_id}"


def _run(ctx: RouteContext, repo: Repo) -> WorkflowRun:
    run = ctx.state.runs.get(ctx.int_param("run_id"))
    if run is None or run.repo_id != repo.id:
        raise HttpError(404, "Not Found")
    return run


def _job(ctx: RouteContext, repo: Repo) -> tuple[Job, WorkflowRun]:
    job = ctx.state.jobs.get(ctx.int_param("job_id"))
    run = ctx.state.runs.get(job.run_id) if job else None
    if job is None or run is None or run.repo_id != repo.id:
        raise HttpError(404, "Not Found")
    return job, run


def _run_json(ctx: RouteContext, run: WorkflowRun, repo: Repo) -> Response:
    head = ctx.state.repos[run.head_repo_id]
    excluded = ctx.request.query("exclude_pull_requests") == "true"
    pulls = [] if excluded else pulls_of(ctx, run, repo)
    return json_response(200, run_payload(ctx.urls, run, repo, head, pulls))


def pulls_of(ctx: RouteContext, run: WorkflowRun, repo: Repo) -> list[dict[str, object]]:
    found = []
    for number in run.pull_request_numbers:
        pull = ctx.state.pulls.get((repo.id, number))
        if pull is not None:
            head = ctx.state.repos[pull.head_repo_id]
            found.append(pull_minimal_payload(ctx.urls, pull, repo, head))
    return found


def get_run(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        return _run_json(ctx, _run(ctx, repo), repo)


def _jobs_page(ctx: RouteContext, run: WorkflowRun, repo: Repo, jobs: list[Job]) -> Response:
    rest = ctx.request.path.split("/", 4)[4]  # what follows /repos/{owner}/{repo}/
    page = paginate(jobs, ctx.request, ctx.urls.repo_link_base(repo, rest))
    payload = {
        "total_count": len(jobs),
        "jobs": [job_payload(ctx.urls, job, run, repo) for job in page.items],
    }
    return json_response(200, payload, page.headers())


def list_jobs(ctx: RouteContext) -> Response:
    """filter=latest (the default): the latest attempt's jobs; filter=all: every attempt's."""
    with ctx.state.lock:
        repo = ctx.repo()
        run = _run(ctx, repo)
        every = ctx.request.query("filter") == "all"
        jobs = ctx.state.jobs_of(run, 0 if every else None)
        return _jobs_page(ctx, run, repo, jobs)


def list_attempt_jobs(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        run = _run(ctx, repo)
        attempt = ctx.int_param("attempt_number")
        if not 1 <= attempt <= run.run_attempt:
            raise HttpError(404, "Not Found")
        return _jobs_page(ctx, run, repo, ctx.state.jobs_of(run, attempt))


def get_job(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        job, run = _job(ctx, repo)
        return json_response(200, job_payload(ctx.urls, job, run, repo))


def download_job_log(ctx: RouteContext) -> Response:
    """302 to a signed URL on the log host; 410 once expired; 404 when there is no log."""
    with ctx.state.lock:
        job, _ = _job(ctx, ctx.repo())
        if job.log_expired:
            raise HttpError(410, "The logs for this job have expired and are no longer available.")
        if job.log is None:
            raise HttpError(404, "Not Found")
        return Response(302, [("Location", ctx.log_links.url_for(job.id))])


def _record_rerun(ctx: RouteContext, kind: RerunKind, run: WorkflowRun, job: Job | None) -> None:
    if run.status != "completed":
        raise HttpError(403, "This workflow is already running")
    debug = ctx.json_body().get("enable_debug_logging") is True
    ctx.state.reruns.append(
        Rerun(
            kind=kind,
            repo_id=run.repo_id,
            run_id=run.id,
            job_id=job.id if job else None,
            enable_debug_logging=debug,
            requested_by=ctx.installation_caller().app.bot.login,
            at=ctx.state.now(),
        )
    )


def rerun_run(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        _record_rerun(ctx, "run", _run(ctx, ctx.repo()), None)
        return json_response(201, {})


def rerun_failed_jobs(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        _record_rerun(ctx, "failed_jobs", _run(ctx, ctx.repo()), None)
        return json_response(201, {})


def rerun_job(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        job, run = _job(ctx, ctx.repo())
        _record_rerun(ctx, "job", run, job)
        return json_response(201, {})


ROUTES = [
    Route("GET", _RUN, get_run, permissions=READ),
    Route("GET", f"{_RUN}/jobs", list_jobs, permissions=READ),
    Route("GET", f"{_RUN}/attempts/{{attempt_number}}/jobs", list_attempt_jobs, permissions=READ),
    Route("POST", f"{_RUN}/rerun", rerun_run, permissions=WRITE),
    Route("POST", f"{_RUN}/rerun-failed-jobs", rerun_failed_jobs, permissions=WRITE),
    Route("GET", _JOB, get_job, permissions=READ),
    Route("GET", f"{_JOB}/logs", download_job_log, permissions=READ),
    Route("POST", f"{_JOB}/rerun", rerun_job, permissions=WRITE),
]
