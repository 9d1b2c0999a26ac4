"""What a failure says in words, shared by the JSON and the terminal view so that they say
what the comment says: the signature's summary and fix rendered with the captures (markdown,
render.signature_text, the comment's own), and the distinct values of the other captures (the
failing tests), named with the comment's nouns (comment_words.value_noun).
"""

from __future__ import annotations

from triage_bot.core.catalog import Signature
from triage_bot.core.classify_results import Match
from triage_bot.core.comment_words import value_noun
from triage_bot.core.render import SignatureText, signature_text


def placeholder_text(signature: Signature) -> SignatureText:
    """The summary and fix with each capture shown as its placeholder, `<name>`."""
    return signature_text(signature, {name: f"<{name}>" for name in signature.pattern.groupindex})


def failing_values(match: Match) -> dict[str, list[str]]:
    """The distinct values of the captures outside `group_by` across the match's occurrences
    in its job (the failing tests of one error), a few of each, as the classifier kept them."""
    return {name: list(values) for name, values in match.variants.items() if values}


def values_label(name: str, count: int) -> str:
    """ "7 failing tests", "1 file", "3 code values": the comment's nouns (value_noun)."""
    noun = value_noun(name, count) or (f"{name} value" if count == 1 else f"{name} values")
    return f"{count} {noun}"
