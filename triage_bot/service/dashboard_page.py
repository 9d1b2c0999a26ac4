"""The dashboard's pages (served at /dashboard by server.py, which checks who may read what):
one repository's failed jobs per day by category, its coverage per week, its top signatures,
its likely-flaky keys with the occurrences that prove them, and its unexplained jobs
clustered by log template; and the list of the repositories a user may read.

The figures come from store/dashboard_data.py (aggregated in SQL). The page is jinja2 with
autoescape (templates/dashboard/), its charts SVG drawn here by pygal and put inline: no
script (pygal's own is removed from each chart), no remote asset, no CDN, so the page holds
under a Content-Security-Policy of `default-src 'none'; style-src 'unsafe-inline'`. Every
string from the database is hostile (log lines, keys, signature ids): autoescape escapes it in
the HTML, and pygal's XML writer in the SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote

import jinja2
import pygal
import sqlalchemy
from markupsafe import Markup
from pygal.style import Style

from triage_bot.core.catalog import data_dir, load_catalog
from triage_bot.store import dashboard_data
from triage_bot.store.dashboard_data import DashboardData
from triage_bot.store.job_outcomes import JobOutcome

INDEX_DAYS = 30
GITHUB = "https://github.com"
# Explained, likely flaky, unexplained: green, amber, red (GitHub's palette).
_COLOURS = ("#2da44e", "#d4a72c", "#cf222e")
_STYLE = Style(
    background="transparent",
    plot_background="#ffffff",
    foreground="#1f2328",
    foreground_strong="#1f2328",
    foreground_subtle="#59636e",
    font_family="system-ui, sans-serif",
    colors=_COLOURS,
    label_font_size=11,
    major_label_font_size=11,
    legend_font_size=12,
    title_font_size=14,
    no_data_font_size=16,
)
_SIGNATURE_LABEL_CHARS = 48


@dataclass(frozen=True)
class _IndexRow:
    name: str
    href: str
    failed: int


def render_dashboard(engine: sqlalchemy.Engine, repo: str, now: datetime, *, days: int = 30) -> str:
    """The whole HTML page of one repository's dashboard (the caller has already checked the
    user may read `repo`). Reads only `repo`'s rows."""
    never, categories = _catalog_facts()
    data = dashboard_data.dashboard_data(engine, repo, now, days=days, never=never)
    weeks = dashboard_data.weekly(data.days)
    charts = {
        "per_day": _per_day_chart(data),
        "coverage": _coverage_chart(weeks),
        "signatures": _signatures_chart(data),
    }
    return _template("repository.html.j2").render(
        data=data,
        weeks=weeks,
        charts=charts,
        categories=categories,
        percent=_percent,
        link=_job_link,
        url_link=_url_link,
        occurrence=_occurrence,
    )


def render_index(engine: sqlalchemy.Engine, repos: Sequence[str], now: datetime) -> str:
    """The page listing the repositories the user may read (`repos`, already checked), each
    with its failed-job count in the last 30 days and a link to /dashboard/{owner}/{name}."""
    counts = dashboard_data.failed_counts(engine, repos, now, INDEX_DAYS)
    rows = [_IndexRow(repo, dashboard_path(repo), counts.get(repo, 0)) for repo in sorted(repos)]
    return _template("index.html.j2").render(repos=rows, days=INDEX_DAYS)


def dashboard_path(repo: str) -> str:
    """/dashboard/{owner}/{name}, each part quoted (a name is GitHub's, but the path is ours)."""
    owner, _, name = repo.partition("/")
    return f"/dashboard/{quote(owner, safe='')}/{quote(name, safe='')}"


def warm_up() -> None:
    """Read now what the first page would (the catalog: 0.1 s from its disk cache, about 1 s
    without), so that a server that calls this at start serves its first page as fast."""
    _catalog_facts()
    _environment()


@cache
def _environment() -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(data_dir("templates") / "dashboard"))
    return jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)


def _template(name: str) -> jinja2.Template:
    return _environment().get_template(name)


@cache
def _catalog_facts() -> tuple[frozenset[str], dict[str, str]]:
    """The built-in catalog's `flaky: never` signatures and each signature's category, read
    once a process (the catalog takes some 85 ms to load even from its disk cache)."""
    signatures = load_catalog().signatures
    never = frozenset(s.id for s in signatures if s.never_flaky)
    return never, {s.id: s.category for s in signatures}


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def _job_url(job: JobOutcome) -> str:
    """The job on GitHub: the URL recorded with it (GitHub's own, so an Enterprise host too),
    else GitHub's address of that job of that run."""
    if job.url and job.url.startswith("https://"):
        return job.url
    return f"{GITHUB}/{job.repo}/actions/runs/{job.run_id}/job/{job.job_id}"


def _job_link(job: JobOutcome, text: str) -> Markup:
    return Markup('<a href="{}">{}</a>').format(_job_url(job), text)


def _url_link(url: str | None, text: str) -> Markup:
    """A link only to an https URL; anything else is left out (a recorded URL is hostile)."""
    if not url or not url.startswith("https://"):
        return Markup("")
    return Markup('<a href="{}">{}</a>').format(url, text)


def _occurrence(job: JobOutcome) -> str:
    where = f"pull request #{job.pr_number}" if job.pr_number is not None else job.branch or "?"
    return (
        f"(run {job.run_id} attempt {job.run_attempt}, {where}, commit {job.commit_sha[:7]}, "
        f"{job.finished_at:%Y-%m-%d %H:%M})"
    )


def _config(**options: Any) -> pygal.Config:
    """A chart that is SVG only: no <script> (pygal links its tooltips' JS from a CDN and
    inlines its config as JS by default), no XML declaration (it goes inline in HTML), no
    comments (pygal's name its home page's URLs)."""
    config = pygal.Config()
    config.js = []
    config.disable_xml_declaration = True
    config.style = _STYLE
    config.width, config.height = 900, 320
    config.explicit_size = False
    config.legend_at_bottom = True
    config.print_values = False
    for name, value in options.items():
        setattr(config, name, value)
    return config


def _inert(root: Any) -> Any:
    """A pygal XML filter: every <script> and every comment out of the SVG tree."""
    for parent in list(root.iter()):
        for child in list(parent):
            tag = child.tag
            if not isinstance(tag, str) or tag.rsplit("}", 1)[-1].lower() == "script":
                parent.remove(child)
    return root


def _svg(chart: pygal.graph.graph.Graph) -> Markup:
    """The chart as inline SVG, without script or comment. Markup: pygal's XML writer escaped
    every label and title."""
    chart.add_xml_filter(_inert)
    return Markup(chart.render(is_unicode=True))


def _counts_axis(highest: int) -> list[int]:
    """Whole numbers from 0 past `highest`, some 8 of them: counts of jobs have no 0.2."""
    step = max(1, math.ceil(highest / 8))
    return list(range(0, highest + step + 1, step))


def _per_day_chart(data: DashboardData) -> Markup:
    chart = pygal.StackedBar(
        _config(
            y_labels=_counts_axis(max((day.failed for day in data.days), default=0)),
            x_label_rotation=0,
            show_minor_x_labels=False,
            x_labels_major_every=max(len(data.days) // 10, 1),
            truncate_label=-1,
            y_title="failed jobs",
        )
    )
    chart.x_labels = [day.day.strftime("%m-%d") for day in data.days]
    chart.add("explained", [day.explained for day in data.days])
    chart.add("likely flaky", [day.likely_flaky for day in data.days])
    chart.add("unexplained", [day.unexplained for day in data.days])
    return _svg(chart)


def _coverage_chart(weeks: Sequence[dashboard_data.WeekCoverage]) -> Markup:
    chart = pygal.Line(
        _config(
            range=(0, 100),
            y_title="% explained",
            show_legend=False,
            height=260,
            no_data_text="No failed job in these weeks",
        )
    )
    chart.x_labels = [week.first.strftime("%m-%d") for week in weeks]
    shares = [None if week.share is None else round(week.share * 100, 1) for week in weeks]
    chart.add("coverage", shares)
    return _svg(chart)


def _signatures_chart(data: DashboardData) -> Markup:
    chart = pygal.HorizontalBar(
        _config(
            show_legend=False,
            truncate_label=_SIGNATURE_LABEL_CHARS,
            y_labels=_counts_axis(max((count for _, count in data.signatures), default=0)),
            height=max(140, 28 * len(data.signatures) + 60),
        )
    )
    # The most frequent on top: pygal draws a horizontal bar chart's first label lowest.
    ranked = data.signatures[::-1]
    chart.x_labels = [name for name, _ in ranked]
    chart.add("failed jobs", [count for _, count in ranked])
    return _svg(chart)
