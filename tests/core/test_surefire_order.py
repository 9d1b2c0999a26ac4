"""Surefire's results summary ranks by the order its tests failed (surefire_order.py)."""

from __future__ import annotations

from helpers import run_log

# Surefire 2.x on Travis CI (ocpsoft/rewrite, BugSwarm's analyzer fixtures), shortened: a class
# errors in its set-up, another class fails a test later; the summary lists the failure first.
FIRST_CLASS = "org.ocpsoft.rewrite.servlet.config.ParameterWildcardConfigurationTest"
LATER = (
    "Failed tests:   testJoinChainingFromInternalServletForward"
    "(org.ocpsoft.rewrite.servlet.config.JoinChainingConfigurationTest):"
    " expected:<201> but was:<404>"
)
EARLIER = (
    f"  {FIRST_CLASS}: Expected exception of type java.lang.Exception during deployment of"
    " _DEFAULT_, but no exception was thrown."
)
RUN = [
    "-------------------------------------------------------",
    " T E S T S",
    "-------------------------------------------------------",
    "Running org.ocpsoft.rewrite.servlet.config.ParameterConfigurationTest",
    "Tests run: 4, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 2.434 sec",
    f"Running {FIRST_CLASS}",
    "Tests run: 1, Failures: 0, Errors: 1, Skipped: 0, Time elapsed: 2.107 sec <<< FAILURE!",
    "Running org.ocpsoft.rewrite.servlet.config.JoinChainingConfigurationTest",
    "Tests run: 5, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 2.362 sec <<< FAILURE!",
    "",
    "Results :",
    "",
    LATER,
    "",
    "Tests in error: ",
    EARLIER,
    "",
    "Tests run: 66, Failures: 1, Errors: 1, Skipped: 0",
    "",
    "[INFO] BUILD FAILURE",
]


def test_the_summary_entry_of_the_class_that_failed_first_is_the_root_cause() -> None:
    root = run_log("".join(line + "\n" for line in RUN)).root_cause
    assert root is not None and root.text == EARLIER


def test_without_the_classes_lines_the_summary_keeps_its_own_order() -> None:
    # No class is seen failing (a log cut to its summary): the first entry stays first.
    summary_only = RUN[RUN.index("Results :") :]
    root = run_log("".join(line + "\n" for line in summary_only)).root_cause
    assert root is not None and root.text == LATER
