"""`triage-bot report --format html`: one self-contained page (no script, no remote asset).

Every value is escaped by jinja2's autoescape: log lines, keys and signature ids are hostile
(a line is whatever a job printed). A link is made only of an https URL; anything else is
shown as text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jinja2
from markupsafe import Markup

if TYPE_CHECKING:
    from triage_bot.cli.cli_report import CoverageReport

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>triage-bot coverage: {{ scope }}</title>
<style>body{font-family:sans-serif;margin:2em}code,pre{background:#f4f4f4}
td,th{padding:2px 8px;text-align:left;vertical-align:top}pre{white-space:pre-wrap}</style>
</head><body>
<h1>Coverage of {{ scope }}</h1>
<p>Since {{ report.since.strftime("%Y-%m-%d %H:%M") }} UTC: {{ report.failed }} failed jobs,
{{ report.explained }} explained by a signature ({{ "%.0f" % (report.coverage * 100) }}%).</p>
<h2>Most frequent signatures</h2>
<table><tr><th>jobs</th><th>signature</th></tr>
{% for name, count in report.signatures %}
<tr><td>{{ count }}</td><td><code>{{ name }}</code></td></tr>
{% endfor %}</table>
<h2>Likely flaky</h2>
<ul>{% for key in report.flaky %}<li><code>{{ key.repo }}</code> <code>{{ key.key }}</code>:
{{ key.why }}{% for url in key.proofs %} {{ link(url, "proof " ~ loop.index) }}{% endfor %}</li>
{% endfor %}</ul>
<h2>Unexplained jobs by log template</h2>
<table><tr><th>jobs</th><th>template, example and draft</th></tr>
{% for cluster in report.clusters %}<tr><td>{{ cluster.count }}</td><td>
<code>{{ cluster.template }}</code><br>e.g. <code>{{ cluster.example }}</code>
{{ link(cluster.example_url, "job") }}
<pre>{{ cluster.command or cluster.why_not }}</pre></td></tr>
{% endfor %}</table>
</body></html>
"""


def _link(url: str | None, text: str) -> str | Markup:
    if not url or not url.startswith("https://"):
        return ""
    return Markup('<a href="{}">{}</a>').format(url, text)


def render_html(report: CoverageReport) -> str:
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    page = environment.from_string(_PAGE)
    return page.render(report=report, scope=report.repo or "all repositories", link=_link)
