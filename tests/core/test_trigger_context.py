"""A keyword's context in its pattern: the longer literals the prefilter looks for instead."""

from __future__ import annotations

import pytest

from triage_bot.catalog_tools.near_miss import regex_reach
from triage_bot.core.catalog import load_catalog
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.trigger_context import keyword_context


@pytest.mark.parametrize(
    ("pattern", "keyword", "context"),
    [
        # Across a group of alternatives: one literal per branch.
        (
            r"^Error(?: \(warning (?P<n>\d+)\)|: (?P<m>\S.*))",
            "Error",
            ("Error (wa", "Error: "),
        ),
        # The first copy of a repeated literal, and through an anchor.
        (r"^(?P<test>[^\s:]{1,300}): {1,200}FAIL\s*$", "FAIL", (" FAIL",)),
        (
            r"toomanyrequests: (?:You have reached|(?P<m>[^\n]+))",
            "toomanyrequests",
            ("toomanyrequests: ",),
        ),
        # The keyword inside every branch of the top-level alternation.
        (
            r"^(?:Test Run Failed\.|Failed!\s+-\s+Failed:\s+\d+)",
            "Failed",
            ("Failed!", "Run Failed."),
        ),
        # Through a lookbehind (zero width: the text on both sides is adjacent).
        (r"Killed(?<=\bKilled) signal (?P<n>\d+)", "Killed", ("Killed sig",)),
    ],
)
def test_the_context_every_match_holds(
    pattern: str, keyword: str, context: tuple[str, ...]
) -> None:
    assert keyword_context(pattern, keyword, ()) == context


@pytest.mark.parametrize(
    ("pattern", "keyword"),
    [
        (r"(?i)error: (?P<m>.+)", "error"),  # case-insensitive: the literal's case is unknown
        (r"\S+FAIL\b", "FAIL"),  # nothing literal next to it
        (r"(?:error|warning): x", "error"),  # a branch without the keyword
        (r"FAIL(?:ED)?: ", "FAIL"),  # an optional part: FAIL: and FAILED: both match
    ],
)
def test_no_context_where_none_is_certain(pattern: str, keyword: str) -> None:
    assert keyword_context(pattern, keyword, ()) == ()


def test_a_long_keyword_keeps_no_context_and_a_short_one_a_little() -> None:
    module = r"ModuleNotFoundError: No module named '(?P<m>[^']+)'"
    assert keyword_context(module, "ModuleNotFoundError", ()) == ()  # rare enough alone
    # Cut to CONTEXT_CHARS either side: the delimiters are what tell it from a name.
    assert keyword_context(r"xx fatal error: No such file", "error", ()) == ("tal error: No",)


def test_an_example_without_the_context_keeps_the_keyword() -> None:
    assert keyword_context(r"FAIL: (?P<t>\w+)", "FAIL", ("FAIL: a",)) == ("FAIL: ",)
    # Were the tree misread, an example line that lacks the literals says so.
    assert keyword_context(r"FAIL: (?P<t>\w+)", "FAIL", ("FAIL: a", "FAIL x")) == ()


def test_names_that_hold_a_bare_keyword_no_longer_reach_its_regex() -> None:
    compiled = CompiledCatalog(load_catalog())
    near_misses = (
        b"tests/test_tasks.py::test_exit[FAIL-3] \x1b[32mPASSED\x1b[0m   [ 12%]\n"
        b"tests/errors/test_io.py::TestErrorHandler::test_toomanyrequests_retry PASSED\n"
    )
    reach = regex_reach(compiled, near_misses)
    for signature in ("haskell-tasty-test-failed", "ocaml-compile-error", "docker-pull-rate-limit"):
        assert reach.by_signature[signature] == 0
    failures = (
        b"  tests.unit.parser:     FAIL (0.02s)\n"
        b"Error: Unbound value foo\n"
        b"toomanyrequests: You have reached your pull rate limit.\n"
    )
    reach = regex_reach(compiled, failures)
    for signature in ("haskell-tasty-test-failed", "ocaml-compile-error", "docker-pull-rate-limit"):
        assert reach.by_signature[signature] == 1
