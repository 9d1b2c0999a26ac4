"""A passing reference's label (a file name, a job's name) and link are untrusted: wherever
the comment names the reference, they cannot mention, link, reference or add HTML (#11)."""

from __future__ import annotations

from helpers import run_log
from hypothesis import HealthCheck, given, settings

from hostile.inert import elements_in, links_in, markdown_problems
from hostile.test_comment_injection import BENIGN, hostile_text
from triage_bot.core.render import render_comment
from triage_bot.core.report import Job, Reference, build_report

JOB_URL = "https://github.com/o/r/actions/runs/1/job/2"
PASSING_URL = "https://github.com/o/r/actions/runs/3/job/4"


def _compared_report(label: str, url: str | None = PASSING_URL) -> str:
    matched = run_log("ModuleNotFoundError: No module named 'foo'\n")
    assert matched.root_cause is not None
    matched.root_cause.new = True
    old = run_log("ModuleNotFoundError: No module named 'bar'\nerror: the widget broke\n")
    assert old.root_cause is not None
    old.root_cause.new = False  # printed by the passing run too: the comment says so
    old.name = "old"
    unexplained = run_log("something odd\nerror: the widget broke\n")
    unexplained.name = "other"
    jobs = [
        Job(result, url=JOB_URL, reference=Reference(label, url))
        for result in (matched, old, unexplained)
    ]
    return render_comment(build_report(jobs))


def test_the_comment_names_the_reference_with_its_link() -> None:
    comment = _compared_report("run #812, job test (3.11), passing")
    # The job list and the evidence of the known failure, then each unexplained job.
    assert comment.count(f"]({PASSING_URL})") == 4
    assert "compared with [run #\u2060812, job test (3.11), passing]" in comment
    # Its only match printed by the passing run too, a job counts as unexplained.
    assert "(only: Python module not found, also in the passing run)" in comment
    assert "**1 failure, 2 jobs unexplained**" in comment


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_a_hostile_reference_label_is_inert(text: str) -> None:
    benign = _compared_report(BENIGN)
    comment = _compared_report(text)
    links = links_in(benign)
    assert not set(markdown_problems(comment, links)) - set(markdown_problems(benign, links))
    wrapped = _compared_report(f"a{text}z")
    assert elements_in(wrapped) == elements_in(benign), wrapped


def test_a_reference_link_that_could_break_out_is_dropped() -> None:
    for url in ("https://x.example/a) [y](https://evil.example", "javascript:alert(1)"):
        comment = _compared_report("pass.log", url)
        assert "evil.example" not in comment and "javascript" not in comment
        assert "compared with pass.log" in comment
