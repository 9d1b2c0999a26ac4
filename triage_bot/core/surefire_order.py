"""Maven Surefire's results summary, in the order its tests failed.

At the end of a run Surefire lists the tests that failed (java-surefire-summary-failure), grouped
(`Failed tests:` then `Tests in error:`, or `Failures:` then `Errors:`), not in the order they
failed: the first entry may be a test that failed long after another. The first test to fail
is the likeliest cause, so a summary entry is placed where its test class first failed while it
ran: the class's `Tests run: ... <<< FAILURE!` line (java-surefire-tests-failed; its class after
`- in`, or in the `Running <class>` line above it), or a test's own `<<< FAILURE!` line
(java-surefire-test-failed, `method(package.Class)`).
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

from triage_bot.core.classify_results import Match

SUMMARY = "java-surefire-summary-failure"
CLASS_LINE = "java-surefire-tests-failed"
TEST_LINE = "java-surefire-test-failed"
_RUNNING = regex.compile(r"^Running (?P<name>[\w.$]{1,500}+)\s*$")
_TEST_CLASS = regex.compile(r"\((?P<name>(?:[\w$]{1,200}+\.){0,50}+[\w$]{1,200}+)\)")


def failure_order(matches: Sequence[Match]) -> dict[int, int]:
    """For each summary entry (by id) whose class is seen failing earlier in the log, the line
    where it first failed: the line it ranks at among its equals."""
    first_failed: dict[str, int] = {}
    for match in matches:
        name = _failed_class(match)
        if name is not None:
            first_failed[name] = min(first_failed.get(name, match.line), match.line)
    order: dict[int, int] = {}
    for match in matches:
        if match.signature.id != SUMMARY:
            continue
        name = _simple(match.captures.get("class", ""))
        if name in first_failed:
            order[id(match)] = first_failed[name]
    return order


def _failed_class(match: Match) -> str | None:
    """The simple name of the test class a class-level or test-level failure line names."""
    if match.signature.id == CLASS_LINE:
        named = match.captures.get("class", "")
        if named:
            return _simple(named)
        for text in reversed(match.before):
            running = _RUNNING.match(text)
            if running is not None:
                return _simple(running["name"])
        return None
    if match.signature.id == TEST_LINE:
        found = _TEST_CLASS.search(match.captures.get("test", ""))
        return _simple(found["name"]) if found is not None else None
    return None


def _simple(name: str) -> str:
    return name.rsplit(".", 1)[-1]
