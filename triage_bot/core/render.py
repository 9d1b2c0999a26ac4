"""The comment's markdown: report -> the pull request comment (and the terminal view, as
text), within GitHub's cap.

The comment's structure is in templates/ (comment.md.j2 the frame: marker, sections, setup
problems, commands; section.md.j2 one run's part; passed.md.j2 a run that later passed); this
module gives them their values and fits the result under the cap: less detail first, then
fewer failures, then a cut at a block boundary (cut_markdown, below).
Signature summaries and fixes are templates too, written by contributors: they run in a
sandbox with a budget (template_budget.py) and StrictUndefined.
Every value any markdown template prints (captures, log lines, job names) becomes a slot while
it renders, and sanitize.fill_slots writes it in the form that is inert where it landed; only
Safe markdown (a signature's rendered text, GitHub's URLs) is printed as it is.
The replies to `/triage` commands (triage_bot/commands/command_job.py) are built from
sanitize's helpers and render_signature_text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import accumulate
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from markdown_it.token import Token

from triage_bot.core import ranking, sanitize
from triage_bot.core.catalog import Signature, data_dir
from triage_bot.core.classify_results import Window
from triage_bot.core.comment_words import (
    cut_line,
    short_job_names,
    shorten_middle,
    trimmed_window,
    value_noun,
)
from triage_bot.core.report import (
    BaseRun,
    FlakyVerdict,
    Group,
    Job,
    Reference,
    Report,
)
from triage_bot.core.template_budget import BudgetSandbox, compile_bounded, render_bounded

COMMENT_MARKER = "<!-- triage-bot:sticky-comment -->"
MAX_COMMENT_CHARS = 65_536
MAX_JOB_NAMES = 12
MAX_VARIANTS_SHOWN = 10
# The footer's "how signatures work" link; the App's TRIAGE_CATALOG_URL setting replaces it
# (config.py; set_catalog_url, below, is how the setting reaches the templates).
CATALOG_URL = "https://github.com/triage-bot/triage-bot/blob/main/patterns/README.md"
# A table row's best line of a job nothing explains: enough to recognise it, on one line.
MAX_ROW_LINE = 100
_CUT_NOTE = "_…cut here: the comment reached GitHub's 65,536-character limit._\n"


class Safe(str):
    """Markdown the program or a filter made: printed as it is, its slots filled in later."""


# The values the template being rendered printed, in order (see sanitize.fill_slots).
_printed: ContextVar[list[str]] = ContextVar("_printed")


def _finalize(value: Any) -> Any:
    """Every value a markdown template prints becomes a slot, filled once the template's
    markdown is known; only Safe markdown and numbers are printed as they are."""
    if isinstance(value, Safe) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    printed = _printed.get()
    printed.append(sanitize.strip_slot_marks(str(value)))
    return sanitize.slot(len(printed) - 1)


def _code(value: Any) -> Safe:
    """`value` as inline code; fill_slots makes the backticks outnumber any it holds."""
    return Safe(f"`{_finalize(value)}`")


def _block(value: Any) -> Safe:
    """`value` as a fenced block; fill_slots makes the fence longer than any run it holds."""
    return Safe(f"```text\n{_finalize(value)}\n```")


def _as_printed(value: Any) -> Any:
    """The old filters (`md`, `html`, `verbatim`): the value, placed by where it lands."""
    return value


def _render_markdown(render: Callable[[], str]) -> Safe:
    token = _printed.set([])
    try:
        markdown = render()
        return Safe(sanitize.fill_slots(markdown, _printed.get()))
    finally:
        _printed.reset(token)


@cache
def _signature_env() -> BudgetSandbox:
    env = BudgetSandbox(undefined=jinja2.StrictUndefined, autoescape=False, finalize=_finalize)
    env.filters["code"] = _code
    env.filters["verbatim"] = _as_printed
    return env


@lru_cache(maxsize=1024)
def _compiled_signature_text(template: str) -> jinja2.Template:
    # One comment renders each signature's texts once per detail level tried: compile once.
    return compile_bounded(_signature_env(), sanitize.strip_slot_marks(template))


def render_signature_text(template: str, captures: dict[str, str]) -> str:
    """A signature's summary or fix with its captures, each inert wherever it lands; raises
    jinja2 errors on a bad template (TemplateBudgetError on one that runs away)."""
    compiled = _compiled_signature_text(template)
    return _render_markdown(lambda: render_bounded(compiled, captures))


def _render_file(name: str, **context: Any) -> Safe:
    template = _env().get_template(name)
    return _render_markdown(lambda: template.render(**context))


@cache
def _env() -> jinja2.Environment:
    """The comment's templates: every value they print goes through fill_slots."""
    env = _file_env(finalize=_finalize)
    env.filters.update(md=_as_printed, html=_as_printed, code=_code, block=_block)
    return env


@cache
def _file_env(**options: Any) -> jinja2.Environment:
    """The templates' environment; without `finalize`, the terminal view's: plain text."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        **options,
    )


def _url(url: str | None) -> Safe | None:
    """A link GitHub gave us (a run, a job, a log line): printed as it is."""
    return None if url is None else Safe(url)


# A passing reference's link: the App's own (GitHub's URL of a passing job), but checked, since
# it comes from another lookup than the failing job's: nothing that could end the link early.
_PLAIN_URL = re.compile(r"https?://[^\s()<>\[\]`'\"\\]+")


def _reference_view(reference: Reference | None) -> dict[str, Any] | None:
    """The passing log a job was compared with: its label is untrusted text (a file name, a
    job's name), printed through a slot like any log text."""
    if reference is None:
        return None
    url = reference.url if reference.url and _PLAIN_URL.fullmatch(reference.url) else None
    return {"label": reference.label, "url": _url(url)}


@dataclass(frozen=True)
class Detail:
    """How much of each failure to show; the comment steps down until it fits the cap."""

    before: int
    after: int
    job_names: int
    fix: bool


_DETAILS = (
    Detail(before=40, after=40, job_names=MAX_JOB_NAMES, fix=True),
    Detail(before=4, after=1, job_names=6, fix=True),
    Detail(before=0, after=0, job_names=3, fix=False),
)


@dataclass(frozen=True)
class SignatureText:
    """A signature's summary and fix as markdown; `problem` says why its template failed
    (then the summary is the title and the fix the problem, as the comment shows them)."""

    summary: str
    fix: str
    problem: str | None = None


def signature_text(signature: Signature, captures: dict[str, str]) -> SignatureText:
    """The signature's summary and fix rendered with `captures`: the comment's, the JSON's
    and the terminal view's."""
    # A group that did not take part in the match is empty in templates, as lint renders it.
    values = {name: "" for name in signature.pattern.groupindex} | captures
    try:
        return SignatureText(
            render_signature_text(signature.summary, values),
            render_signature_text(signature.fix, values).strip(),
        )
    except jinja2.TemplateError as exc:
        # A broken signature still shows its failure; the footer says what is wrong with it.
        problem = f"{signature.path.name}: template error: {exc}"
        return SignatureText(
            sanitize.escape_text(signature.title), sanitize.escape_text(problem), problem
        )


def _evidence(job: Job, detail: Detail, window: Window) -> dict[str, Any]:
    before = window.before
    shown_before = before[len(before) - detail.before :] if detail.before else []
    return {
        "text": "\n".join(trimmed_window(shown_before, window.text, window.after[: detail.after])),
        "line": window.line,
        "url": _url(job.line_urls.get(window.line) or job.url),
    }


def _variant_view(name: str, values: list[str]) -> dict[str, Any]:
    """A capture's distinct values: "7 failing tests" when its name says what they are."""
    return {
        "name": name,
        "noun": value_noun(name, len(values)),
        "shown": values[:MAX_VARIANTS_SHOWN],
        "count": len(values),
    }


_UNESCAPED_PIPE = re.compile(r"(?<!\\)((?:\\\\)*)\|")


def _table_cell(markdown: str) -> Safe:
    """Markdown made by the program (a signature's rendered summary) fit for a table cell:
    on one line, and no `|` that ends the cell (a capture in a code span may hold one)."""
    return Safe(_UNESCAPED_PIPE.sub(r"\1\\|", sanitize.one_line(markdown)))


def _group_view(group: Group, detail: Detail) -> dict[str, Any]:
    match = group.example
    text = signature_text(group.signature, match.captures)
    summary, fix = Safe(text.summary), Safe(text.fix)
    first_job = group.jobs[0]
    return {
        "title": group.signature.title,
        "id": group.signature.id,
        "category": group.signature.category,
        "summary": summary,
        "fix": fix if detail.fix else "",
        "retry": group.signature.retry,
        "job_count": len(group.jobs),
        "jobs": [
            {"name": j.name, "url": _url(j.url), "reference": _reference_view(j.reference)}
            for j in group.jobs[: detail.job_names]
        ],
        "more_jobs": max(0, len(group.jobs) - detail.job_names),
        "first_job": first_job.name,
        "occurrences": match.count,
        "variants": [
            _variant_view(name, values)
            for name, values in match.variants.items()
            if len(values) > 1
        ],
        "all_jobs": [j.name for j in group.jobs],
        "short_jobs": short_job_names([j.name for j in group.jobs]),
        "evidence": _evidence(first_job, detail, match.evidence),
        "reference": _reference_view(first_job.reference),
        "base": _base_view(group.base),
        "flaky": _flaky_view(group.flaky),
    }


def _flaky_view(verdict: FlakyVerdict | None) -> dict[str, Any] | None:
    """A likely flaky failure's reason and proofs, each a failed job and the pass after it."""
    if verdict is None or not verdict.likely_flaky:
        return None
    return {
        "why": verdict.why,
        "proofs": [
            {
                # A number and a commit id only: safe as they are, in words the template's.
                "pr": proof.failed.pr_number,
                "commit": proof.failed.commit_sha[:10],
                "failed": _url(proof.failed.url),
                "passed": _url(proof.passed.url),
                "passed_attempt": proof.passed.run_attempt,
                "same_run": proof.passed.run_id == proof.failed.run_id,
            }
            for proof in verdict.proofs
        ],
    }


def _base_view(base: BaseRun | None) -> dict[str, Any] | None:
    return None if base is None else {"branch": base.branch, "url": _url(base.run_url)}


def _comparison_view(report: Report) -> dict[str, Any] | None:
    """How the failures compare with the base branch's run, when they were compared."""
    if report.base is None:
        return None
    also = sum(1 for group in report.groups if group.base is not None)
    return {
        **(_base_view(report.base) or {}),
        "new": len(report.groups) - also,
        "also": also,
    }


def _job_view(job: Job) -> dict[str, Any]:
    result = job.result
    root = result.root_cause
    return {
        "name": job.name,
        "url": _url(job.url),
        "lines": result.lines,
        "generic": root.signature.title if root is not None else None,
        "also_in_passing": root is not None and root.new is False,
        "fallback": [
            {"line": f.line, "text": f.text, "url": _url(job.line_urls.get(f.line) or job.url)}
            for f in result.fallback_lines
        ],
        "reference": _reference_view(job.reference),
    }


def heading_title(title: str) -> str:
    """The run's title for the heading "CI triage: <title>", or "" when it would only repeat
    the heading ("CI", "ci", "CI triage")."""
    words = set(re.findall(r"[a-z0-9]+", title.lower()))
    return "" if words <= {"ci", "triage"} else title


def _headline(report: Report) -> dict[str, Any]:
    """The verdict's counts, over the whole report (whatever the cap leaves out below).
    `compared`: whether the base branch's run was looked at; without it nothing is "new".
    A failure also on the base branch counts there, else a likely flaky one as flaky: neither
    is new."""
    also = sum(1 for group in report.groups if group.base is not None)
    flaky = sum(1 for group in report.groups if group.base is None and group.likely_flaky)
    compared = report.base is not None
    new = len(report.groups) - also - flaky
    unexplained = len(report.unmatched)
    if compared and new == 0 and unexplained == 0:
        icon = "✅"
    elif new:  # (uncompared, every failure counts as new)
        icon = "❌"
    else:
        icon = "⚠️"  # only jobs nothing explains: a person has to look
    return {
        "icon": Safe(icon),
        "compared": compared,
        "failures": len(report.groups),
        "new": new,
        "also": also,
        "flaky": flaky,
        "unexplained": unexplained,
        "branch": report.base.branch if report.base else "",
    }


def _status(group: Group, compared: bool) -> str:
    if group.base is not None:
        return "also"
    if group.likely_flaky:
        return "flaky"
    return "new" if compared else "failing"


def _group_row(group: Group, view: dict[str, Any], compared: bool) -> dict[str, Any]:
    """One failure's row of the table: status, what, jobs, the evidence's line."""
    return {
        "status": _status(group, compared),
        "base_branch": group.base.branch if group.base else "",
        "title": view["title"],
        "summary": _table_cell(view["summary"]),
        "variants": view["variants"][:1],
        "job_count": view["job_count"],
        "jobs": shorten_middle(view["short_jobs"], longest=64),
        "line": view["evidence"]["line"],
        "url": view["evidence"]["url"],
    }


def _best_line(fallback: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one best-guess line a table row has room for (ranking.best_guess_index)."""
    index = ranking.best_guess_index([f["text"] for f in fallback])
    return None if index is None else fallback[index]


def _unexplained_row(view: dict[str, Any]) -> dict[str, Any]:
    """A job nothing explains, as a row: its best-guess line, or what it only showed."""
    best = _best_line(view["fallback"])
    return {
        "status": "unexplained",
        "name": shorten_middle(view["name"], longest=64),
        "generic": view["generic"],
        "best": cut_line(best["text"].strip(), MAX_ROW_LINE) if best else "",
        "line": best["line"] if best else None,
        "url": best["url"] if best else view["url"],
        "lines": view["lines"],
    }


def _open_group(groups: Sequence[Group]) -> int | None:
    """The index of the failure whose details stay open: the first new one (all failures
    count as new when nothing was compared); None when every failure is on the base too."""
    return next(
        (
            index
            for index, group in enumerate(groups)
            if group.base is None and not group.likely_flaky
        ),
        None,
    )


def _context(report: Report, detail: Detail, limit: int | None) -> dict[str, Any]:
    groups = report.groups[:limit]
    unmatched = report.unmatched
    group_views = [_group_view(g, detail) for g in groups]
    job_views = [_job_view(j) for j in unmatched[:limit]]
    compared = report.base is not None
    return {
        "title": report.title,
        "heading_title": heading_title(report.title),
        "headline": _headline(report),
        "rows": [
            *(_group_row(g, v, compared) for g, v in zip(groups, group_views, strict=True)),
            *(_unexplained_row(v) for v in job_views),
        ],
        "open_group": _open_group(groups),
        "url": _url(report.url),
        "head_sha": report.head_sha,
        "failed_jobs": len(report.jobs),
        "groups": group_views,
        "hidden_groups": len(report.groups) - len(groups),
        "unmatched": job_views,
        "hidden_unmatched": len(unmatched) - len(unmatched[:limit]),
        "notes": [*report.footer_notes, *(f"{j.name}: {j.note}" for j in report.jobs if j.note)],
        "catalog_url": Safe(_catalog_url),
        "base": _comparison_view(report),
    }


_catalog_url = CATALOG_URL


def set_catalog_url(url: str) -> None:
    """Where the comment's "how signatures work" and "Add a signature" links go, for the rest
    of the process: the App's TRIAGE_CATALOG_URL (checked by config.py as an http(s) URL).
    The core knows no settings, so the commands that load them set this once."""
    global _catalog_url
    _catalog_url = url


def _problem_view(problem: str) -> dict[str, str]:
    """ "file:line: reason" -> its place (shown as code) and its reason."""
    place, sep, reason = problem.partition(": ")
    if not sep or not place or any(c.isspace() for c in place):
        return {"place": "", "reason": problem}  # not about one file
    return {"place": place, "reason": reason}


def render_comment(report: Report, limit: int = MAX_COMMENT_CHARS) -> str:
    """The pull request comment of one run; always under `limit` characters."""
    section = render_comment_section(report, limit)
    return compose_comment([section], report.setup_problems, limit)


def render_comment_section(report: Report, limit: int = MAX_COMMENT_CHARS) -> str:
    """The run's section of a comment of at most `limit` characters (see compose_comment):
    less detail first (shorter evidence, no fixes), then fewer failures, saying what it left
    out."""
    room = limit - len(_frame([""]))  # the marker, the commands, the footer
    for detail in _DETAILS:
        body = _render_file("section.md.j2", **_context(report, detail, None))
        if len(body) <= room:
            return body
    detail = _DETAILS[-1]
    shown = max(len(report.groups), len(report.unmatched))
    while shown > 0:
        shown = shown // 2 if shown > 8 else shown - 1
        body = _render_file("section.md.j2", **_context(report, detail, shown))
        if len(body) <= room:
            return body
    return cut_markdown(body, room, _CUT_NOTE)


def render_passed_section(title: str, attempt: int, url: str | None) -> str:
    """The section of a workflow whose later run passed."""
    return _render_file(
        "passed.md.j2", heading_title=heading_title(title), attempt=attempt, url=_url(url)
    )


def compose_comment(
    sections: Sequence[str],
    problems: Sequence[str] = (),
    limit: int = MAX_COMMENT_CHARS,
    *,
    retriaged_at: str | None = None,
) -> str:
    """The comment: the marker, each run's section, what is wrong with the repository's
    triage-bot files ("file:line: reason" each), the commands; under `limit` characters.
    Sections that together do not fit share the room: each short one whole, the long ones
    cut at a block boundary to an equal share of what is left. `retriaged_at` ("14:02", UTC):
    a `/triage` at that time changed nothing, said in the footer (sticky_comment.py)."""
    room = limit - len(_frame([""] * len(sections), problems, retriaged_at))
    shares = _shares([len(section) for section in sections], room)
    fitted = [
        section if len(section) <= share else cut_markdown(section, share, _CUT_NOTE)
        for section, share in zip(sections, shares, strict=True)
    ]
    return _frame(fitted, problems, retriaged_at)


def _shares(lengths: Sequence[int], room: int) -> list[int]:
    """How many characters each section may have: all it needs when everything fits, else
    the shortest ones whole and the rest an equal share each of what is left."""
    if sum(lengths) <= room:
        return list(lengths)
    shares = [0] * len(lengths)
    left = room
    shortest_first = sorted(range(len(lengths)), key=lengths.__getitem__)
    for position, index in enumerate(shortest_first):
        shares[index] = min(lengths[index], left // (len(lengths) - position))
        left -= shares[index]
    return shares


def _frame(
    sections: Sequence[str], problems: Sequence[str] = (), retriaged_at: str | None = None
) -> str:
    return _render_file(
        "comment.md.j2",
        marker=Safe(COMMENT_MARKER),
        sections=[Safe(section) for section in sections],
        setup_problems=[_problem_view(p) for p in problems],
        catalog_url=Safe(_catalog_url),
        retriaged_at=retriaged_at,
    )


def render_text(report: Report, width: int | None = None, color_system: str | None = None) -> str:
    """The terminal view (core/terminal.py): plain text unless `color_system` is given."""
    from triage_bot.core import terminal  # it renders signature texts through this module

    return terminal.render_text(report, width, color_system)


# ---- cutting markdown short at a block boundary -----------------------------------------------
#
# A comment cut in the middle of a code block or of a `<details>` element would show the rest
# of the page inside it, so a cut falls between top-level blocks (as markdown-it parses them,
# GitHub's CommonMark) and closes any `<details>` left open.


@cache
def _blocks() -> MarkdownIt:
    return MarkdownIt("commonmark").disable("inline")  # where the blocks end is all we need


def cut_markdown(text: str, limit: int, note: str) -> str:
    """`text` if it fits in `limit` characters, else its longest run of whole top-level
    blocks that fits with `note` (and the closing tags of `<details>` left open) after it."""
    if len(text) <= limit:
        return text
    offsets = [0, *accumulate(len(line) for line in text.splitlines(keepends=True))]
    best = ""
    open_details = 0
    for token in _blocks().parse(text):
        if token.level != 0 or token.map is None or token.nesting == 1:
            continue  # the closing token (or a leaf) says where a top-level block ends
        open_details += _details_change(token)
        kept = text[: offsets[token.map[1]]]
        closed = kept.rstrip("\n") + "\n\n" + "</details>\n\n" * max(0, open_details)
        if len(closed) + len(note) > limit:
            break
        best = closed
    return best + note


def _details_change(token: Token) -> int:
    if token.type != "html_block":
        return 0
    return token.content.count("<details") - token.content.count("</details>")
