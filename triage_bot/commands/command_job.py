"""The "command" job: a `/triage` comment, checked against who wrote it, carried out, answered.

Who may do what; the permission is looked up through the API, never read from the payload's
`author_association`:
- `/triage` and `/triage explain ID`: write, maintain or admin access, or the pull request's
  author;
- `/triage retry`: write, maintain or admin access only (it spends the repository's CI time);
- `/triage help`, and an unknown command (answered with the help): anyone.

An accepted command (not a refused or an unknown one) first gets an "eyes" reaction on its
comment, before any work: heard, being done. A reaction GitHub refuses or fails is logged and
the command carried out all the same; a refused command's answer is its reply.

`/triage` answers by updating the sticky comment, through the same `triage_job` as the
webhook, and replies only when there is nothing to triage. When the triage leaves the comment
as it was, the comment's footer says "triaged again at 14:02 UTC: nothing changed"
(sticky_comment.note_unchanged), so the one who asked sees it was done.

Every other answer is a reply comment, posted at most once per command: the command is
claimed in the store before its first write (a re-run or the reply), so a job run again after
a crash never answers twice.

A reply never pings anyone: it says "you", never `@login`, and whatever it repeats of the
comment or of a job's name is in a code span with every `@` neutralised. The sticky comment's
markdown is core/render.py's (with templates/); a reply is built here from the same helpers
(core/sanitize.py) and the same rendering of a signature's texts (render_signature_text).

`explain` and `retry` use the repository's catalog (repo_config.py): its own signatures too,
less the ones its config disables, as its triage does.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jinja2

from triage_bot.commands.commands import Command, find_command
from triage_bot.config import Settings
from triage_bot.core import sanitize
from triage_bot.core.catalog import Catalog, Signature
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.render import render_signature_text
from triage_bot.github_api.github import (
    ClientOptions,
    GitHubClient,
    GitHubError,
    PullRequest,
    RunJobs,
    WorkflowRun,
    client_for_job,
)
from triage_bot.repo.repo_config import CONFIG_PATH, repo_setup
from triage_bot.store.store import Store
from triage_bot.triage import pipeline
from triage_bot.triage.flaky_marks import judge_report
from triage_bot.triage.retry import Verdict, plan, rerun, still_running
from triage_bot.triage.run import FAILING_RUN_CONCLUSIONS, triage_run
from triage_bot.triage.sticky_comment import note_unchanged

log = logging.getLogger(__name__)

# The answer to `/triage help`, and to a command triage-bot does not know.
HELP = """\
| command | what it does | who may use it |
| --- | --- | --- |
| `/triage` | triage the pull request's latest failed runs again and update the comment | \
people with write access, and the pull request's author |
| `/triage retry` | re-run the failed jobs whose root cause a re-run usually cures \
(signatures marked `retry: true`) or that the history calls likely flaky \
| people with write access |
| `/triage explain <signature-id>` | what a signature means and how to fix it | \
people with write access, and the pull request's author |
| `/triage help` | this list | anyone |

Write the command at the start of a line of its own, outside quotes and code blocks."""
WRITE_ACCESS = "write access to this repository (write, maintain or admin)"
CLOSED = "The pull request is closed: there is nothing to triage."


@dataclass(frozen=True)
class _Call:
    """One command being carried out, and everything its steps need."""

    command: Command
    payload: dict[str, Any]
    pull: PullRequest
    client: GitHubClient
    settings: Settings
    store: Store
    dry_run: bool
    options: ClientOptions | None

    @property
    def repo(self) -> str:
        return str(self.payload["repo"])


def command_job(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    options: ClientOptions | None = None,
) -> dict[str, Any]:
    repo, number, author = str(payload["repo"]), int(payload["pr_number"]), str(payload["author"])
    command = find_command(str(payload.get("body") or ""))
    summary: dict[str, Any] = {"pr": number, "author": author, "dry_run": dry_run}
    if command is None:  # events.py lets none through; a job written by hand might
        return {**summary, "action": "none", "reason": "the comment holds no command"}
    summary["command"] = command.name
    with client_for_job(settings, payload, options) as client:
        pull = client.get_pull(repo, number)
        call = _Call(command, payload, pull, client, settings, store, dry_run, options)
        if not _allowed(call, author):
            log.info("%s#%d: %r by %s refused", repo, number, command.line, author)
            is_author = _same_login(author, pull.user.login)
            return {**summary, **_answer(call, _refused(command, is_author=is_author))}
        summary["acknowledged"] = _acknowledge(call)
        return {**summary, **_carry_out(call)}


def _acknowledge(call: _Call) -> bool:
    """The "eyes" reaction on the command's comment; False when there is none (a dry run, an
    unknown command, or GitHub refused or failed: the command is carried out all the same)."""
    if call.dry_run or call.command.name == "unknown":
        return False
    try:
        call.client.react(call.repo, int(call.payload["comment_id"]), "eyes")
    except GitHubError as error:
        log.warning(
            "%s#%d: no eyes reaction on %r: %s",
            call.repo,
            call.pull.number,
            call.command.line,
            error,
        )
        return False
    return True


def _carry_out(call: _Call) -> dict[str, Any]:
    command = call.command
    if command.name == "triage":
        return _retriage(call)
    if command.name == "retry":
        return _retry(call)
    if command.name == "explain":
        return _answer(call, _explain(call))
    if command.name == "help":
        return _answer(call, f"**triage-bot commands**\n\n{HELP}")
    return _answer(call, f"triage-bot has no command {_code(command.line)}.\n\n{HELP}")


def _allowed(call: _Call, author: str) -> bool:
    name = call.command.name
    if name in ("help", "unknown"):
        return True
    if name != "retry" and _same_login(author, call.pull.user.login):
        return True
    permission = call.client.permission(call.repo, author)
    return permission is not None and permission.can_write  # admin, maintain or write


def _same_login(one: str, other: str) -> bool:
    return one.casefold() == other.casefold()  # GitHub logins are case-insensitive


def _refused(command: Command, *, is_author: bool) -> str:
    if command.name == "retry":
        why = "it re-runs jobs, so it needs " + WRITE_ACCESS
        if is_author:
            why += "; the pull request's author without it can ask a maintainer"
        return f"Not done: `/triage retry` is refused because {why}."
    what = "`/triage explain`" if command.name == "explain" else "`/triage`"
    return f"Not done: {what} is for people with {WRITE_ACCESS} and for the pull request's author."


# ---- /triage -----------------------------------------------------------------------------


def _retriage(call: _Call) -> dict[str, Any]:
    if call.pull.state != "open":
        return _answer(call, CLOSED)
    runs = [r for r in latest_runs(call) if r.conclusion in FAILING_RUN_CONCLUSIONS]
    if not runs:
        head = call.pull.head.sha[:10]
        return _answer(
            call, f"No failed workflow run on the head commit `{head}`: nothing to triage."
        )
    results = [
        pipeline.triage_job(
            _triage_payload(call, run),
            call.settings,
            call.store,
            dry_run=call.dry_run,
            options=call.options,
        )
        for run in runs
    ]
    comments = [comment for result in results for comment in result["comments"]]
    summary = {"action": "triaged", "runs": [result["run"] for result in results]}
    if call.dry_run or not comments or any(c["action"] != "unchanged" for c in comments):
        return {**summary, "comments": comments}
    # Every run's section is as it was: say in the comment that it was triaged again.
    noted = note_unchanged(
        call.client, call.store, call.repo, call.pull.number, call.pull.head.sha, datetime.now(UTC)
    )
    return {**summary, "comments": comments, "noted": noted}


def latest_runs(call: _Call) -> list[WorkflowRun]:
    """The latest run of each workflow on the pull request's head commit, oldest first."""
    latest: dict[int, WorkflowRun] = {}
    for run in call.client.runs_for_commit(call.repo, call.pull.head.sha):
        known = latest.get(run.workflow_id)
        if known is None or run.id > known.id:
            latest[run.workflow_id] = run
    return sorted(latest.values(), key=lambda run: run.id)


def _triage_payload(call: _Call, run: WorkflowRun) -> dict[str, Any]:
    """The job events.py would make of this run's webhook, for this pull request."""
    return {
        "kind": "triage",
        "trigger": "command",
        "repo": call.repo,
        "installation_id": call.payload.get("installation_id"),
        "run_id": run.id,
        "run_attempt": run.run_attempt,
        "head_sha": run.head_sha,
        "head_branch": run.head_branch,
        "head_repo": run.head_repository.full_name if run.head_repository else None,
        "pull_requests": [call.pull.number],
        "find_pr": False,
        "workflow": run.name,
        "conclusion": run.conclusion,
        "workflow_job_id": None,
        "workflow_job_name": None,
    }


# ---- /triage retry -------------------------------------------------------------------------


def _retry(call: _Call) -> dict[str, Any]:
    if call.pull.state != "open":
        return _answer(call, CLOSED)
    catalog = repo_setup(call.client, call.repo).catalog
    planned = [found for run in latest_runs(call) if (found := _plan_run(call, run, catalog))]
    if not planned:
        head = call.pull.head.sha[:10]
        return _answer(call, f"No failed job on the head commit `{head}`: nothing to re-run.")
    if call.dry_run:
        results = [(run, verdicts) for run, verdicts, _ in planned]
        return _dry_reply(call, _retry_summary(results))
    if not _claim(call):
        return {"action": "none", "reason": "this command was answered before"}
    results = [
        (run, rerun(call.client, call.repo, run.id, verdicts, jobs))
        for run, verdicts, jobs in planned
    ]
    answer = _post_reply(call, _retry_summary(results))
    rerun_ids = [v.job_id for _, verdicts in results for v in verdicts if v.rerun]
    return {**answer, "rerun": rerun_ids}


def _plan_run(
    call: _Call, run: WorkflowRun, catalog: CompiledCatalog
) -> tuple[WorkflowRun, list[Verdict], RunJobs] | None:
    """What to re-run of one run, or None when it has no failed job."""
    client, repo = call.client, call.repo
    if run.status != "completed":
        jobs = client.list_jobs(repo, run.id)
        return (run, still_running(jobs), jobs) if jobs.failed else None
    if run.conclusion not in FAILING_RUN_CONCLUSIONS:
        return None
    # The logs say which failures a re-run cures: triage this attempt again (nothing posted),
    # compared with the passing runs as the comment was, so both name the same root cause.
    report, _ = triage_run(
        client,
        repo,
        run.id,
        run.run_attempt,
        catalog,
        max_log_bytes=call.settings.max_log_bytes,
        run=run,
        compare=pipeline.compare_with_bases(call.settings, [call.pull.base.ref]),
    )
    # The comment's flaky verdicts too: a likely-flaky failure is re-run as well.
    report = judge_report(call.store, repo, report, pr_number=call.pull.number)
    jobs = client.list_jobs(repo, run.id, run.run_attempt)
    return (run, plan(report, jobs, flaky=True), jobs) if jobs.failed else None


def _retry_summary(results: Sequence[tuple[WorkflowRun, Sequence[Verdict]]]) -> str:
    done = [(run, v) for run, verdicts in results for v in verdicts if v.rerun]
    left = [(run, v) for run, verdicts in results for v in verdicts if not v.rerun]
    parts = []
    if done:
        count = f"{len(done)} job{'s' if len(done) != 1 else ''}"
        parts.append(f"Re-ran {count} whose failure a re-run usually cures or is likely flaky:\n")
        parts += [f"- {_job(run, v)}: {_code(v.signature or '')}" for run, v in done]
    else:
        parts.append("Nothing was re-run.")
    if left:
        parts.append("\nNot re-run:\n")
        parts += [f"- {_job(run, v)}: {v.reason}" for run, v in left]
    return "\n".join(parts)


def _job(run: WorkflowRun, verdict: Verdict) -> str:
    workflow = sanitize.escape_text(run.name or f"run {run.id}")
    return f"{_code(verdict.job)} ([{workflow}]({run.html_url}))"


# ---- /triage explain ------------------------------------------------------------------------


def _explain(call: _Call) -> str:
    setup = repo_setup(call.client, call.repo)
    wanted, catalog = call.command.argument, setup.catalog.catalog
    if wanted in setup.config.disabled_signatures:
        return (
            f"The signature {_code(wanted)} is disabled in this repository "
            f"(`disable:` in `{CONFIG_PATH}`): triage-bot does not use it here."
        )
    signature = catalog.get(wanted)
    if signature is None:
        return _unknown_signature(catalog, wanted)
    # Each capture shows as its name, <module> say, where a real failure has its value.
    placeholders = {name: f"<{name}>" for name in signature.pattern.groupindex}
    lines = [
        f"### {sanitize.escape_text(signature.title)} ({_code(signature.id)})",
        "",
        f"Category: {sanitize.escape_text(signature.category)}"
        + (" · a re-run usually cures it (`/triage retry`)" if signature.retry else ""),
        "",
        f"**What it means**: {_render(signature, signature.summary, placeholders)}",
        "",
        "**Suggested fix**",
        "",
        _render(signature, signature.fix, placeholders),
    ]
    if signature.from_repository:  # not the built-in one, even if it has a built-in's id
        lines += ["", f"_This signature is this repository's own: {_code(str(signature.path))}._"]
    if signature.references:
        lines += ["", "**References**", ""]
        lines += [f"- {sanitize.neutralise_mentions(url)}" for url in signature.references]
    return "\n".join(lines)


def _render(signature: Signature, template: str, captures: dict[str, str]) -> str:
    try:
        return render_signature_text(template, captures).strip()
    except jinja2.TemplateError as error:
        return sanitize.escape_text(f"(this signature's text does not render: {error})")


def _unknown_signature(catalog: Catalog, wanted: str) -> str:
    ids = [s.id for s in catalog.signatures]
    close = difflib.get_close_matches(wanted, ids, n=3, cutoff=0.6)
    text = f"No signature has the id {_code(wanted)}."
    if close:
        text += " Did you mean " + ", ".join(_code(i) for i in close) + "?"
    return text


# ---- replies -------------------------------------------------------------------------------


def _answer(call: _Call, text: str) -> dict[str, Any]:
    if call.dry_run:
        return _dry_reply(call, text)
    if not _claim(call):
        return {"action": "none", "reason": "this command was answered before"}
    return _post_reply(call, text)


def _claim(call: _Call) -> bool:
    return call.store.claim_once(f"command:{call.repo}:{call.payload['comment_id']}")


def _post_reply(call: _Call, text: str) -> dict[str, Any]:
    made = call.client.create_comment(call.repo, call.pull.number, _reply(call.command, text))
    log.info(
        "%s#%d: replied to %r (comment %d)", call.repo, call.pull.number, call.command.line, made.id
    )
    return {"action": "replied", "reply": made.id}


def _dry_reply(call: _Call, text: str) -> dict[str, Any]:
    body = _reply(call.command, text)
    log.info("dry run: the reply on %s#%d would be:\n%s", call.repo, call.pull.number, body)
    return {"action": "dry_run", "reply": body}


def _reply(command: Command, text: str) -> str:
    """The whole reply: the command quoted (so the thread reads well), then the answer."""
    return f"> {_code(command.line)}\n\n{text.strip()}\n"


def _code(text: str) -> str:
    """Untrusted text shown as inline code that mentions no one."""
    return sanitize.code_span(sanitize.neutralise_mentions(text))
