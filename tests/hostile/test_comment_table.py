"""The first screen's table (issue #12): log text (a job's name, a capture in a signature's
summary, an unexplained job's best line) can neither break out of its cell nor make one:
every row keeps its four cells, and the rest of the comment stays inert."""

from __future__ import annotations

from html.parser import HTMLParser

from helpers import run_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile.inert import github_markdown, links_in, markdown_problems
from hostile.test_comment_injection import BENIGN, HOSTILE_PIECES, hostile_text
from triage_bot.core.render import render_comment
from triage_bot.core.report import Job, build_report

JOB_URL = "https://github.com/o/r/actions/runs/1/job/2"
CELL_BREAKERS = ["|", "\\|", "\\\\|", "`|`", "a\nb", "| --- |", "\n| x | y | z | w |\n", "\r\n"]


class _Cells(HTMLParser):
    """Each table row's cells, as text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self.rows[-1].append("")
            self._in_cell = True

    def handle_endtag(self, tag: str) -> None:
        self._in_cell = self._in_cell and tag not in ("td", "th")

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.rows[-1][-1] += data


def table_rows(markdown: str) -> list[list[str]]:
    reader = _Cells()
    reader.feed(github_markdown().render(markdown))
    return reader.rows


def assert_rows_whole(comment: str) -> None:
    """The header, one failure, one unexplained job; each cell what its column says: a cell
    pushed along by a `|` (GitHub drops a row's cells past the header's) shows here."""
    header, failure, unexplained = table_rows(comment)
    assert header == ["", "Failure", "Jobs", "Evidence"], comment
    assert failure[0] == "failing" and failure[1].startswith("1. Python module not found")
    assert failure[2].startswith("2 jobs: ") and failure[3] == "line 1", comment
    assert unexplained[0] == "unexplained" and unexplained[2].startswith("odd")
    assert unexplained[3] == "line 2", comment


def comment_with(text: str) -> str:
    """A comment whose table holds `text` in every cell log text reaches: the module a
    summary names (in a code span), matrix job names, an unexplained job's name and line."""
    known = []
    for number in (1, 2):
        result = run_log("ModuleNotFoundError: No module named 'numpy'\n")
        result.name = f"{text} matrix-{number}"
        known.append(Job(result, url=JOB_URL))
    line = " ".join(text.splitlines())  # a log line has no line break
    odd = run_log(f"starting\nerror: {line}\n##[error]Process completed with exit code 1.\n")
    odd.name = f"odd {text}"
    report = build_report([*known, Job(odd, url=JOB_URL)], title=text)
    for group in report.groups:
        group.example.captures = {**group.example.captures, "module": text}
    return render_comment(report)


def test_a_pipe_or_line_break_stays_in_its_cell() -> None:
    for text in CELL_BREAKERS:
        assert_rows_whole(comment_with(text))


def test_the_summary_keeps_a_pipe_in_its_code_span() -> None:
    comment = comment_with("a|b")
    row = next(line for line in comment.splitlines() if "Python module not found" in line)
    assert "`a\\|b`" in row  # GitHub reads `\|` in a cell's code span as `|`
    html = github_markdown().render(comment)
    assert "<code>a|b</code>" in html


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(hostile_text, st.sampled_from(CELL_BREAKERS + HOSTILE_PIECES)))
def test_hostile_text_keeps_every_row_whole_and_the_comment_inert(text: str) -> None:
    benign = comment_with(BENIGN)
    comment = comment_with(text)
    assert_rows_whole(comment)
    template_own = set(markdown_problems(benign, links_in(benign)))
    assert not set(markdown_problems(comment, links_in(benign))) - template_own, comment
