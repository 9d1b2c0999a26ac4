"""Making untrusted log text safe to show: secrets, mentions, markdown and code fences.

Everything that comes from a log (evidence lines, captures) passes through `redact` before it
is stored in a report, and through one of the markdown helpers when it is rendered.
"""

from __future__ import annotations

import re

# Redaction lives in triage_bot.redact; re-exported here for the callers that import it so.
from triage_bot.redact import REDACTED as REDACTED
from triage_bot.redact import redact as redact

# A word joiner after '@' keeps the text readable and stops GitHub from turning it into a
# mention or a team ping.
_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
# Only what can start formatting, a link, a table cell or a heading mid-line.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]#!|~])")


def neutralise_mentions(text: str) -> str:
    return _MENTION.sub("@\u2060", text)


def escape_text(text: str) -> str:
    """Log text as inert markdown prose: no HTML, no formatting, no mentions, one line."""
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return neutralise_mentions(_MARKDOWN_SPECIAL.sub(r"\\\1", text))


def escape_html(text: str) -> str:
    """Log text inside an HTML element (where GitHub renders no markdown)."""
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return neutralise_mentions(text.replace('"', "&quot;"))


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def code_span(text: str) -> str:
    """Inline code that no backtick in the text can close early."""
    text = " ".join(text.split())
    fence = "`" * (_longest_run(text, "`") + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def code_block(text: str, info: str = "text") -> str:
    """A fenced block longer than any run of backticks or tildes in the text."""
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    # GitHub does not notify mentions inside code blocks, so the evidence stays verbatim.
    return f"{fence}{info}\n{text}\n{fence}"


def in_code(text: str) -> str:
    """A value placed inside a code block a template wrote: one line, no fence of its own."""
    text = " ".join(text.split())
    return text.replace("```", "'''")
