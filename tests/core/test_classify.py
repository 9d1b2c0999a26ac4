from __future__ import annotations

import re

import pytest
from helpers import run_log

from triage_bot.core import classify as classify_module
from triage_bot.core import regex_shapes
from triage_bot.core.classify import MAX_LINE_BYTES

MODULE = "ModuleNotFoundError: No module named 'aiter.ops.triton.attention.mla_decode'"
STAMP = "2026-10-21T09:12:33.1234567Z "


def traceback_log(extra: str = "") -> str:
    lines = [
        "Traceback (most recent call last):",
        '  File "/workspace/ATOM/atom/model_ops/attentions/triton_mla.py", line 7, in <module>',
        "    from aiter.ops.triton.attention.mla_decode import csr_to_dense_block_table",
        MODULE,
        "server exited",
        "##[error]Process completed with exit code 1.",
    ]
    return "".join(STAMP + line + "\n" for line in lines) + extra


def test_root_cause_captures_line_and_context() -> None:
    result = run_log(traceback_log())
    root = result.root_cause
    assert root is not None
    assert root.signature.id == "python-module-not-found"
    assert root.captures == {"module": "aiter.ops.triton.attention.mla_decode"}
    assert root.line == 4
    assert root.text == MODULE
    assert root.before[-1].strip().startswith("from aiter.ops.triton")
    assert root.after == ["server exited"]
    # The exit-code catch-all is seen, but never the root cause when something better exists.
    assert [m.signature.id for m in result.also] == ["gha-process-exit-code"]
    assert result.fallback_lines == []


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_chunk_boundaries_do_not_change_the_verdict(chunk: int) -> None:
    whole = run_log(traceback_log())
    split = run_log(traceback_log(), chunk=chunk)
    assert split.root_cause is not None and whole.root_cause is not None
    assert (split.root_cause.line, split.root_cause.before, split.root_cause.after) == (
        whole.root_cause.line,
        whole.root_cause.before,
        whole.root_cause.after,
    )
    assert split.lines == whole.lines == 6


@pytest.mark.parametrize("engine", ["hyperscan", "ahocorasick", "python"])
def test_ansi_inside_the_keyword_still_matches(engine: str) -> None:
    coloured = f"{STAMP}\x1b[1mModuleNotFoundError\x1b[0m: No module named \x1b[31m'numpy'\x1b[0m\n"
    split = f"{STAMP}Too \x1b[1mmany\x1b[0m open files (os error 24)\n"
    result = run_log(coloured + split, engine=engine)
    ids = sorted(m.signature.id for m in result.matches)
    assert ids == ["python-module-not-found", "rust-too-many-open-files"]
    assert result.matches[0].text.startswith("Too many open files") or result.matches[
        1
    ].text.startswith("Too many open files")


def test_the_block_scan_looks_for_a_long_literal_by_its_head_and_lines_keep_it_whole() -> None:
    from triage_bot.core.engine import SCANNED_HEAD, AhoCorasickPrefilter, Trigger

    literal = b". Is the docker daemon running?"
    assert len(literal) > SCANNED_HEAD
    prefilter = AhoCorasickPrefilter([Trigger(literal)])
    block = b"Cannot connect to the Docker daemon at tcp://docker:2376" + literal + b"\n"
    head_only = b"see " + literal[:SCANNED_HEAD] + b" only\n"
    # Both lines are found by the head; only the first holds the trigger.
    assert [end for end, _index in prefilter.scan_ids(block + head_only)]
    assert prefilter.literals_in(block) == {0}
    assert prefilter.literals_in(head_only) == set()


@pytest.mark.parametrize("engine", ["hyperscan", "ahocorasick", "python"])
def test_a_long_keyword_split_by_colour_is_found_with_every_engine(engine: str) -> None:
    line = (
        f"{STAMP}ERROR: Cannot connect to the Docker daemon at tcp://docker:2376. "
        "Is the \x1b[1mdocker daemon\x1b[0m running?\n"
    )
    result = run_log(line, engine=engine)
    assert [m.signature.id for m in result.matches] == ["docker-daemon-unreachable"]


def test_same_failure_is_counted_and_variants_kept() -> None:
    lines = [
        f"FAILED tests/t.py::test_{i} - TypeError: f() got an unexpected keyword argument 'x'"
        for i in range(5)
    ]
    result = run_log("\n".join(lines) + "\n")
    assert len(result.matches) == 1
    match = result.matches[0]
    assert match.count == 5
    assert match.variants["test"] == [f"tests/t.py::test_{i}" for i in range(5)]


def test_unknown_failure_gets_best_guess_lines_from_the_failing_step() -> None:
    log = "".join(
        STAMP + line + "\n"
        for line in [
            "compiling things",
            "warning: something odd",
            "Error: the frobnicator refused to start",
            "details follow",
            "##[error]Process completed with exit code 3.",
            "Post job cleanup.",
            "error: cleanup noise after the failure",
        ]
    )
    result = run_log(log)
    assert result.root_cause is not None and result.root_cause.signature.generic
    texts = [f.text for f in result.fallback_lines]
    assert "Error: the frobnicator refused to start" in texts
    assert "error: cleanup noise after the failure" not in texts
    assert [f.line for f in result.fallback_lines if f.text.startswith("Error: the")] == [3]


def test_plain_log_without_markers_uses_its_tail() -> None:
    result = run_log("all good\nsomething failed badly here\nbye\n")
    assert result.root_cause is None
    assert [(f.line, f.text) for f in result.fallback_lines] == [(2, "something failed badly here")]


def test_overlong_line_is_cut_and_counted_once() -> None:
    log = "x" * (MAX_LINE_BYTES * 3) + "\n" + MODULE + "\n"
    result = run_log(log, chunk=4096)
    assert result.root_cause is not None
    assert result.root_cause.line == 2
    assert result.lines == 2


def test_byte_cap_keeps_the_tail_with_its_line_numbers_and_says_so() -> None:
    log = MODULE.replace("aiter", "early") + "\n" + "ok\n" * 1000 + MODULE + "\n"
    result = run_log(log, chunk=100, max_bytes=600)
    assert result.truncated
    assert 0 < result.bytes_read <= 600
    assert result.root_cause is not None and result.root_cause.line == 1002
    assert "early" not in result.root_cause.text and result.lines == 1002


def test_binary_garbage_never_crashes() -> None:
    result = run_log(
        bytes(range(256)) * 50 + b"\n\xff\xfe ModuleNotFoundError: No module named 'q'\n"
    )
    assert result.root_cause is not None
    assert result.root_cause.captures == {"module": "q"}


def test_distinct_matches_are_bounded() -> None:
    log = "".join(f"ModuleNotFoundError: No module named 'm{i}'\n" for i in range(500))
    result = run_log(log)
    assert len(result.matches) == classify_module.MAX_DISTINCT_MATCHES


def test_one_compiled_catalog_serves_many_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from helpers import compiled

    from triage_bot.core.classify import classify

    shared = compiled()
    log = traceback_log().encode() * 2000

    def run(_: int) -> str | None:
        result = classify([log[i : i + 4096] for i in range(0, len(log), 4096)], shared, "j")
        return result.root_cause.signature.id if result.root_cause else None

    with ThreadPoolExecutor(4) as pool:
        verdicts = list(pool.map(run, range(8)))
    assert verdicts == ["python-module-not-found"] * 8


def test_a_prefilter_is_split_into_its_top_level_branches() -> None:
    branches = regex_shapes.top_level_branches
    assert branches(r"Test\w*\.\w+:\d| » |\((?:\w+\.)+\w*(?:Test|IT)\)") == [
        r"Test\w*\.\w+:\d",
        " » ",
        r"\((?:\w+\.)+\w*(?:Test|IT)\)",
    ]
    # `|` escaped, inside a class (also one that starts with `]`) or a group is no branch.
    assert branches(r"\|a|[|]b|[]|]c|[^]|]d|(e|f)") == [r"\|a", "[|]b", "[]|]c", "[^]|]d", "(e|f)"]
    assert branches("plain") == ["plain"]


@pytest.mark.parametrize("engine", ["hyperscan", "ahocorasick", "python"])
def test_each_branch_of_a_prefilter_finds_its_lines(engine: str) -> None:
    # java-surefire-summary-failure's prefilter has five branches; lines of three of them.
    lines = [
        "Results :",
        "Failed tests:   DirtyFlagTest.testIsDirty:45 expected: <false> but was: <true>",
        "[ERROR]   StoreIT » IllegalState Could not find a valid Docker environment",
        "  testFoo(com.example.FooTest): boom",
    ]
    result = run_log("".join(line + "\n" for line in lines), engine=engine)
    found = {m.line for m in result.matches if m.signature.id == "java-surefire-summary-failure"}
    assert found == {2, 3, 4}


def test_a_regex_trigger_is_led_only_by_a_rare_literal_it_must_start_with() -> None:
    from triage_bot.core.engine import lead_literal

    assert lead_literal(rb"\nE   ") == b"\nE   "
    assert lead_literal(rb"\n_ [^_ ]") == b"\n_ "
    assert lead_literal(" » ".encode()) == " » ".encode()
    assert lead_literal(" »x?".encode()) == " »".encode()  # an optional byte is not part of it
    # Common words and plain ASCII are no lead: their lines are too many to look at again.
    assert lead_literal(rb"Test[\w$]*\.[\w$<>]+:\d") is None
    assert lead_literal(rb"\.py:\d+:\d+: [A-Z]") is None
    # What a match may not start with: a class, a group, an anchor, flags, too short a lead.
    for pattern in (rb"\d+\nE", rb"(?:\nE|\nF)  ", rb"^E   ", rb"(?i)\nE   ", rb"\nE?  "):
        assert lead_literal(pattern) is None, pattern


def test_regex_triggers_with_one_leading_literal_share_one_pass_and_find_each_line() -> None:
    from triage_bot.core.engine import _joined_by_prefix

    patterns = [rb"test[A-Z0-9_]\w*, ", rb"test[A-Z0-9_]\w*(?:\(\)|\])", rb"\.py:\d+:\d+: [A-Z]"]
    joined = _joined_by_prefix(patterns)
    assert len(joined) == 2  # the two `test` ones in one pass, `.py:` alone
    block = b"  testLogin, failed\nClass.testB()\n-[C testC]\nx.py:1:2: E3 bad\ntesting, no\n"
    found = {block.count(b"\n", 0, m.end()) for p in joined for m in p.finditer(block)}
    alone = {block.count(b"\n", 0, m.end()) for p in patterns for m in re.finditer(p, block)}
    assert found == alone == {0, 1, 2, 3}


def test_a_noisy_signature_does_not_crowd_out_the_failure_at_the_end() -> None:
    # Black lists every file it would reformat (94 in a cisco/mindmeld job, BugSwarm's
    # fixture tests/analyzer/github_data/python/2163834915-orig.log); the tests fail later.
    files = "".join(f"would reformat mindmeld/m{i}.py\n" for i in range(150))
    failed = "FAILED tests/test_core.py::test_span[ok 2:30pm now-sys_time]"
    result = run_log(files + failed + "\n##[error]Process completed with exit code 1.\n")
    assert len(result.matches) == classify_module.MAX_DISTINCT_MATCHES
    assert result.root_cause is not None and result.root_cause.text == failed
    kept = sorted(m.line for m in result.matches if m.signature.id == "python-black-would-reformat")
    assert kept[0] == 1  # the signature's first match stays
