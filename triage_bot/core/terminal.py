"""The terminal view of a report (`triage --format text`): plain text, wrapped to the width
it is given, coloured when told to (rich). It says what the comment says: each failure's
title, summary, jobs, failing tests, evidence and fix, then the jobs nothing explains.

The summaries and fixes are the comment's markdown (report_text), printed through rich's
markdown renderer: no `**`, no code fences, no HTML entities, and the captures as they were.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from triage_bot.core.catalog import Signature
from triage_bot.core.classify_results import Match
from triage_bot.core.render import signature_text
from triage_bot.core.report import Group, Job, Reference, Report, explained
from triage_bot.core.report_text import failing_values, placeholder_text, values_label

INDENT = 3
MAX_JOB_NAMES = 12
MAX_VALUES_SHOWN = 10
EVIDENCE_BEFORE = 4
EVIDENCE_AFTER = 1
# Without a terminal, lines are not wrapped: a pipe or a file keeps each line whole (grep).
UNWRAPPED_WIDTH = 10_000
_HINT = "Use --format markdown for the pull request comment, --format json for scripts."


def render_text(report: Report, width: int | None = None, color_system: str | None = None) -> str:
    """The report as the terminal shows it: `width` columns (None: lines are not wrapped),
    with colour in `color_system` ("standard", "256", "truecolor"; None: plain text)."""
    return render(view(report), width, color_system)


def render(
    parts: Iterable[RenderableType], width: int | None = None, color_system: str | None = None
) -> str:
    """`parts` one under the other, as render_text prints them."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=width or UNWRAPPED_WIDTH,
        color_system=color_system,  # type: ignore[arg-type]  # one of rich's literals or None
        force_terminal=color_system is not None,
        no_color=color_system is None,
        highlight=False,
        markup=False,
        emoji=False,
    )
    for part in parts:
        console.print(part)
    if color_system is not None:
        return out.getvalue()
    # rich pads what it wraps to the width, and puts a margin around code blocks: plain text
    # ends its lines where the words do and leaves one blank line between blocks.
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    kept = [line for at, line in enumerate(lines) if line or at == 0 or lines[at - 1]]
    return "".join(line + "\n" for line in kept)


def view(report: Report) -> Iterator[RenderableType]:
    yield Text(headline(report), style="bold")
    for number, group in enumerate(report.groups, start=1):
        yield Text()
        yield from _failure(number, group)
    unexplained = report.unmatched
    if unexplained:
        yield Text()
        yield Text("== Jobs no signature explains", style="bold yellow")
        for job in unexplained:
            yield from _unexplained(job)
    notes = [*report.footer_notes, *(f"{j.name}: {j.note}" for j in report.jobs if j.note)]
    if notes or report.setup_problems:
        yield Text()
    for note in notes:
        yield Text(f"note: {note}", style="dim")
    for problem in report.setup_problems:
        yield Text(f"problem: {problem}", style="yellow")
    yield Text()
    yield Text(_HINT, style="dim")


def headline(report: Report) -> str:
    """ "triage-bot: 7 failed jobs, 3 known failures (2 new, 1 also failing on main), 1
    unexplained", as the comment counts them."""
    jobs, known = len(report.jobs), len(report.groups)
    line = f"triage-bot: {_count(jobs, 'failed job')}, {_count(known, 'known failure')}"
    if report.base is not None and known:
        also = sum(1 for group in report.groups if group.base is not None)
        branch = report.base.branch
        if also:
            line += f" ({known - also} new, {also} also failing on {branch})"
        else:
            line += f" ({'all ' if known != 1 else ''}new: not failing on {branch})"
    unexplained = len(report.unmatched)
    if unexplained:
        line += f", {unexplained} unexplained"
    return line


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _failure(number: int, group: Group) -> Iterator[RenderableType]:
    signature, match = group.signature, group.example
    text = signature_text(signature, match.captures)
    yield Text.assemble(
        (f"== {number}. {signature.title}", "bold red" if group.base is None else "bold"),
        f" [{signature.id}, {signature.category}] in {_count(len(group.jobs), 'job')}",
    )
    if group.base is not None:
        where = f"also failing on {group.base.branch}: likely unrelated to this pull request"
        yield _indented(Text(f"{where} ({group.base.run_url})", style="yellow"))
    if group.flaky is not None and group.flaky.likely_flaky:  # as the comment says it
        proofs = [f"{p.failed.url} -> {p.passed.url}" for p in group.flaky.proofs]
        yield _indented(Text(f"likely flaky: {group.flaky.why}", style="yellow"))
        yield from (_indented(Text(proof)) for proof in proofs)
    yield _indented(Markdown(text.summary, hyperlinks=False))
    names = ", ".join(job.name for job in group.jobs[:MAX_JOB_NAMES])
    more = len(group.jobs) - MAX_JOB_NAMES
    yield _labelled("jobs", names + (f" and {more} more" if more > 0 else ""))
    for name, values in failing_values(match).items():
        if len(values) < 2:
            continue  # the one value is in the evidence line; the comment shows none either
        cut = ", ..." if len(values) > MAX_VALUES_SHOWN else ""
        shown = ", ".join(values[:MAX_VALUES_SHOWN]) + cut
        yield _labelled(values_label(name, len(values)), shown)
    first = group.jobs[0]
    seen = f" (seen {match.count} times)" if match.count > 1 else ""
    window = match.evidence
    yield _labelled("evidence", f"{first.name}, line {window.line}{seen}{_compared(first)}")
    yield _evidence(*_shown(match))
    if match.reason:
        yield _labelled("why this line", match.reason)
    if text.fix:
        yield _indented(Text("fix:", style="bold green"))
        yield _indented(Markdown(text.fix, hyperlinks=False, code_theme="ansi_dark"))


def _shown(match: Match) -> tuple[list[str], str, list[str]]:
    """The part of the evidence the terminal shows: a few lines around the key line; all of
    an explanation (a pytest summary line's `E` lines: pytest_sections keeps only those)."""
    window = match.evidence
    if match.explanation is not None:
        return window.before, window.text, window.after
    return window.before[-EVIDENCE_BEFORE:], window.text, window.after[:EVIDENCE_AFTER]


def _compared(job: Job) -> str:
    reference: Reference | None = job.reference
    if reference is None:
        return ""
    return f"; compared with {reference.label}" + (f" ({reference.url})" if reference.url else "")


def _evidence(before: list[str], key: str, after: list[str]) -> RenderableType:
    lines = [*((line, "dim") for line in before), (key, "bold"), *((line, "dim") for line in after)]
    return _indented(_hanging([(Text("| ", style="dim"), Text(t, style=s)) for t, s in lines]))


def _unexplained(job: Job) -> Iterator[RenderableType]:
    root = job.result.root_cause
    about = ""
    if root is not None and not explained(root):
        also = ", also in the passing run" if root.new is False else ""
        about = f" (only: {root.signature.title}{also})"
    fallback = job.result.fallback_lines
    empty = "" if fallback else ": no error lines found"
    reference = ""
    if job.reference is not None:
        new_only = ": new lines only" if fallback else ""
        reference = f" ({_compared(job).removeprefix('; ')}{new_only})"
    yield _indented(Text(f"{job.name}{about}{empty}{reference}", style="bold"))
    if fallback:
        yield _indented(
            _hanging([(Text(f"{f.line:6d} | ", style="dim"), Text(f.text)) for f in fallback])
        )


def _labelled(label: str, value: str) -> RenderableType:
    return _indented(_hanging([(Text(f"{label}: ", style="dim"), Text(value))]))


def _hanging(rows: list[tuple[Text, Text]]) -> Table:
    """Rows of a label and a text that wraps under itself, not under the label; a word too
    long for the width (a path, a URL) is folded rather than cut."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, text in rows:
        grid.add_row(label, text)
    return grid


def _indented(renderable: RenderableType) -> RenderableType:
    return Padding(renderable, (0, 0, 0, INDENT), expand=False)


def signature_view(signature: Signature) -> Iterator[RenderableType]:
    """`catalog explain`: what a signature is, matches and says, with each capture shown as
    its placeholder, and where it is written."""
    text = placeholder_text(signature)
    yield Text.assemble((signature.id, "bold"), f": {signature.title}")
    yield _labelled("category", f"{signature.category}, priority {signature.priority}")
    yield _labelled("matches", signature.pattern.pattern)
    keywords = [*signature.keywords, *signature.any_keywords]
    yield _labelled(
        "keywords", ", ".join(keywords) + (" (any of)" if signature.any_keywords else "")
    )
    if signature.group_by:
        yield _labelled("one failure per", ", ".join(signature.group_by))
    traits = [
        *(["a wrapper: defers to a specific error above it"] if signature.wraps else []),
        *(
            ["the tool's final report: its last match is the cause"]
            if signature.final_report
            else []
        ),
        *(["retrying may pass (a flaky or infrastructure failure)"] if signature.retry else []),
    ]
    for trait in traits:
        yield _indented(Text(trait))
    if signature.match_examples:
        example = signature.match_examples[0]
        yield _labelled("example", example.line)
        if example.captures:
            captured = ", ".join(f"{name}={value}" for name, value in example.captures.items())
            yield _labelled("captures", captured)
    yield _indented(Text("summary:", style="bold"))
    yield _indented(Markdown(text.summary, hyperlinks=False))
    yield _indented(Text("fix:", style="bold green"))
    yield _indented(Markdown(text.fix, hyperlinks=False, code_theme="ansi_dark"))
    if signature.references:
        yield _indented(Text("references:", style="bold"))
        yield _indented(Text("\n".join(signature.references)))
    window = signature.path.with_suffix(".log")
    files = [str(signature.path), *([str(window)] if window.is_file() else [])]
    yield _labelled("files", "\n".join(files))
