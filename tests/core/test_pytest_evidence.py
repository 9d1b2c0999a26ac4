"""Issue #12 item 2, pytest's `E` lines: when pytest's short test summary line (`FAILED
tests/x.py::test_y - ...`, python-pytest-failed) is the root cause, its evidence is the `E`
lines of the test's own section far above it, with the `>` line and pytest's `file.py:NN:`
line, not the summary lines around it.

The logs are real (tests/core/pytest_logs/, each naming its source in its `#! source:` line;
the `#!` lines are dropped before triage). What the evidence must hold is read from each log
here by a separate, plain scan (its section's header, then its `E` lines), not written down.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import EXAMPLES, compiled, run_log

from triage_bot.core import classify, pytest_sections
from triage_bot.core.classify import JobClassifier
from triage_bot.core.classify_results import JobResult, Match
from triage_bot.core.logs import normalise
from triage_bot.core.render import render_comment, render_text
from triage_bot.core.report import build_report, report_json
from triage_bot.triage.check_run import annotations_for

LOGS = Path(__file__).resolve().parent / "pytest_logs"
ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<file>[^\s:]+\.py)::(?P<name>\S.*?)(?: - .*)?$")
SUMMARY_SIGNATURES = {"python-pytest-failed", "python-pytest-test-error"}
LOCATION = re.compile(r"^\S+\.py:\d+: \w+")
# No evidence window may grow past this (as tests/core/test_evidence_windows.py holds).
MOST_EVIDENCE_LINES = 16

REAL_LOGS = [
    # -q, GitHub timestamps, one test function.
    LOGS / "gha-quiet-assert-false.log",
    # A test method of a class, an `E` diff longer than the window, a summary over lines.
    LOGS / "gha-class-long-diff.log",
    # xdist's `[gwN]` line, long tracebacks with `_ _ _` rules, two summary lines.
    LOGS / "xdist-long-traceback.log",
    # Errors at setup (`ERROR ...::test` lines, no reason), parametrized tests.
    LOGS / "setup-errors-parametrized.log",
    # A test name that fills the header (`_ name _`), a `>` statement of 8 lines.
    LOGS / "xdist-long-test-name.log",
]
# Logs whose summary lines give no reason (`FAILED tests/x.py::test_y` alone).
NO_REASON_LOGS = [
    LOGS / "xdist-long-traceback.log",
    LOGS / "setup-errors-parametrized.log",
    LOGS / "xdist-long-test-name.log",
]


def real_log(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[0].startswith("#! source: "), path
    return "".join(line for line in lines if not line.startswith("#!"))


def plain_lines(log: str) -> list[str]:
    """The log's lines as a reader sees them: timestamps and colour codes gone."""
    return [normalise(line.encode())[1] for line in log.split("\n")]


def first_e_line(lines: list[str], name: str, kind: str = "FAILED") -> int:
    """The number (1-based) of the first `E` line in the section of test `name` (of its
    setup or teardown, for an ERROR)."""
    title = re.escape(name) if kind == "FAILED" else rf"ERROR at \w+ of {re.escape(name)}"
    header = re.compile(rf"^_+ {title} _+$")
    start = next(at for at, line in enumerate(lines) if header.match(line))
    return next(at for at in range(start, len(lines)) if lines[at].startswith("E ")) + 1


def section_name(test_id: str) -> str:
    """`tests/x.py::TestA::test_b` -> the header's `TestA.test_b`."""
    return test_id.split("::", 1)[1].replace("::", ".")


def summary_matches(result: JobResult) -> list[Match]:
    found = [m for m in result.matches if m.signature.id in SUMMARY_SIGNATURES]
    assert found
    return found


def kind(match: Match) -> str:
    return "FAILED" if match.signature.id == "python-pytest-failed" else "ERROR"


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.stem)
def test_summary_line_evidence_is_its_tests_e_lines(path: Path) -> None:
    log = real_log(path)
    lines = plain_lines(log)
    result = run_log(log)
    root = result.root_cause
    assert root is not None and root.signature.id in SUMMARY_SIGNATURES
    for match in summary_matches(result):
        window = match.evidence
        expected = first_e_line(lines, section_name(match.captures["test"]), kind(match))
        assert window.line == expected != match.line
        assert window.text == lines[expected - 1]
        assert window.before and window.before[0].startswith(">")  # the failing statement
        assert LOCATION.match(window.after[-1])  # pytest's `file.py:NN: Error` line
        assert all(line.startswith("E") or line == "…" for line in window.after[:-1])
        assert len([*window.before, window.text, *window.after]) <= MOST_EVIDENCE_LINES


def test_each_summary_line_shows_its_own_tests_section() -> None:
    log = real_log(LOGS / "xdist-long-traceback.log")
    lines = plain_lines(log)
    shown = {m.captures["test"]: m.evidence.line for m in summary_matches(run_log(log))}
    assert len(shown) == 2
    assert len(set(shown.values())) == 2
    for test_id, line in shown.items():
        assert line == first_e_line(lines, section_name(test_id))


def test_a_long_e_diff_is_cut_with_a_marker_and_keeps_the_location() -> None:
    log = real_log(LOGS / "gha-class-long-diff.log")
    lines = plain_lines(log)
    window = summary_matches(run_log(log))[0].evidence
    e_lines = [line for line in lines[window.line - 1 :] if line.startswith("E ")]
    assert len(e_lines) > MOST_EVIDENCE_LINES - 4  # longer than the room: the test is real
    assert window.after[-2] == "…"
    assert window.after[-1] == "tests/test_priority_fixes.py:372: AssertionError"
    shown = [window.text, *window.after[:-2]]
    assert shown == e_lines[: len(shown)]  # the first ones, in order, none skipped


def test_a_fixture_error_shows_the_test_above_its_e_line() -> None:
    """pytest prints a missing fixture's `E` line under the test's `def` line (its `>` lines
    come below it): the lines above it in the section are shown, and the run ends there."""
    log = real_log(LOGS / "setup-fixture-not-found.log")
    lines = plain_lines(log)
    match = summary_matches(run_log(log))[0]
    window = match.evidence
    name = section_name(match.captures["test"])
    assert window.line == first_e_line(lines, name, "ERROR")
    assert window.text == "E       fixture 'pool' not found"
    assert window.before[-1] == "  def test_starmap_error_handling(pool):"
    assert window.after == []


def test_seed_keeps_its_e_line_root_cause() -> None:
    """The seed's unit-test job: the `E` line's own signature wins, as before."""
    result = run_log((EXAMPLES / "unit-tests-mi350x.log").read_text(encoding="utf-8"))
    root = result.root_cause
    assert root is not None and root.signature.id == "python-unexpected-keyword-argument"
    assert root.text.startswith("E ") and root.explanation is None


def test_a_summary_line_without_a_section_keeps_its_own_window() -> None:
    """`--tb=line`/`--tb=no` or a log cut above the FAILURES section: nothing to attach."""
    log = real_log(ROOT / "patterns" / "python" / "python-pytest-failed.log")
    match = summary_matches(run_log(log))[0]
    assert match.explanation is None
    assert match.evidence.line == match.line and match.evidence.text == match.text


def coloured(log: str) -> str:
    """The log as `pytest --color=yes` prints it: the colour codes of the real coloured log
    tests/core/evidence_logs/pytest-three-e-lines.log on its header, `E` and location lines,
    and the summary line's (`FAILED` red, the test's name bold)."""
    out = []
    for line in log.split("\n"):
        if re.match(r"^_+ \S.* _+$", line) and not re.match(r"^[_ ]+$", line):
            line = f"\x1b[31m\x1b[1m{line}\x1b[0m"
        elif line.startswith("E "):
            line = f"\x1b[1m\x1b[31m{line}\x1b[0m"
        elif (place := re.match(r"^(\S+\.py)(:\d+: \w+.*)$", line)) is not None:
            line = f"\x1b[31m{place[1]}\x1b[0m{place[2]}"
        elif (summary := SUMMARY.match(line)) is not None:
            test = f"{summary['file']}::\x1b[1m{summary['name']}\x1b[0m"
            line = f"\x1b[31m{summary['kind']}\x1b[0m {test}"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.stem)
def test_colour_codes_change_nothing(path: Path) -> None:
    log = real_log(path)
    plain = [m.evidence for m in summary_matches(run_log(log))]
    assert [m.evidence for m in summary_matches(run_log(coloured(log)))] == plain


TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\dT[\d:.]+Z) ", re.M)
# How other CIs (and `gh run view --log`) put their prefix before each line, a GitHub log's
# timestamp in it: logs.normalise drops each.
CI_PREFIXES = {
    "gh-run-view": r"tests\tRun pytest\t\1 ",
    "jenkins-timestamper": r"[\1] ",
    "gitlab": r"\1 01O ",
    "gitlab-continued": r"\1 01O+ ",
}


@pytest.mark.parametrize("prefix", CI_PREFIXES.values(), ids=CI_PREFIXES.keys())
@pytest.mark.parametrize("path", [LOGS / "gha-class-long-diff.log"], ids=lambda p: p.stem)
def test_other_ci_line_prefixes_change_nothing(path: Path, prefix: str) -> None:
    log = real_log(path)
    assert TIMESTAMP.search(log)
    github = [m.evidence for m in summary_matches(run_log(log))]
    other = TIMESTAMP.sub(prefix, log)
    assert other != log
    assert [m.evidence for m in summary_matches(run_log(other))] == github
    assert github[0].line != summary_matches(run_log(log))[0].line  # the E lines were found


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.stem)
def test_the_window_is_the_same_however_the_log_is_cut_into_blocks(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block may end anywhere in a section (a download's pieces): the lines above come
    from what the classifier remembers, the lines below from the next block."""
    log = real_log(path)
    whole = [m.evidence for m in summary_matches(run_log(log))]
    monkeypatch.setattr(classify, "MIN_BLOCK_BYTES", 1)  # each chunk is a block
    for chunk in (97, 256, 1024):
        assert [m.evidence for m in summary_matches(run_log(log, chunk=chunk))] == whole


def test_memory_is_bounded_by_tests_and_sections() -> None:
    """Sections of more tests than are kept, and more sections of one test than are kept
    (the real log's section, its test renamed): the first tests are kept, each's last ones."""
    log = real_log(LOGS / "gha-quiet-assert-false.log").split("\n")
    section = log[3:17]
    name = normalise(section[0].encode())[1].strip("_ ")
    many = [
        line.replace(name, f"{name}_{number}")
        for number in range(pytest_sections.MAX_TESTS + 20)
        for line in section
    ]
    repeated = section * (pytest_sections.WINDOWS_PER_TEST + 3)
    job = JobClassifier(compiled(), "job")
    job.feed("\n".join([*many, *repeated, *log[17:]]).encode())
    result = job.finish()
    runs = job._pytest._runs
    assert len(runs) == pytest_sections.MAX_TESTS
    assert ("FAILED", f"{name}_0") in runs and ("FAILED", name) not in runs
    assert all(len(kept) <= pytest_sections.WINDOWS_PER_TEST for kept in runs.values())
    # The summary line's own test came after the kept ones: its own window is shown.
    assert summary_matches(result)[0].explanation is None


def test_json_text_and_markdown_show_the_same_e_lines() -> None:
    log = real_log(LOGS / "gha-quiet-assert-false.log")
    report = build_report([run_log(log)])
    window = report.groups[0].example.evidence
    as_json = report_json(report)["jobs"][0]["root_cause"]["evidence"]
    assert as_json == {
        "line": window.line,
        "before": window.before,
        "text": window.text,
        "after": window.after,
    }
    comment, text = render_comment(report), render_text(report)
    assert f"line {window.line}" in comment and f"line {window.line}" in text
    for line in [*window.before, window.text, *window.after]:
        shown = line[:100]  # the comment cuts long lines (a marker), the terminal does not
        assert shown in comment
        assert shown in text


@pytest.mark.parametrize("path", NO_REASON_LOGS, ids=lambda p: p.stem)
def test_a_summary_line_without_a_reason_shows_no_empty_one(path: Path) -> None:
    """`FAILED tests/x.py::test_y` alone: the summary and the fix say no "failed: ``"."""
    report = build_report([run_log(real_log(path))])
    assert all("reason" not in group.example.captures for group in report.groups)
    empty_code = re.compile(r"(?<!`)``(?!`)")  # not a fence's ```
    assert not empty_code.search(render_comment(report))
    texts = [group["summary"] + group["fix"] for group in report_json(report)["groups"]]
    assert texts and not any(empty_code.search(text) for text in texts)


def test_a_secret_in_an_e_line_is_redacted() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    log = real_log(LOGS / "gha-quiet-assert-false.log").replace(
        "E       AssertionError: assert False", f"E       AssertionError: assert False {token}"
    )
    report = build_report([run_log(log)])
    assert token not in str(report_json(report))
    assert token not in render_comment(report)
    assert token not in render_text(report)


def test_the_check_run_annotates_the_line_the_e_lines_name() -> None:
    """The check run's annotations come from the evidence shown: pytest's `file.py:NN:` line
    under the `E` lines puts one at the failing assertion (the summary line names no line)."""
    log = real_log(LOGS / "gha-quiet-assert-false.log")
    report = build_report([run_log(log)])
    found = annotations_for(report, "yalcinkadir/institutional-trading-engine", lambda _: True)
    assert [(a["path"], a["start_line"]) for a in found] == [
        ("tests/test_daily_execution_reconciliation.py", 78)
    ]
    assert found[0]["message"].startswith("E       AssertionError: assert False")
