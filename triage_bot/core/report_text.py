"""What a failure says in words, shared by the JSON and the terminal view so that they say
what the comment says: the signature's summary and fix rendered with the captures (markdown,
through render.render_signature_text, as the comment renders them), and the distinct values of
the other captures (the failing tests), named as a reader would name them.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from triage_bot.core import sanitize
from triage_bot.core.catalog import Signature
from triage_bot.core.classify_results import Match
from triage_bot.core.render import render_signature_text

# How a capture's distinct values are called; any other name is "<name> values".
_VALUE_NAMES = {
    "test": ("failing test", "failing tests"),
    "tests": ("failing test", "failing tests"),
    "testcase": ("failing test", "failing tests"),
    "file": ("file", "files"),
    "path": ("path", "paths"),
    "module": ("module", "modules"),
    "package": ("package", "packages"),
}


@dataclass(frozen=True)
class SignatureText:
    """A signature's summary and fix as markdown; `problem` says why its template failed
    (then the summary is the title and the fix the problem, as the comment shows them)."""

    summary: str
    fix: str
    problem: str | None = None


def signature_text(signature: Signature, captures: dict[str, str]) -> SignatureText:
    # A group that did not take part in the match is empty in templates, as lint renders it.
    values = {name: "" for name in signature.pattern.groupindex} | captures
    try:
        return SignatureText(
            render_signature_text(signature.summary, values),
            render_signature_text(signature.fix, values).strip(),
        )
    except jinja2.TemplateError as exc:
        problem = f"{signature.path.name}: template error: {exc}"
        return SignatureText(
            sanitize.escape_text(signature.title), sanitize.escape_text(problem), problem
        )


def placeholder_text(signature: Signature) -> SignatureText:
    """The summary and fix with each capture shown as its placeholder, `<name>`."""
    return signature_text(signature, {name: f"<{name}>" for name in signature.pattern.groupindex})


def failing_values(match: Match) -> dict[str, list[str]]:
    """The distinct values of the captures outside `group_by` across the match's occurrences
    in its job (the failing tests of one error), a few of each, as the classifier kept them."""
    return {name: list(values) for name, values in match.variants.items() if values}


def values_label(name: str, count: int) -> str:
    """ "7 failing tests", "1 file", "3 code values"."""
    one, many = _VALUE_NAMES.get(name, (f"{name} value", f"{name} values"))
    return f"{count} {one if count == 1 else many}"
