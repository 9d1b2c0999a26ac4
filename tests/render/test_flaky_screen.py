"""A likely flaky failure in the seed's comment, laid out by headless Chromium at 1000x900
(test_first_screen.py's harness): the headline counts it apart from the new failures, its row
says "likely flaky", every row still fits the first screen, and its details (opened) link each
failed job and the pass that proves it. Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from render.test_first_screen import (
    RUN_URL,
    assert_on_first_screen,
    browser,
    comment_html,
    laid_out,
    seed_report,
)
from triage_bot.core.render import render_comment, render_text
from triage_bot.core.report import FlakyProof, FlakyVerdict, Occurrence, Report

__all__ = ["browser"]  # a fixture

OTHER_RUN = RUN_URL.rsplit("/", 1)[0] + "/39000000"


def proofs(count: int) -> tuple[FlakyProof, ...]:
    """`count` re-runs that passed, each in another pull request."""
    return tuple(
        FlakyProof(
            "re-run",
            Occurrence(
                f"{OTHER_RUN}{n}/job/1{n}", f"{n}abcdef0123456789", 39000000 + n, 1, 2600 + n
            ),
            Occurrence(
                f"{OTHER_RUN}{n}/job/2{n}", f"{n}abcdef0123456789", 39000000 + n, 2, 2600 + n
            ),
        )
        for n in range(count)
    )


def with_flaky_second(report: Report) -> Report:
    """The seed's report with its second new failure judged likely flaky, on 3 proofs."""
    new = [group for group in report.groups if group.base is None]
    why = "failed, then passed on a re-run of the same commit"
    new[1].flaky = FlakyVerdict(True, why, proofs(3))
    for group in report.groups:
        if group is not new[1]:
            group.flaky = FlakyVerdict(False, "never passed again without a code change")
    return report


def test_a_likely_flaky_failure_fits_the_first_screen_counted_apart(
    browser: Any, tmp_path: Path
) -> None:
    markdown = render_comment(with_flaky_second(seed_report()))
    boxes = laid_out(browser, markdown, tmp_path / "first-screen-flaky.png")
    assert_on_first_screen(boxes)
    assert boxes["headline_text"].startswith(
        "❌ 1 new failure, 1 likely flaky · 1 also failing on main"
    )
    statuses = [row.split("\t")[0] for row in boxes["row_texts"]]
    assert statuses == ["new", "likely flaky", "also on main"]


def test_the_flaky_details_link_every_proof(browser: Any, tmp_path: Path) -> None:
    markdown = render_comment(with_flaky_second(seed_report()))
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        page.set_content(comment_html(markdown))
        details = page.locator("details", has_text="(likely flaky)")
        assert details.count() == 1
        assert details.first.get_attribute("open") is None  # the new failure's stays open
        details.first.locator("summary").click()
        details.first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "flaky-details.png"), full_page=True)
        links = details.first.locator("li a")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        texts = [links.nth(i).inner_text() for i in range(links.count())]
    finally:
        page.close()
    expected = [url for proof in proofs(3) for url in (proof.failed.url, proof.passed.url)]
    assert hrefs == expected
    assert texts == ["failed", "passed"] * 3


def test_the_terminal_view_says_likely_flaky_with_the_proofs() -> None:
    text = render_text(with_flaky_second(seed_report()), width=200)
    assert "likely flaky: failed, then passed on a re-run of the same commit" in text
    for proof in proofs(3):
        assert f"{proof.failed.url} -> {proof.passed.url}" in text
    assert text.count("likely flaky:") == 1
