"""The comment: untrusted log text stays inert, secrets never show, the cap holds."""

from __future__ import annotations

import re

from helpers import run_log

from triage_bot.core.comment_words import (
    MAX_SHOWN_LINE,
    short_job_names,
    trimmed_window,
    value_noun,
)
from triage_bot.core.redact import redact
from triage_bot.core.render import (
    CATALOG_URL,
    COMMENT_MARKER,
    MAX_COMMENT_CHARS,
    compose_comment,
    cut_markdown,
    heading_title,
    render_comment,
    render_passed_section,
    render_text,
    set_catalog_url,
)
from triage_bot.core.report import BaseRun, Job, build_report, report_json
from triage_bot.core.sanitize import code_span, escape_text, fill_slots, slot

HOSTILE = (
    "ModuleNotFoundError: No module named 'evil'\n"
    "```\n@octocat please look <img src=x onerror=alert(1)> [click](https://evil.test)\n"
    "Authorization: Bearer abcdefgh12345678ijklmnop ghp_" + "a" * 36 + "\n"
    "https://deploy:hunter2@registry.example.com/v2/ AKIAABCDEFGHIJKLMNOP\n"
)


def hostile_comment() -> str:
    result = run_log(HOSTILE)
    assert result.root_cause is not None
    return render_comment(build_report([result]))


def test_comment_has_marker_signature_fix_and_evidence() -> None:
    body = render_comment(build_report([run_log("ModuleNotFoundError: No module named 'numpy'\n")]))
    assert body.startswith(COMMENT_MARKER)
    assert "Python module not found" in body and "`numpy`" in body
    assert "**Suggested fix**" in body and 'git grep -n "numpy"' in body
    assert "job, line 1" in body


def test_secrets_are_redacted_everywhere() -> None:
    log = "Authorization: Bearer abcdefgh12345678ijklmnop\nghp_" + "b" * 36 + "\n"
    log += "ModuleNotFoundError: No module named 'a'\n"
    report = build_report([run_log(log)])
    body = render_comment(report)
    as_json = str(report_json(report))
    for secret in ("abcdefgh12345678ijklmnop", "ghp_" + "b" * 36):
        assert secret not in body and secret not in as_json
    assert "Bearer ***" in body


def test_log_text_cannot_break_out_of_its_code_block() -> None:
    evidence = "before\n````\n**bold** @octocat\n```"
    block = fill_slots(f"```text\n{slot(0)}\n```", [evidence])  # the `block` filter's form
    fence = block.split("\n", 1)[0].removesuffix("text")
    assert len(fence) == 5
    assert block.endswith("\n" + fence)
    # No line inside is a fence that could close it.
    inner = block.split("\n")[1:-1]
    assert not any(re.fullmatch(r"`{5,}\s*", line) for line in inner)


def test_mentions_html_and_links_are_neutralised_outside_code() -> None:
    text = escape_text("@octocat <b>x</b> [a](https://e.test) *b* | c")
    assert "@octocat" not in text
    assert "<b>" not in text and "&lt;b&gt;" in text
    assert "\\[a\\]" in text and "\\*b\\*" in text and "\\|" in text
    assert code_span("a `tick` b") == "``a `tick` b``"


def test_hostile_log_in_a_full_comment() -> None:
    body = hostile_comment()
    assert "hunter2" not in body and "ghp_" + "a" * 36 not in body
    assert "AKIAABCDEFGHIJKLMNOP" not in body
    # Outside code blocks no raw mention or tag survives.
    outside = re.sub(r"(?ms)^(`{3,})text\n.*?^\1$", "", body)
    assert "@octocat" not in outside and "<img" not in outside


def test_redaction_keeps_prose() -> None:
    assert redact("token authentication failed for user") == "token authentication failed for user"
    assert redact("password=s3cr3tvalue") == "password=***"


def test_comment_is_capped_and_says_what_was_cut() -> None:
    results = []
    for i in range(400):
        result = run_log(f"ModuleNotFoundError: No module named 'pkg{i}_{'y' * 200}'\n")
        result.name = f"matrix-{i}"
        results.append(result)
    body = render_comment(build_report(results))
    assert len(body) <= MAX_COMMENT_CHARS
    assert "more failures not shown" in body and "65,536" in body
    assert body.count("<summary>") < 400  # fewer failures shown, each in its <details>


def test_text_view_lists_failures_and_fallback() -> None:
    known = run_log("ModuleNotFoundError: No module named 'numpy'\n")
    unknown = run_log("starting\nerror: the gizmo exploded\n")
    unknown.name = "gizmo"
    text = render_text(build_report([Job(known), Job(unknown)]))
    assert "Python module not found" in text
    assert "gizmo" in text and "error: the gizmo exploded" in text


def test_a_job_with_only_a_catch_all_is_still_listed() -> None:
    result = run_log("hello\n##[error]Process completed with exit code 1.\n")
    result.name = "quiet-job"
    body = render_comment(build_report([result]))
    assert "quiet-job" in body
    assert "No error lines found" in body


def _big_section(title: str, blocks: int) -> str:
    block = "**Evidence**:\n\n```text\n" + "x = 1  # a log line\n" * 60 + "```\n\n"
    return f"## CI triage: {title}\n\n" + block * blocks


def test_sections_that_do_not_fit_share_the_cap_and_are_cut_between_blocks() -> None:
    small = "## CI triage: Docs\n\n**1 failed job**: 1 known failure.\n\n"
    sections = [_big_section("CI", 60), small, _big_section("Lint", 60)]
    assert sum(map(len, sections)) > MAX_COMMENT_CHARS
    body = compose_comment(sections)
    assert len(body) <= MAX_COMMENT_CHARS
    assert small in body  # a short section is whole
    assert body.count("cut here") == 2  # each long one says it was cut
    ci, lint = body.index("## CI triage: CI"), body.index("## CI triage: Lint")
    assert abs((body.index(small) - ci) - (len(body) - lint)) < 4000  # about equal shares
    # Cut between blocks: every fence is closed, so nothing after it renders as code.
    assert body.count("```") % 2 == 0


def test_a_cut_closes_the_details_it_leaves_open() -> None:
    text = "## A\n\n<details><summary>Jobs</summary>\n\n" + "- job\n" * 2000 + "\n</details>\n"
    cut = cut_markdown(text, 3000, "_cut_\n")
    assert len(cut) <= 3000 and cut.endswith("_cut_\n")
    assert cut.count("<details>") == cut.count("</details>") == 1
    assert cut_markdown("short", 100, "_cut_") == "short"


# ---- the first screen (issue #12) ------------------------------------------------------------

MAIN = BaseRun(branch="main", run_url="https://github.com/o/r/actions/runs/9", conclusion="failure")
MODULE_LOG = "ModuleNotFoundError: No module named 'numpy'\n"
UNEXPLAINED_LOG = (
    "starting\nerror: the gizmo exploded\n##[error]Process completed with exit code 1.\n"
)


def named(log: str, name: str) -> Job:
    result = run_log(log)
    result.name = name
    return Job(result)


def headline(body: str) -> str:
    return next(line for line in body.splitlines() if line.startswith(("❌", "✅", "⚠️")))


def test_the_headline_says_whether_anything_new_broke() -> None:
    report = build_report([named(MODULE_LOG, "a"), named(UNEXPLAINED_LOG, "b")], base=MAIN)
    assert headline(render_comment(report)).startswith("❌ **1 new failure, 1 job unexplained**")
    [group] = report.groups
    group.base = MAIN
    assert headline(render_comment(report)).startswith(
        "⚠️ **1 job unexplained** · 1 also failing on `main`"
    )
    report = build_report([named(MODULE_LOG, "a")], base=MAIN)
    report.groups[0].base = MAIN
    assert headline(render_comment(report)).startswith(
        "✅ **Nothing new: every failure also fails on `main`**"
    )
    # Not compared with the base branch: nothing is called new.
    unknown = render_comment(build_report([named(MODULE_LOG, "a")], head_sha="ab" * 20))
    assert headline(unknown).startswith("❌ **1 failure** · 1 failed job")
    assert "As of commit `ababababab`; not compared with the base branch." in unknown


def test_every_failure_and_unexplained_job_is_a_row_details_below() -> None:
    jobs = [named(MODULE_LOG, f"build-linux-x86_64-py3{minor}") for minor in (10, 11, 12)]
    report = build_report([*jobs, named(UNEXPLAINED_LOG, "gizmo")], base=MAIN)
    body = render_comment(report)
    rows = [line for line in body.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 3  # the header, the failure, the unexplained job
    assert rows[1].startswith("| **new** | **1. Python module not found**: `numpy`")
    assert "| 3 jobs: build-linux-x86_64-py{310,311,312} |" in rows[1]
    assert rows[2].startswith("| **unexplained** | `error: the gizmo exploded` | gizmo |")
    # The new failure's details stay open, with every job's full name; the others closed.
    assert "<details open><summary>1. Python module not found" in body
    assert "- build-linux-x86_64-py311" in body
    assert "<details><summary>Unexplained: gizmo: best-guess error lines</summary>" in body
    assert "Lines " not in body and "No error lines" not in body


def test_a_wrapper_alone_leaves_its_job_unexplained_with_its_best_guess() -> None:
    # Nothing matched above the legacy Docker builder's wrapper: it only says the step
    # failed, so the table shows the best-guess line (the error the tool printed), not it.
    log = (
        "Step 3/5 : RUN ./fetch-sources.sh\n"
        " ---> Running in 2e792293343c\n"
        "[ERROR] widget-1.2 could not be fetched from the mirror\n"
        "The command '/bin/sh -c ./fetch-sources.sh' returned a non-zero code: 66\n"
    )
    result = run_log(log)
    assert result.root_cause is not None and result.root_cause.signature.wraps
    report = build_report([named(log, "image")])
    assert report.groups == []
    body = render_comment(report)
    row = next(line for line in body.splitlines() if line.startswith("| **unexplained** "))
    assert "widget-1.2 could not be fetched" in row
    assert "(only: A Dockerfile RUN step failed (legacy builder))" in body
    assert report_json(report)["jobs"][0]["explains"] is False


def test_captures_are_named_for_what_they_are() -> None:
    log = "".join(
        f"E   TypeError: Foo.__init__() got an unexpected keyword argument 'bar'\n"
        f"FAILED tests/test_x.py::test_{n} - TypeError: Foo.__init__() got an unexpected "
        "keyword argument 'bar'\n"
        for n in range(3)
    )
    body = render_comment(build_report([named(log, "unit")]))
    assert "distinct values" not in body
    assert "**3 failing tests**: `tests/test_x.py::test_0`, `tests/test_x.py::test_1`" in body
    assert "`bar` · 3 failing tests |" in body  # the table's row counts them too
    assert value_noun("test", 7) == "failing tests" and value_noun("module", 1) == "module"
    assert value_noun("code", 2) is None  # then "2 values of `code`"


def test_matrix_job_names_show_their_shared_prefix_once() -> None:
    kimi = [f"kimi-k3-mxfp4-1p1d-tp8-dspark7-agentic-1m-c{c}" for c in (1, 16, 4, 48, 64)]
    assert short_job_names(kimi) == "kimi-k3-…-agentic-1m-c{1,16,4,48,64}"
    assert short_job_names(["test (ubuntu, 3.11)", "test (ubuntu, 3.12)"]) == (
        "test (ubuntu, 3.{11,12})"
    )
    assert short_job_names(["lint", "build"]) == "lint"  # nothing shared: the first name
    assert short_job_names(["only-one"]) == "only-one"


def test_the_heading_does_not_repeat_the_workflows_name() -> None:
    assert heading_title("CI") == heading_title("ci") == heading_title("CI triage") == ""
    assert heading_title("Lint") == "Lint"
    body = render_comment(build_report([named(MODULE_LOG, "a")], title="CI"))
    assert "## CI triage\n" in body and "CI triage: CI" not in body


def test_evidence_has_no_blank_ends_and_long_lines_are_cut_but_never_the_key_line() -> None:
    long_context = "x" * 300
    key = "ModuleNotFoundError: No module named '" + "m" * 200 + "'"
    log = f"\n\n{long_context}\nstarting\n{key}\n\n\n"
    body = render_comment(build_report([named(log, "job")]))
    block = re.search(r"```text\n(.*?)\n```", body, re.DOTALL)
    assert block is not None
    lines = block.group(1).split("\n")
    assert lines[0].strip() and lines[-1].strip()  # no blank first or last line
    assert key in lines  # whole
    assert "x" * MAX_SHOWN_LINE + " …" in lines and long_context not in lines
    assert trimmed_window(["", " ", "a"], "KEY", ["b", "", "\t"]) == ["a", "KEY", "b"]
    assert trimmed_window([], "", []) == [""]  # the key line stays whatever it holds


def test_the_catalog_link_is_a_setting() -> None:
    report = build_report([named(UNEXPLAINED_LOG, "gizmo")])
    assert f"[how signatures work]({CATALOG_URL})" in render_comment(report)
    mine = "https://git.example.com/ci/signatures"
    set_catalog_url(mine)
    try:
        body = render_comment(report)
    finally:
        set_catalog_url(CATALOG_URL)
    assert f"[how signatures work]({mine})" in body and f"[Add a signature]({mine})" in body
    assert CATALOG_URL not in body


def test_a_passed_section_names_its_workflow_once() -> None:
    assert render_passed_section("CI", 2, None).startswith("## CI triage\n")
    assert render_passed_section("Lint", 2, None).startswith("## CI triage: Lint\n")
