"""catalog lint and catalog test refuse broken signatures, naming the file and the line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, write_signature

from triage_bot.catalog_tools import catalog_check
from triage_bot.cli.cli import main
from triage_bot.core import catalog as catalog_module

GOOD = """
    id: local-widget-broke
    title: The widget broke
    category: build
    priority: 50
    keywords: ["widget broke"]
    pattern: "widget broke: (?P<reason>[a-z ]+)"
    summary: "the widget broke ({{ reason | code }})"
    fix: |
      The widget broke because {{ reason }}. Rebuild it with `make widget`.
    tests:
      match:
        - line: "widget broke: out of gears"
          captures: {reason: out of gears}
      no_match: ["the widget is fine"]
"""
WINDOW = (
    'compiling\n#! match: local-widget-broke reason="out of gears"\nwidget broke: out of gears\n'
)


def make(
    folder: Path, body: str = GOOD, window: str | None = WINDOW, ident: str = "local-widget-broke"
) -> Path:
    path = write_signature(folder, ident, body)
    if window is not None:
        path.with_suffix(".log").write_text(window, encoding="utf-8")
    return path


def test_a_good_signature_passes_lint_and_test(tmp_path: Path) -> None:
    make(tmp_path)
    signatures, problems = catalog_check.lint([tmp_path])
    assert [s.id for s in signatures] == ["local-widget-broke"]
    assert problems == []
    checks, failures, load_problems = catalog_check.test([tmp_path])
    assert (checks, failures, load_problems) == (3, [], [])


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = make(tmp_path, GOOD.replace("priority: 50", "priority: [50"))
    _, problems = catalog_check.lint([tmp_path])
    assert len(problems) == 1
    assert problems[0].path == path and problems[0].line is not None
    assert "invalid YAML" in str(problems[0])


def test_schema_error_names_the_field_line(tmp_path: Path) -> None:
    make(tmp_path, GOOD.replace("category: build", "category: builds"))
    _, problems = catalog_check.lint([tmp_path])
    assert len(problems) == 1
    assert problems[0].line == 3
    assert "category" in problems[0].message and problems[0].hint


def test_bad_regex_is_refused(tmp_path: Path) -> None:
    make(tmp_path, GOOD.replace("(?P<reason>[a-z ]+)", "(?P<reason>[a-z ]+"))
    _, problems = catalog_check.lint([tmp_path])
    assert [p.line for p in problems] == [6]
    assert "does not compile" in problems[0].message


def test_catastrophic_pattern_is_refused(tmp_path: Path) -> None:
    body = GOOD.replace(
        '"widget broke: (?P<reason>[a-z ]+)"', '"widget broke: (?P<reason>(a|a?)+)$"'
    )
    body = body.replace("out of gears", "aaaa").replace("reason: aaaa", 'reason: "a"')
    make(tmp_path, body, window=None)
    _, problems = catalog_check.lint([tmp_path])
    messages = " ".join(p.message for p in problems)
    assert "backtracks catastrophically" in messages
    assert any(p.line == 6 for p in problems)


def test_two_runs_after_the_opening_literal_are_probed(tmp_path: Path) -> None:
    # java-maven-compile-error's shape before it was mended: spaces after `Error:`, then a
    # path that may hold spaces. `Error: ` and 64 KiB of spaces took it 53 s; the example's
    # many `/` left its first cuts unprobed.
    body = GOOD.replace('keywords: ["widget broke"]', 'keywords: [".java:"]').replace(
        'pattern: "widget broke: (?P<reason>[a-z ]+)"',
        r"pattern: 'Error: +(?P<reason>[^\n]*/)?(?P<file>\w+\.java):'",
    )
    path = "/home/runner/work/ledger/ledger/core/src/main/java/com/example/ledger/"
    body = body.replace('"widget broke: out of gears"', f'"Error: {path}A.java: x"')
    body = body.replace("{reason: out of gears}", f"{{reason: {path}, file: A.java}}")
    make(tmp_path, body, window=None)
    _, problems = catalog_check.lint([tmp_path])
    assert any("backtracks catastrophically" in p.message for p in problems), problems


def test_keyword_missing_from_an_example(tmp_path: Path) -> None:
    make(
        tmp_path,
        GOOD.replace('keywords: ["widget broke"]', 'keywords: ["widget broke", "gear"]').replace(
            "out of gears", "out of cogs"
        ),
    )
    _, problems = catalog_check.lint([tmp_path])
    assert any("keyword 'gear' does not occur" in p.message for p in problems)


def test_undefined_capture_in_a_template(tmp_path: Path) -> None:
    make(tmp_path, GOOD.replace("{{ reason | code }}", "{{ resaon | code }}"))
    _, problems = catalog_check.lint([tmp_path])
    assert any("summary does not render" in p.message and p.line == 7 for p in problems)


def test_id_must_equal_file_stem_and_be_unique(tmp_path: Path) -> None:
    make(tmp_path, ident="other-name")
    copy = tmp_path / "sub"
    copy.mkdir()
    make(copy)
    make(tmp_path / "sub", ident="local-widget-broke")
    _, problems = catalog_check.lint([tmp_path])
    assert any("differs from the file name" in p.message for p in problems)


def test_failing_inline_example_shows_expected_and_actual(tmp_path: Path) -> None:
    make(
        tmp_path,
        GOOD.replace("captures: {reason: out of gears}", "captures: {reason: out of cogs}"),
    )
    _, failures, _ = catalog_check.test([tmp_path])
    assert len(failures) == 1
    text = str(failures[0])
    assert "expected" in text and "out of cogs" in text and "got" in text and "out of gears" in text
    assert failures[0].line == 12


def test_failing_window_expectation_names_the_directive_line(tmp_path: Path) -> None:
    window = (
        "ok line\n#! match: local-widget-broke\nnothing to see\n#! ok: local-widget-broke\n"
        "widget broke: out of gears\n"
    )
    make(tmp_path, window=window)
    _, failures, _ = catalog_check.test([tmp_path])
    lines = sorted(f.line for f in failures if f.line)
    assert lines == [2, 4]


def test_window_source_line_is_no_expectation_and_no_log_line(tmp_path: Path) -> None:
    source = "#! source: https://github.com/octo-org/widgets/issues/7\n"
    make(tmp_path, window=source + WINDOW)
    checks, failures, _ = catalog_check.test([tmp_path])
    assert failures == [] and checks > 0
    log, expectations = catalog_check.parse_window(source + WINDOW)
    assert b"source" not in log
    assert [e.kind for found in expectations.values() for e in found] == ["match"]


@pytest.mark.parametrize(
    ("fix", "refused"),
    [
        ("See https://widgets.example.org/why/{{ reason }} for more.", True),
        ("See www.widgets.example.org/{{ reason | code }}.", True),
        ("See https://widgets.example.org/why/ for {{ reason | code }}.", False),
        ("Run `curl https://widgets.example.org/{{ reason }}`.", False),
        ("```sh\n      curl https://widgets.example.org/{{ reason }}\n      ```", False),
    ],
)
def test_lint_refuses_a_url_built_from_a_capture_outside_code(
    tmp_path: Path, fix: str, refused: bool
) -> None:
    old_fix = "The widget broke because {{ reason }}. Rebuild it with `make widget`."
    body = GOOD.replace(old_fix, fix)
    make(tmp_path, body)
    _, problems = catalog_check.lint([tmp_path])
    assert any("URL from a capture" in p.message for p in problems) == refused, problems


@pytest.mark.parametrize(
    ("prefilter", "refused"),
    [
        # A leading class: without Hyperscan, `re` tries it at every byte of the log
        # (node-bun-test-summary's `\\d fail...` took half the Aho-Corasick engine's time).
        ("'\\d+ broke: '", True),
        ("'widget broke: |[a-z]+ broke: '", True),
        ("'widget broke: [a-z]'", False),
        ("'widget broke: |gadget broke: '", False),
    ],
)
def test_lint_refuses_a_prefilter_branch_that_does_not_start_with_a_literal(
    tmp_path: Path, prefilter: str, refused: bool
) -> None:
    body = GOOD.replace(
        'keywords: ["widget broke"]', f'keywords: ["widget broke"]\n    prefilter: {prefilter}'
    )
    make(tmp_path, body)
    _, problems = catalog_check.lint([tmp_path])
    assert any("does not start with a literal" in p.message for p in problems) == refused, problems


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(tmp_path)
    assert main(["catalog", "lint", str(tmp_path)]) == 0
    assert main(["catalog", "test", str(tmp_path)]) == 0
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.yml").write_text("id: [\n", encoding="utf-8")
    assert main(["catalog", "lint", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "x.yml:" in out and "invalid YAML" in out
    assert main(["catalog", "lint", str(tmp_path / "missing")]) == 2


def test_the_builtin_catalog_is_clean() -> None:
    signatures, problems = catalog_check.lint([])
    assert problems == [], "\n".join(map(str, problems))
    assert len(signatures) >= 4
    checks, failures, load_problems = catalog_check.test([])
    assert failures == [] and load_problems == [], "\n".join(map(str, failures))
    assert checks > len(signatures)


def test_a_broken_builtin_signature_is_skipped_not_fatal(tmp_path: Path) -> None:
    from triage_bot.core.catalog import load_catalog

    shutil.copytree(ROOT / "patterns", tmp_path / "patterns")
    (tmp_path / "patterns" / "python" / "python-module-not-found.yml").write_text("id: [")
    catalog = load_catalog([tmp_path / "patterns"])
    assert catalog.get("python-module-not-found") is None
    assert catalog.get("rust-too-many-open-files") is not None
    assert len(catalog.problems) == 1


def test_the_catalog_cache_is_keyed_by_the_code_that_pickles_it() -> None:
    # A cached catalog holds this code's classes: another build of the code (same version
    # number, other fields) must not load it.
    files = catalog_module.signature_files([catalog_module.patterns_dir()])
    code = Path(catalog_module.__file__)
    before = catalog_module._cache_key(files, "builtin", None)
    stat = code.stat()
    try:
        os.utime(code, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert catalog_module._cache_key(files, "builtin", None) != before
    finally:
        os.utime(code, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert catalog_module._cache_key(files, "builtin", None) == before
