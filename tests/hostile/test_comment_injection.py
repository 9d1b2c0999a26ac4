"""Log text (captures, evidence, job names) cannot make the comment mention, link, reference,
show an image or raw HTML, wherever a template puts it (issue #8)."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import jinja2
import pytest
from fakegithub import FakeGitHub, NewJob
from helpers import builtin, run_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile.inert import elements_in, github_markdown, links_in, markdown_problems
from triage_bot.core.catalog import Signature
from triage_bot.core.render import render_comment, render_signature_text
from triage_bot.core.report import BaseRun, Job, build_report
from triage_bot.core.sanitize import WORD_JOINER

# The line from the issue.
REPRODUCTION = (
    "ModuleNotFoundError: No module named 'x` @org/team <img src=x onerror=alert(1)> "
    "![p](https://tracker.example.net/m.png) `y'"
)

HOSTILE_PIECES = [
    "`",
    "``",
    "```",
    "````",
    "~~~",
    "@octocat",
    "@org/team",
    "x@evil.example",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<b>bold</b>",
    "</details>",
    "</summary>",
    "<!--",
    "-->",
    "![p](https://tracker.example.net/m.png)",
    "[click](https://evil.example/a)",
    "[ref]: https://evil.example/r",
    "[ref]",
    "<https://evil.example/auto>",
    "https://evil.example/bare",
    "www.evil.example",
    "#12",
    "GH-12",
    "gh-7",
    "org/repo#12",
    "1f0e3c9a7b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f",
    "deadbeef1",
    "|",
    "| a | b |",
    "\n",
    "\n# heading\n",
    "\n- item",
    "\n> quote",
    "\n---\n",
    "\r",
    "*em* **strong** _u_ ~~s~~",
    "\\",
    "&amp; &#64;octocat",
    "$x$",
    ":tada:",
    " ",
    "'",
    '"',
]
_plain = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE_PIECES), _plain), min_size=1, max_size=8
).map("".join)
# Ordinary text: what a benign capture looks like, to tell the template's own links and text.
BENIGN = "placeholder"


def _signatures() -> list[Signature]:
    return sorted(builtin().signatures, key=lambda s: s.id)


def _captures(signature: Signature) -> dict[str, str]:
    example = signature.match_examples[0].captures if signature.match_examples else {}
    return {name: example.get(name, BENIGN) for name in signature.pattern.groupindex}


def _render(signature: Signature, captures: dict[str, str]) -> str:
    summary = render_signature_text(signature.summary, captures)
    fix = render_signature_text(signature.fix, captures)
    return f"### {summary}\n\n{fix}"


def _hostile_captures(signature: Signature, text: str) -> dict[str, str]:
    """Every capture hostile, except one a template needs to be of its pattern's form (a
    dictionary key, a number): that one keeps the example's value."""
    captures = _captures(signature)
    for name in captures:
        trial = {**captures, name: text}
        try:
            _render(signature, trial)
        except jinja2.TemplateError:
            continue
        captures = trial
    return captures


@pytest.mark.parametrize("signature", _signatures(), ids=lambda s: s.id)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_every_signature_keeps_hostile_captures_inert(signature: Signature, text: str) -> None:
    benign = _render(signature, _captures(signature))
    hostile = _render(signature, _hostile_captures(signature, text))
    template_own = set(markdown_problems(benign, links_in(benign)))
    problems = set(markdown_problems(hostile, links_in(benign))) - template_own
    assert not problems, hostile


# A template that puts a capture in every place markdown has: prose, emphasis, a heading,
# link text, a list, a quote, a table (cells and code in cells), code spans it wrote with one
# and with two backticks, one across a line break, fences (backticks, tildes, in a list item,
# the info string), an HTML block, an inline tag, a line's start.
EVERY_PLACE = """\
## {{ v }} heading {{ v }}

{{ v }}{{ v }} prose *{{ v }}* **{{ v }}** [{{ v }}](https://example.com/docs)
E{{ v }}#{{ v }}@{{ v }}

- {{ v }}
- item `{{ v }}` and ``{{ v }}`` and `x {{ v }}
{{ v }} y`
  1. {{ v }}

> {{ v }} quoted `{{ v }}`

| a | b |
|---|---|
| {{ v }} | `{{ v }}` |

```{{ v }}
{{ v }}
```

~~~
{{ v }}
~~~

- step:

    ```sh
    run {{ v }}
    ```

<details><summary>{{ v }}</summary>

{{ v }}

</details>

<sub>{{ v }} `{{ v }}`</sub>
{{ v }}
"""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_a_capture_is_inert_in_every_place_markdown_has(text: str) -> None:
    benign = render_signature_text(EVERY_PLACE, {"v": BENIGN})
    hostile = render_signature_text(EVERY_PLACE, {"v": text})
    assert not markdown_problems(hostile, links_in(benign)), hostile
    # Nor does it add, end or open any element (a heading, a list, a code span's end); with
    # a letter either side, so that an empty value cannot leave `**` empty.
    wrapped = render_signature_text(EVERY_PLACE, {"v": f"a{text}z"})
    assert elements_in(wrapped) == elements_in(benign), wrapped


def _hostile_report(text: str) -> str:
    line = text.replace("'", "").replace("\n", " ").replace("\r", " ")
    matched = run_log(f"ModuleNotFoundError: No module named '{line}'\n")
    matched.name = text  # a job name from a matrix
    unexplained = run_log(f"something odd\nerror: {text}\nFAILED {text}\n")
    unexplained.name = text + " (2)"
    job = Job(matched, url="https://github.com/o/r/actions/runs/1/job/2")
    base = BaseRun(
        branch=text, run_url="https://github.com/o/r/actions/runs/3", conclusion="failure"
    )
    report = build_report(
        [job, unexplained],
        title=text,
        url="https://github.com/o/r/actions/runs/1",
        head_sha="0123456789abcdef0123456789abcdef01234567",
        footer_notes=[text],
        base=base,
        setup_problems=[f".github/triage-bot/patterns/x.yml:3: {text}", text],
    )
    return render_comment(report)


_COMMENT_LINKS = frozenset(
    {
        "https://github.com/o/r/actions/runs/1",
        "https://github.com/o/r/actions/runs/1/job/2",
        "https://github.com/o/r/actions/runs/3",
        "https://github.com/triage-bot/triage-bot/blob/main/patterns/README.md",
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_the_whole_comment_keeps_hostile_log_text_inert(text: str) -> None:
    benign = _hostile_report(BENIGN)
    comment = _hostile_report(text)
    links = _COMMENT_LINKS | links_in(benign)
    template_own = set(markdown_problems(benign, links))
    assert not set(markdown_problems(comment, links)) - template_own, comment


def test_the_reproduction_through_the_cli_is_inert(tmp_path: Path) -> None:
    log = tmp_path / "unit-tests.log"
    log.write_text(REPRODUCTION + "\n", encoding="utf-8")
    shown = subprocess.run(
        [sys.executable, "-m", "triage_bot", "triage", str(log), "--format", "markdown"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Python module not found" in shown  # the failure is still recognised and shown
    assert markdown_problems(shown, _COMMENT_LINKS) == []
    # The text reads as the log said, in code, not turned into entities or backslashes.
    assert "@org/team <img src=x onerror=alert(1)>" in shown


def test_a_checker_that_sees_the_old_escaping_as_live() -> None:
    """The checker is not blind: the issue's line in a span the template wrote is live."""
    old = "Python could not import `x` @org/team <img src=x> ![p](https://t.example/m.png) `y`."
    problems = markdown_problems(old)
    assert any("mention" in p for p in problems)
    assert any("<img" in p for p in problems)
    assert sum("<img" in p for p in problems) == 2  # the tag and the markdown image
    links = markdown_problems("[c](https://e.example/a), https://e.example/b, www.e.example")
    assert sum("link to" in p for p in links) == 2 and any("url 'www" in p for p in links)
    assert any("reference" in p for p in markdown_problems("see org/repo#12 and GH-3"))
    assert any("sha" in p for p in markdown_problems("at 1f0e3c9a7b2d4e6"))


def test_the_reproduction_through_serve_posts_an_inert_comment(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    """`triage-bot serve` against the fake GitHub: the posted comment, rendered, is inert."""
    from test_e2e import Stack  # the e2e harness: real processes, a signed webhook

    stack = Stack(fake_github, tmp_path, "embedded")
    try:
        stack.up()
        state = stack.fake.state
        pull = state.add_pull_request(stack.repo, author="alice", head_ref="hostile")
        log = f"2026-10-21T09:12:33.1237662Z {REPRODUCTION}\n".encode()
        jobs = [NewJob("test (@org/team, #12) <img src=x>", log=log)]
        run = state.add_run(stack.repo, pull=pull, jobs=jobs)
        assert stack.send(stack.webhook(run, pull)).status_code == 202
        stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
        [body] = stack.comments(pull)
    finally:
        stack.close()
    assert "Python module not found" in body
    html = markdown_problems(body, frozenset())
    # Its only links are GitHub's own (the run, the job, the catalog's README).
    links = [p for p in html if p.startswith("link to ")]
    assert all("tracker.example.net" not in p for p in links), links
    assert [p for p in html if not p.startswith("link to ")] == []


ORDINARY = [
    "tests/test_api.py::test_get_user[py3.11]",
    "src/app/__init__.py:12: error: Name 'x' is not defined  [name-defined]",
    "C:\\a\\build\\geo.vcxproj",
    "a && b || c > d",
    "unit-tests (ubuntu-latest, 3.11)",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_reads_as_it_was(text: str) -> None:
    """Escaping shows nothing: the rendered text is the text, in prose and in code alike."""
    template = "Failed: {{ t }}. Run `pytest {{ t }}`.\n\n```sh\n{{ t }}\n```"
    html = github_markdown().render(render_signature_text(template, {"t": text}))
    shown = unescape(re.sub(r"<[^>]+>", "", html)).replace(WORD_JOINER, "")
    assert shown.strip() == f"Failed: {text}. Run pytest {text}.\n{text}"
