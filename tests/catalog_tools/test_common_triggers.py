"""`catalog lint` warns of a signature whose triggers pass too many near-miss lines on to its
regex; the near-miss log it measures with is the bench's, made from the catalog's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import write_signature

from triage_bot.catalog_tools import catalog_check, near_miss
from triage_bot.cli.cli import main
from triage_bot.core import classify
from triage_bot.core.catalog import Catalog, Signature, load_catalog, load_signature
from triage_bot.core.classify import CompiledCatalog

# `error` alone (the pattern adds no literal to it): pytest names such as test_error_path
# and errors/ hold it on many lines.
BARE_WORD = """
    id: local-bare-error
    title: An error
    category: build
    priority: 50
    keywords: ["error"]
    pattern: 'error(?P<code>\\d*): (?P<reason>[a-z ]+)$'
    summary: "it failed"
    fix: "Read the error line and mend its cause."
    tests:
      match:
        - line: "error: out of gears"
      no_match: ["all good"]
"""
# Made of catalog words too (module, found, error), but as the tool prints them together.
SPECIFIC = """
    id: local-module-missing
    title: A module is missing
    category: dependency
    priority: 50
    keywords: ["ModuleNotFoundError: No module named"]
    pattern: "ModuleNotFoundError: No module named '(?P<module>[^']+)'"
    summary: "{{ module }} is missing"
    fix: "Install {{ module }} in the job before the tests."
    tests:
      match:
        - line: "ModuleNotFoundError: No module named 'gears'"
      no_match: ["all good"]
"""
WINDOW = "start\n#! match: {ident}\n{line}\n"


def _make(folder: Path, ident: str, body: str, line: str) -> Path:
    path = write_signature(folder, ident, body)
    path.with_suffix(".log").write_text(WINDOW.format(ident=ident, line=line), encoding="utf-8")
    return path


def test_a_bare_word_trigger_warns_and_lint_still_passes(tmp_path: Path) -> None:
    path = _make(tmp_path, "local-bare-error", BARE_WORD, "error: out of gears")
    signatures, problems = catalog_check.lint([tmp_path])
    assert problems == []
    [warning] = catalog_check.lint_warnings(signatures, problems)
    assert warning.path == path and warning.line == 5  # the keywords line
    assert "triggers too common" in warning.message
    # More than 1 line in 10,000 of the sample, as the message says.
    reached = int(warning.message.split(": ")[2].split(" of ")[0].replace(",", ""))
    assert reached > near_miss.SAMPLE_LINES * near_miss.TOO_COMMON


def test_a_specific_trigger_made_of_catalog_words_does_not_warn(tmp_path: Path) -> None:
    _make(
        tmp_path,
        "local-module-missing",
        SPECIFIC,
        "ModuleNotFoundError: No module named 'gears'",
    )
    signatures, problems = catalog_check.lint([tmp_path])
    assert signatures and problems == []
    assert catalog_check.lint_warnings(signatures, problems) == []


def test_the_command_prints_the_warning_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _make(tmp_path, "local-bare-error", BARE_WORD, "error: out of gears")
    assert main(["catalog", "lint", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "local-bare-error.yml:5: warning: triggers too common" in out
    assert "catalog lint: 1 signatures, 0 problems, 1 warnings" in out


def test_a_signature_with_a_problem_gets_no_warning_until_mended(tmp_path: Path) -> None:
    path = _make(tmp_path, "local-bare-error", BARE_WORD, "error: out of gears")
    path.with_suffix(".log").unlink()
    signatures, problems = catalog_check.lint([tmp_path])
    assert [p.path for p in problems] == [path]
    assert catalog_check.lint_warnings(signatures, problems) == []


def test_the_near_miss_log_is_the_same_for_a_seed_and_holds_the_catalog_words() -> None:
    catalog = load_catalog()
    first = near_miss.NearMissLog(catalog, seed=5).lines(3000)
    assert first == near_miss.NearMissLog(catalog, seed=5).lines(3000)
    assert first != near_miss.NearMissLog(catalog, seed=6).lines(3000)
    lines = first.decode().splitlines()
    assert len(lines) == 3000
    passed = sum("\x1b[32mPASSED\x1b[0m" in line for line in lines)
    assert passed > len(lines) // 2
    long_lines = [line for line in lines if len(line) > 1000]
    low, high = near_miss.LONG_LINE_CHARS
    assert long_lines and all(low - 100 < len(line) < high + 200 for line in long_lines)
    # The words that weigh most in the catalog's keywords are those the names hold most.
    words, weights = near_miss.catalog_words(catalog)
    heaviest = words[weights.index(max(weights))]
    lightest = words[weights.index(min(weights))]
    assert first.count(heaviest.encode()) > first.count(lightest.encode())


def test_planted_failures_are_the_catalog_windows_lines() -> None:
    catalog = load_catalog()
    log = near_miss.NearMissLog(catalog, seed=3, failures=2)
    text = b"".join(log.blocks(2 << 20)).decode()
    for window in log.planted:
        assert all(line in text for line in window)


def test_regex_reach_counts_the_lines_the_classifier_tries(tmp_path: Path) -> None:
    path = _make(tmp_path, "local-module-missing", SPECIFIC, "x")
    signature, _problems = load_signature(path)
    assert signature is not None
    compiled = CompiledCatalog(Catalog((signature,)))
    block = (
        b"ModuleNotFoundError: No module named 'a'\n"  # trigger and keyword
        b"tests/test_module.py::test_error_found PASSED\n"  # the words apart
        b"\x1b[31mModuleNotFoundError:\x1b[0m No module named 'b'\n"  # split by colour
        b"ModuleNotFoundError: No module named 'c' again\n"
    )
    reach = near_miss.regex_reach(compiled, block)
    assert (reach.lines, reach.reaching) == (4, 3)
    assert reach.by_signature == {"local-module-missing": 3}


def test_regex_reach_is_what_the_classifier_tries_on_a_near_miss_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A spy on the real classifier (it still runs): the lines it tries a regex on.
    tried: set[int] = set()
    try_signature = classify.JobClassifier._try_signature

    def spy(job: classify.JobClassifier, signature: Signature, *args: Any) -> bool:
        tried.add(args[3])  # block, start, end, number, ...
        return try_signature(job, signature, *args)

    monkeypatch.setattr(classify.JobClassifier, "_try_signature", spy)
    catalog = load_catalog()
    compiled = CompiledCatalog(catalog)
    log = b"".join(near_miss.NearMissLog(catalog, seed=9, failures=3).blocks(1 << 20))
    classify.classify([log], compiled)
    reach = near_miss.regex_reach(compiled, log)
    assert reach.reaching == len(tried) > 0


def test_the_trigger_is_the_keyword_longest_in_the_bytes_scanned() -> None:
    # node-test-runner-failed: `✖ ` is 2 characters but 4 bytes; `ms)`, 3 of each, ends
    # every timing line (`✔ adds (0.4ms)`) and was the trigger, passing them all on to the
    # regex (Hyperscan's triage 1.9x ripgrep without the signature, 1.2x with it).
    signature = next(s for s in load_catalog().signatures if s.id == "node-test-runner-failed")
    assert set(signature.keywords) == {"\u2716 ", "ms)"}
    assert signature.triggers == ("\u2716 ",)
