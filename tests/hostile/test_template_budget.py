"""A signature template that would run away (nested loops, huge strings or ranges) is
refused quickly and in little memory, as a problem `catalog lint` and the repository checks
report, not a MemoryError (issue #8)."""

from __future__ import annotations

import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest
from helpers import write_signature

from triage_bot.catalog_tools import catalog_check
from triage_bot.core.render import render_signature_text
from triage_bot.repo.repo_catalog import load_repo_signatures
from triage_bot.repo.repo_files import RepoFile

NESTED_FOR = (
    "{% for a in range(10000) %}{% for b in range(10000) %}{% for c in range(10000) %}"
    "x{% endfor %}{% endfor %}{% endfor %}"
)
RUNAWAY = {
    "nested for": NESTED_FOR,
    "nested for, no output": (
        "{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}"
    ),
    "string times 3e9": "{{ 'x'*3000000000 }}",
    "range(10**9)": "{% for i in range(10**9) %}{% endfor %}",
    "list times 1e9": "{{ [1]*10**9 }}",
    "doubling with ~": "{% set s = 'x'*60000 %}{% set s = s ~ s %}{% set s = s ~ s %}{{ s }}",
    "doubling macro": "{% macro f(s) %}{{ f(s ~ s) }}{% endmacro %}{{ f('x') }}",
    "endless macro": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "wide %-format": "{{ '%999999999d' % 1 }}",
    "wide str.format": "{{ '{:>999999999}'.format(1) }}",
    "ljust": "{{ 'x'.ljust(999999999) }}",
    "join of copies": "{{ ((('x'*100000),)*100000) | join }}",
    "replace between every character": "{% set s = 'x'*50000 %}{{ s.replace('', s) }}",
    "nested too deep": "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
}
CPU_SECONDS = 0.5
# Lint and the repository check also run the pattern's linear-time check (a few hundred ms
# of CPU under tracemalloc on a busy machine): rendering gets the bound above, they this one.
LINT_CPU_SECONDS = 2.0
PEAK_BYTES = 20_000_000


def _measured(action: Callable[[], Any]) -> tuple[Any, float, int]:
    """What `action` returned, the CPU seconds it took and the most memory it held."""
    tracemalloc.start()
    started = time.process_time()
    try:
        result = action()
    finally:
        seconds = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, seconds, peak


def _signature_yaml(fix: str) -> str:
    quoted = fix.replace("\\", "\\\\").replace('"', '\\"')
    return f"""
        id: local-widget-broke
        title: The widget broke
        category: build
        priority: 50
        keywords: ["widget broke"]
        pattern: "widget broke: (?P<reason>[a-z ]+)"
        summary: "the widget broke ({{{{ reason | code }}}})"
        fix: "The widget broke: {quoted}"
        tests:
          match:
            - line: "widget broke: out of gears"
              captures: {{reason: out of gears}}
          no_match: ["the widget is fine"]
    """


@pytest.mark.parametrize("template", RUNAWAY.values(), ids=RUNAWAY.keys())
def test_rendering_a_runaway_template_is_a_template_error(template: str) -> None:
    def render() -> str:
        with pytest.raises(jinja2.TemplateError) as raised:
            render_signature_text(template, {"reason": "x"})
        return str(raised.value)

    message, seconds, peak = _measured(render)
    assert message
    assert seconds < CPU_SECONDS and peak < PEAK_BYTES, (seconds, peak)


@pytest.mark.parametrize("template", RUNAWAY.values(), ids=RUNAWAY.keys())
def test_catalog_lint_reports_a_runaway_template(tmp_path: Path, template: str) -> None:
    write_signature(tmp_path, "local-widget-broke", _signature_yaml(template))
    (_signatures, problems), seconds, peak = _measured(lambda: catalog_check.lint([tmp_path]))
    assert any("fix does not render" in str(p) for p in problems), problems
    assert seconds < LINT_CPU_SECONDS and peak < PEAK_BYTES, (seconds, peak)


@pytest.mark.parametrize("template", RUNAWAY.values(), ids=RUNAWAY.keys())
def test_a_repository_signature_with_a_runaway_template_is_refused(template: str) -> None:
    path = ".github/triage-bot/patterns/local-widget-broke.yml"
    text = _signature_yaml(template).replace("\n        ", "\n").lstrip()
    found, seconds, peak = _measured(
        lambda: load_repo_signatures("o/r", [RepoFile(path, "0" * 40, text)])
    )
    assert found.signatures == ()
    assert [p for p in found.problems if p.startswith(f"{path}:8: fix ")], found.problems
    assert seconds < LINT_CPU_SECONDS and peak < PEAK_BYTES, (seconds, peak)


def test_catalog_lint_on_the_command_line_exits_1_with_the_problem(tmp_path: Path) -> None:
    for ident, template in [("nested-for", NESTED_FOR), ("big-string", "{{ 'x'*3000000000 }}")]:
        body = _signature_yaml(template).replace("local-widget-broke", f"local-{ident}")
        write_signature(tmp_path, f"local-{ident}", body)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "triage_bot", "catalog", "lint", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "local-nested-for.yml:8: fix does not render" in done.stdout
    assert "steps" in done.stdout and "'*' would make over 100,000" in done.stdout
    assert "MemoryError" not in done.stdout + done.stderr
    assert time.monotonic() - started < 30  # the interpreter's start included


def test_an_ordinary_template_still_renders_within_the_budget() -> None:
    template = (
        "{% set parts = reason.split(' ') %}{{ parts[0] | upper }} {{ reason | replace(' ', '-') }}"
        "{% for word in parts %} {{ loop.index }}:{{ word | code }}{% endfor %}"
    )
    assert render_signature_text(template, {"reason": "out of gears"}) == (
        "OUT out-of-gears 1:`out` 2:`of` 3:`gears`"
    )
