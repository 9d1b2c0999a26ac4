"""The comment's first screen, laid out by a browser: for the seed's pull request (examples/
pr-2664), the headline and every row of the table lie within the first 900 px of a 1000 px
wide page styled like a GitHub comment (issue #12, "Done when").

The comment is rendered to HTML with markdown-it (GitHub-flavoured: tables, raw HTML for
<details>) and laid out by headless Chromium through playwright; the elements' boxes come
from the laid-out page. A screenshot is saved in the test's tmp dir for a person to look at.
Without a browser the test is skipped here, and fails on CI (CI=true).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EXAMPLES, run_log
from markdown_it import MarkdownIt

from triage_bot.core.render import render_comment
from triage_bot.core.report import BaseRun, Job, Report, build_report

SCREEN_WIDTH, SCREEN_HEIGHT = 1000, 900
REPO_URL = "https://github.com/ROCm/ATOM"
RUN_URL = f"{REPO_URL}/actions/runs/39580104520"
BASE_URL = f"{REPO_URL}/actions/runs/39571000000"
HEAD_SHA = "5d1c0a9e7b3f2e4d6c8a0b1c2d3e4f5a6b7c8d9e"
# The test run in the seed's pull request said: "7 failures ... Pre-existing and unrelated".
ALSO_ON_MAIN = "python-unexpected-keyword-argument"
# Chromium's flags that work on this machine and on CI (no sandbox as root in a container);
# playwright starts it with a fresh profile of its own (a temporary --user-data-dir).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# GitHub's comment: the system font at 14 px, tables with cell borders, code at 85 %.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: #fff; color: #1f2328;
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
  sans-serif; }}
.comment {{ box-sizing: border-box; width: {width}px; padding: 16px; word-wrap: break-word; }}
h2 {{ font-size: 1.5em; font-weight: 600; margin: 24px 0 16px; padding-bottom: .3em;
  border-bottom: 1px solid #d1d9e0; line-height: 1.25; }}
.comment > :first-child {{ margin-top: 0; }}
p, table, pre, details, ul {{ margin: 0 0 16px; }}
table {{ border-collapse: collapse; display: block; width: max-content; max-width: 100%;
  overflow: auto; }}
th, td {{ padding: 6px 13px; border: 1px solid #d1d9e0; }}
th {{ font-weight: 600; }}
tr:nth-child(2n) {{ background: #f6f8fa; }}
code {{ font: 85% ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  padding: .2em .4em; background: #eff1f3; border-radius: 6px; }}
pre {{ padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45; background: #f6f8fa;
  border-radius: 6px; }}
pre code {{ padding: 0; background: none; font-size: 100%; }}
sub {{ font-size: 75%; }}
</style></head><body><div class="comment">{body}</div></body></html>
"""


def seed_jobs() -> list[Job]:
    """The seed's seven failed jobs, with the links GitHub would give them."""
    jobs = []
    for number, path in enumerate(sorted(EXAMPLES.glob("*.log")), start=1):
        result = run_log(path.read_bytes())
        result.name = path.stem
        job_url = f"{RUN_URL}/job/{53000000000 + number}"
        root = result.root_cause
        lines = {root.line: f"{job_url}#step:5:{root.line}"} if root else {}
        jobs.append(Job(result, url=job_url, line_urls=lines))
    return jobs


def seed_report(extra: list[Job] | None = None) -> Report:
    """The seed's run as the App reports it: compared with main's run, where the test
    failure (and only it) fails too."""
    base = BaseRun(branch="main", run_url=BASE_URL, conclusion="failure")
    report = build_report(
        [*seed_jobs(), *(extra or [])], title="CI", url=RUN_URL, head_sha=HEAD_SHA, base=base
    )
    for group in report.groups:
        group.base = base if group.signature.id == ALSO_ON_MAIN else None
    return report


def unexplained_job() -> Job:
    """A job no signature explains, as the seed's pull request had (examples/pr-2664 has
    none): the router that never came up, its best line a long one."""
    log = (
        "[atomesh] waiting for the router on port 30000\n" * 3
        + "[atomesh] router did not become ready within 600 s; last health check: timed out "
        + "after 5 s (GET /health on 10.0.0.12:30000, attempt 120 of 120)\n"
        + "##[error]Process completed with exit code 1.\n"
    )
    result = run_log(log)
    result.name = "kimi-k3-mxfp4-1p1d-tp8-dcp8-agentic-lmcache-1m-c48-router"
    return Job(result, url=f"{RUN_URL}/job/53000000099")


def comment_html(markdown: str) -> str:
    body = MarkdownIt("gfm-like", {"html": True}).render(markdown)
    return PAGE.format(width=SCREEN_WIDTH, body=body)


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def no_browser(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must lay the comment out in a browser: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        no_browser("playwright is not installed (pip install -e '.[dev]')")
    executable = chromium()
    if executable is None:
        no_browser("no chromium (scripts/test installs it: apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def laid_out(browser: Any, markdown: str, screenshot: Path) -> dict[str, Any]:
    """The boxes of the comment's heading, headline and table rows, as Chromium lays the
    page out at 1000x900; the first screen saved to `screenshot`."""
    page = browser.new_page(viewport={"width": SCREEN_WIDTH, "height": SCREEN_HEIGHT})
    try:
        page.set_content(comment_html(markdown))
        page.screenshot(path=str(screenshot))
        return {
            "heading": page.locator("h2").first.bounding_box(),
            "headline": page.locator("h2 + p").first.bounding_box(),
            "headline_text": page.locator("h2 + p").first.inner_text(),
            "table": page.locator("table").first.bounding_box(),
            "rows": [row.bounding_box() for row in page.locator("table tr").all()],
            "row_texts": [row.inner_text() for row in page.locator("table tbody tr").all()],
        }
    finally:
        page.close()


def assert_on_first_screen(boxes: dict[str, Any]) -> None:
    for what in ("heading", "headline", "table"):
        box = boxes[what]
        assert box is not None, f"no {what} on the page"
        assert box["x"] + box["width"] <= SCREEN_WIDTH, f"the {what} is wider than the screen"
    for row in boxes["rows"]:
        assert row["y"] + row["height"] <= SCREEN_HEIGHT, f"a table row ends at {row}"
    assert boxes["headline"]["y"] + boxes["headline"]["height"] <= SCREEN_HEIGHT


def test_the_seeds_failures_all_fit_the_first_screen(browser: Any, tmp_path: Path) -> None:
    boxes = laid_out(browser, render_comment(seed_report()), tmp_path / "first-screen.png")
    assert_on_first_screen(boxes)
    # The headline alone tells whether anything new broke, and against what.
    assert boxes["headline_text"].startswith("❌ 2 new failures · 1 also failing on main")
    rows = boxes["row_texts"]
    assert len(rows) == 3
    assert [row.split("\t")[0] for row in rows] == ["new", "new", "also on main"]
    assert "5 jobs: kimi-k3-…-agentic-1m-c{1,16,4,48,64}" in rows[0]
    assert "7 failing tests" in rows[2]


def test_an_unexplained_job_is_a_row_on_the_first_screen_too(browser: Any, tmp_path: Path) -> None:
    report = seed_report([unexplained_job()])
    boxes = laid_out(browser, render_comment(report), tmp_path / "first-screen-unexplained.png")
    assert_on_first_screen(boxes)
    assert boxes["headline_text"].startswith("❌ 2 new failures, 1 job unexplained")
    last = boxes["row_texts"][-1]
    assert last.startswith("unexplained") and "router did not become ready" in last
