"""The dashboard's pages (service/dashboard_page.py over store/dashboard_data.py) on seeded
histories, on SQLite and PostgreSQL: the figures agree with what was recorded (and the
likely-flaky keys with the coverage report's judgement), a repository's page holds nothing of
another's, hostile strings from the database are inert in the HTML and in the SVG, and the
charts hold no script and no remote URL."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from services import db_url

from triage_bot.service.dashboard_page import render_dashboard, render_index
from triage_bot.store import coverage
from triage_bot.store.dashboard_data import dashboard_data, first_day
from triage_bot.store.flaky import judge_keys
from triage_bot.store.job_outcomes import JobOutcome, JobOutcomes, line_key, signature_key
from triage_bot.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.report import seed  # noqa: E402

__all__ = ["db_url"]  # a fixture

NOW = datetime(2026, 12, 4, 10, 30, tzinfo=UTC)
DAYS = 30
HOSTILE = "</svg><script>alert(1)</script>\"onload=alert(2) x='"
SVG_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


class Page(HTMLParser):
    """A page's elements and attributes as a browser's tokenizer sees them, and its tables'
    cells by the table's id."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.text: dict[str, str] = {}  # an element with an id: its text
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._with_id: list[tuple[str, str]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "table":
            self._table = attributes.get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []
        if attributes.get("id") and tag != "table":
            self._with_id.append((tag, attributes["id"] or ""))
            self.text[attributes["id"] or ""] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None
        if self._with_id and self._with_id[-1][0] == tag:
            self._with_id.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        for _, ident in self._with_id:
            self.text[ident] += data

    def number(self, ident: str) -> int:
        return int(self.text[ident].strip())

    def rows(self, table: str) -> list[list[str]]:
        return self.tables[table][1:]  # without the header

    def hrefs(self) -> list[str]:
        return [attrs["href"] or "" for tag, attrs in self.tags if "href" in attrs]


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store(db_url)
    try:
        yield opened
    finally:
        opened.close()


def job(job_id: int, conclusion: str, **changes: Any) -> JobOutcome:
    base = JobOutcome(
        repo="o/r", run_id=100, run_attempt=1, job_id=job_id, workflow="CI", workflow_id=7,
        job_name="test", job_full_name="test (3.11)", conclusion=conclusion, commit_sha="c1",
        finished_at=NOW - timedelta(hours=1), branch="feature", pr_number=12,
        url=f"https://github.com/o/r/actions/runs/100/job/{job_id}",
    )  # fmt: skip
    return replace(base, **changes)


def in_window(outcome: JobOutcome) -> bool:
    return outcome.finished_at >= first_day(NOW, DAYS)


def test_the_page_shows_the_figures_of_the_recorded_history(store: Store) -> None:
    outcomes = seed(store, 3000, now=NOW)
    repo = "acme/api"
    failed = [o for o in outcomes if o.repo == repo and o.failed and in_window(o)]
    explained = [o for o in failed if (o.failure_key or "").startswith("sig:")]
    # The coverage report's judgement of the same jobs is the reference for likely flaky.
    jobs = coverage.failed_jobs(store.engine, NOW - timedelta(days=DAYS + 1), repo)
    verdicts = coverage.flaky_verdicts(JobOutcomes(store.engine), jobs, now=NOW)
    flaky_keys = {verdict.key for verdict in verdicts[repo]}
    assert flaky_keys, "the seed has failures that passed on a re-run"
    flaky = [o for o in failed if o.failure_key in flaky_keys]

    page = Page(render_dashboard(store.engine, repo, NOW, days=DAYS))

    assert page.number("failed") == len(failed)
    assert page.number("explained") == len(explained)
    assert page.number("likely-flaky") == len(flaky)
    assert page.number("unexplained") == len(failed) - len(explained)
    per_day = {row[0]: [int(cell) for cell in row[1:]] for row in page.rows("per-day")}
    assert len(per_day) == DAYS
    for day, (explained_n, flaky_n, unexplained_n, failed_n) in per_day.items():
        of_day = [o for o in failed if o.finished_at.date().isoformat() == day]
        assert failed_n == len(of_day) == explained_n + flaky_n + unexplained_n
        assert flaky_n == sum(o.failure_key in flaky_keys for o in of_day)
    expected = Counter(o.signature for o in explained).most_common(10)
    shown = [(row[0], int(row[2])) for row in page.rows("signatures")]
    assert sorted(shown, key=lambda s: (-s[1], s[0])) == shown
    assert Counter(dict(shown)) == Counter(dict(expected))
    assert {row[0] for row in page.rows("flaky")} == flaky_keys


def test_flaky_keys_link_the_occurrences_that_prove_them(store: Store) -> None:
    key = signature_key("python-pytest-failed", '["tests/test_io.py::test_read"]')
    failed = job(1, "failure", signature="python-pytest-failed", failure_key=key,
                 captures={"test": "tests/test_io.py::test_read"})  # fmt: skip
    # Recorded without its URL: the link is GitHub's address of the job, as the comment's.
    passed = job(2, "success", run_attempt=2, finished_at=NOW - timedelta(minutes=30), url=None)
    generic = line_key("Error: Process completed with exit code <n>.")
    store.outcomes.record([
        failed, passed,
        job(3, "failure", run_id=200, commit_sha="c2", failure_key=generic),
        job(4, "success", run_id=200, commit_sha="c2", run_attempt=2,
            finished_at=NOW - timedelta(minutes=30)),
    ])  # fmt: skip
    page = Page(render_dashboard(store.engine, "o/r", NOW))
    assert [row[:2] for row in page.rows("flaky")] == [[key, "1"]]
    assert failed.url in page.hrefs()
    assert "https://github.com/o/r/actions/runs/100/job/2" in page.hrefs()
    assert page.number("likely-flaky") == 1
    assert page.number("unexplained") == 1  # the line passed on re-run too: never flaky


def test_days_are_utc_days_on_either_database(store: Store) -> None:
    midnight = datetime.combine(NOW.date(), datetime.min.time(), UTC)
    store.outcomes.record([
        job(1, "failure", failure_key=line_key("late"),
            finished_at=midnight - timedelta(minutes=5)),
        job(2, "failure", failure_key=line_key("early"),
            finished_at=midnight + timedelta(minutes=5)),
        job(3, "failure", failure_key=line_key("early"), run_id=101,
            finished_at=midnight + timedelta(minutes=6)),
        job(4, "success", run_id=101, finished_at=midnight + timedelta(minutes=7)),
        # Before the first day shown, and a job of another repository: neither counts.
        job(5, "failure", finished_at=first_day(NOW, 7) - timedelta(seconds=1)),
        job(6, "failure", repo="o/other"),
    ])  # fmt: skip
    data = dashboard_data(store.engine, "o/r", NOW, days=7)
    failed = {day.day: day.failed for day in data.days}
    assert len(failed) == 7 and min(failed) == first_day(NOW, 7).date()
    assert failed[NOW.date()] == 2
    assert failed[NOW.date() - timedelta(days=1)] == 1
    assert data.failed == 3 and data.with_line == 3


def test_a_repositorys_page_never_shows_another_repositorys_rows(store: Store) -> None:
    def history(repo: str, word: str) -> list[JobOutcome]:
        run = 300 if word == "alpha" else 400
        return [
            job(run + 1, "failure", repo=repo, run_id=run, signature=f"sig-{word}",
                failure_key=signature_key(f"sig-{word}", f'["test_{word}"]'),
                captures={"test": f"test_{word}"}, branch=f"branch-{word}",
                url=f"https://github.com/{repo}/actions/runs/{run}/job/{run + 1}"),
            job(run + 2, "success", repo=repo, run_id=run, run_attempt=2,
                finished_at=NOW - timedelta(minutes=20), branch=f"branch-{word}",
                url=f"https://github.com/{repo}/actions/runs/{run}/job/{run + 2}"),
            job(run + 3, "failure", repo=repo, run_id=run + 5, commit_sha=f"c-{word}",
                failure_key=line_key(f"{word}: connection refused on port 5432"),
                url=f"https://github.com/{repo}/actions/runs/{run + 5}/job/{run + 3}"),
        ]  # fmt: skip

    store.outcomes.record(history("o/mine", "alpha") + history("o/theirs", "omega"))
    mine = render_dashboard(store.engine, "o/mine", NOW)
    theirs = render_dashboard(store.engine, "o/theirs", NOW)
    assert "alpha" in mine and "alpha" not in theirs
    assert "omega" in theirs and "omega" not in mine
    assert "o/theirs" not in mine and "o/mine" not in theirs
    assert Page(mine).number("failed") == 2
    index = render_index(store.engine, ["o/mine"], NOW)
    assert "o/theirs" not in index
    assert Page(index).rows("") == [["o/mine", "2"]]


def test_the_index_lists_each_repository_with_its_failed_jobs(store: Store) -> None:
    store.outcomes.record([
        job(1, "failure", repo="o/a"),
        job(2, "failure", repo="o/a", finished_at=NOW - timedelta(days=31)),  # too old
        job(3, "failure", repo="o/b"),
        job(4, "success", repo="o/b"),
        job(5, "failure", repo="o/c"),  # not asked for
    ])  # fmt: skip
    page = Page(render_index(store.engine, ["o/b", "o/a", "o/quiet"], NOW))
    assert page.rows("") == [["o/a", "1"], ["o/b", "1"], ["o/quiet", "0"]]
    assert [h for h in page.hrefs() if h.startswith("/dashboard/o/")] == [
        "/dashboard/o/a", "/dashboard/o/b", "/dashboard/o/quiet"
    ]  # fmt: skip


def test_hostile_strings_are_inert_in_the_html_and_in_the_svg(store: Store) -> None:
    key = signature_key(HOSTILE, f'["{HOSTILE}"]')
    store.outcomes.record([
        job(1, "failure", signature=HOSTILE, failure_key=key, captures={"test": HOSTILE},
            branch=HOSTILE, url=f"javascript:alert(3)//{HOSTILE}"),
        job(2, "success", run_attempt=2, branch=HOSTILE, finished_at=NOW - timedelta(minutes=5)),
        job(3, "failure", run_id=101, failure_key=line_key(HOSTILE), url=f'https://x/"{HOSTILE}'),
    ])  # fmt: skip
    html = render_dashboard(store.engine, "o/r", NOW)
    page = Page(html)
    assert page.number("likely-flaky") == 1  # the hostile key did reach the page
    assert "<script" not in html.lower()
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags
    assert tags.count("svg") == 3  # each chart opened once: none closed early by a label
    for tag, attributes in page.tags:
        assert not [name for name in attributes if name.startswith("on")], (tag, attributes)
        assert not any("javascript:" in (value or "") for value in attributes.values())
    # The job recorded with a javascript: URL is linked by its GitHub address instead.
    assert "https://github.com/o/r/actions/runs/100/job/1" in page.hrefs()
    assert all(h.startswith(("https://", "/dashboard")) for h in page.hrefs())
    # The text shows as it was recorded, escaped.
    assert html.count("&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;") >= 3
    index = render_index(store.engine, [HOSTILE], NOW)
    assert "<script" not in index.lower()


def test_charts_hold_no_script_and_no_remote_url(store: Store) -> None:
    seed(store, 600, now=NOW)
    html = render_dashboard(store.engine, "acme/api", NOW)
    charts = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert len(charts) == 3
    for chart in charts:
        assert "<script" not in chart.lower() and "<!--" not in chart
        assert "href" not in chart  # no link and no remote asset
        urls = set(re.findall(r"""[a-z][a-z0-9+.-]*://[^\s"'<>)]*""", chart, flags=re.I))
        assert urls <= SVG_NAMESPACES, urls
        assert "<rect" in chart  # a chart was drawn, not an empty box


def test_clustering_takes_the_newest_jobs_and_the_page_says_how_many(store: Store) -> None:
    lines = [
        job(n, "failure", run_id=500 + n, failure_key=line_key(f"Segmentation fault in worker {n}"),
            finished_at=NOW - timedelta(hours=n))
        for n in range(1, 13)
    ]  # fmt: skip
    store.outcomes.record(lines)
    data = dashboard_data(store.engine, "o/r", NOW, cluster_limit=5)
    assert (data.clustered, data.with_line) == (5, 12)
    assert [cluster.count for cluster in data.clusters] == [5]
    assert data.clusters[0].example == "Segmentation fault in worker 1"  # the newest
    page = render_dashboard(store.engine, "o/r", NOW)
    assert "The newest 12 of the 12 unexplained jobs" in " ".join(page.split())


def test_flaky_verdicts_on_the_same_tree_agree_with_the_reports(store: Store) -> None:
    """A re-push (another commit, the same tree) proves a key flaky: the dashboard's lean
    read gives the verdicts and proofs of flaky.judge_keys, whether each key is judged alone
    (the dashboard) or all together (the report): the history reaches passes on the same
    tree, not only at the commits where the key failed (the second key's case)."""

    def failure(job_id: int, key: str, **changes: Any) -> JobOutcome:
        test = key.split('"')[1]
        return job(job_id, "failure", signature="python-pytest-failed", failure_key=key,
                   captures={"test": test}, **changes)  # fmt: skip

    repushed = signature_key("python-pytest-failed", '["tests/test_a.py::test_repushed"]')
    elsewhere = signature_key("python-pytest-failed", '["tests/test_b.py::test_elsewhere"]')
    hour = timedelta(hours=1)
    history = []
    for pr, base in ((21, 10), (22, 20)):
        first, second = NOW - (base + 2) * hour, NOW - base * hour
        common = {"pr_number": pr, "tree_sha": f"tree-{pr}"}
        history += [
            # The key failed at the first commit in `test`; at the re-push, in `lint`, while
            # `test` passed there: a pass of the same job on the same tree.
            failure(pr * 10 + 1, repushed, run_id=pr * 10, commit_sha=f"a{pr}",
                    finished_at=first, **common),
            failure(pr * 10 + 2, repushed, run_id=pr * 10 + 1, commit_sha=f"b{pr}",
                    job_full_name="lint", finished_at=second, **common),
            job(pr * 10 + 3, "success", run_id=pr * 10 + 1, commit_sha=f"b{pr}",
                finished_at=second, **common),
            # This key did not fail at the re-push: only the tree leads to that pass.
            failure(pr * 10 + 4, elsewhere, run_id=pr * 10 + 2, commit_sha=f"c{pr}",
                    finished_at=first, **common),
            job(pr * 10 + 5, "success", run_id=pr * 10 + 3, commit_sha=f"d{pr}",
                finished_at=second, **common),
        ]  # fmt: skip
    store.outcomes.record(history)
    outcomes = JobOutcomes(store.engine)
    keys = (repushed, elsewhere)
    alone = [judge_keys(outcomes, "o/r", {key}, now=NOW)[key] for key in keys]
    together = judge_keys(outcomes, "o/r", set(keys), now=NOW)
    assert alone == [together[key] for key in keys]
    reference = [verdict for verdict in alone if verdict.likely_flaky]
    data = dashboard_data(store.engine, "o/r", NOW)
    assert sorted(verdict.key for verdict in reference) == sorted(keys)
    assert sorted(flaky.key for flaky in data.flaky) == sorted(keys)
    for verdict in reference:
        flaky = next(f for f in data.flaky if f.key == verdict.key)
        shown = [(f.job_id, p.job_id) for f, p in flaky.proofs]
        assert shown == [(p.failed.job_id, p.passed.job_id) for p in verdict.proofs]
        assert all(p.passed.commit_sha != p.failed.commit_sha for p in verdict.proofs)
    assert data.likely_flaky == 6  # both keys' failed jobs, both pull requests


def test_a_repository_without_failures_has_a_page_of_zeros(store: Store) -> None:
    store.outcomes.record([job(1, "success")])
    page = Page(render_dashboard(store.engine, "o/r", NOW, days=1))
    assert [page.number(i) for i in ("failed", "explained", "likely-flaky", "unexplained")] == [
        0, 0, 0, 0
    ]  # fmt: skip
    assert page.text["coverage"] == "-"  # no share of nothing
    assert page.rows("per-day") == [[NOW.date().isoformat(), "0", "0", "0", "0"]]
