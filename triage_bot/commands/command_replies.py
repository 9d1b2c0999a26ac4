"""What the bot answers to a `/triage` comment: the markdown of a reply comment.

A reply never pings anyone: it says "you", never `@login`, and whatever it repeats of the
comment or of a job's name is in a code span with every `@` neutralised. The sticky comment's
markdown is core/render.py's (with templates/); a reply is built here from the same helpers
(core/sanitize.py) and the same rendering of a signature's texts (render_signature_text).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import jinja2

from triage_bot.commands.commands import HELP, Command
from triage_bot.core import sanitize
from triage_bot.core.catalog import Catalog, Signature
from triage_bot.core.render import render_signature_text
from triage_bot.github_api.github import WorkflowRun
from triage_bot.repo.repo_config import CONFIG_PATH
from triage_bot.triage.retry import Verdict

WRITE_ACCESS = "write access to this repository (write, maintain or admin)"


def code(text: str) -> str:
    """Untrusted text shown as inline code that mentions no one."""
    return sanitize.code_span(sanitize.neutralise_mentions(text))


def reply(command: Command, text: str) -> str:
    """The whole reply: the command quoted (so the thread reads well), then the answer."""
    return f"> {code(command.line)}\n\n{text.strip()}\n"


def help_text() -> str:
    return f"**triage-bot commands**\n\n{HELP}"


def unknown(command: Command) -> str:
    return f"triage-bot has no command {code(command.line)}.\n\n{HELP}"


def refused(command: Command, *, is_author: bool) -> str:
    if command.name == "retry":
        why = "it re-runs jobs, so it needs " + WRITE_ACCESS
        if is_author:
            why += "; the pull request's author without it can ask a maintainer"
        return f"Not done: `/triage retry` is refused because {why}."
    what = "`/triage explain`" if command.name == "explain" else "`/triage`"
    return f"Not done: {what} is for people with {WRITE_ACCESS} and for the pull request's author."


def closed() -> str:
    return "The pull request is closed: there is nothing to triage."


def no_failed_runs(head_sha: str) -> str:
    return f"No failed workflow run on the head commit `{head_sha[:10]}`: nothing to triage."


def no_failed_jobs(head_sha: str) -> str:
    return f"No failed job on the head commit `{head_sha[:10]}`: nothing to re-run."


# ---- /triage explain ------------------------------------------------------------------------


def disabled(signature_id: str) -> str:
    return (
        f"The signature {code(signature_id)} is disabled in this repository "
        f"(`disable:` in `{CONFIG_PATH}`): triage-bot does not use it here."
    )


def explain(catalog: Catalog, signature_id: str) -> str:
    signature = catalog.get(signature_id)
    if signature is None:
        return _unknown_signature(catalog, signature_id)
    # Each capture shows as its name, <module> say, where a real failure has its value.
    placeholders = {name: f"<{name}>" for name in signature.pattern.groupindex}
    lines = [
        f"### {sanitize.escape_text(signature.title)} ({code(signature.id)})",
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
        lines += ["", f"_This signature is this repository's own: {code(str(signature.path))}._"]
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
    text = f"No signature has the id {code(wanted)}."
    if close:
        text += " Did you mean " + ", ".join(code(i) for i in close) + "?"
    return text


# ---- /triage retry --------------------------------------------------------------------------


def retry_summary(results: Sequence[tuple[WorkflowRun, Sequence[Verdict]]]) -> str:
    done = [(run, v) for run, verdicts in results for v in verdicts if v.rerun]
    left = [(run, v) for run, verdicts in results for v in verdicts if not v.rerun]
    parts = []
    if done:
        count = f"{len(done)} job{'s' if len(done) != 1 else ''}"
        parts.append(f"Re-ran {count} whose failure a re-run usually cures:\n")
        parts += [f"- {_job(run, v)}: {code(v.signature or '')}" for run, v in done]
    else:
        parts.append("Nothing was re-run.")
    if left:
        parts.append("\nNot re-run:\n")
        parts += [f"- {_job(run, v)}: {v.reason}" for run, v in left]
    return "\n".join(parts)


def _job(run: WorkflowRun, verdict: Verdict) -> str:
    workflow = sanitize.escape_text(run.name or f"run {run.id}")
    return f"{code(verdict.job)} ([{workflow}]({run.html_url}))"
