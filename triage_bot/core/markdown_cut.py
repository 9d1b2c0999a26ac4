"""Cutting markdown short at a block boundary.

A comment cut in the middle of a code block or of a `<details>` element would show the rest
of the page inside it, so a cut falls between top-level blocks (as markdown-it parses them,
GitHub's CommonMark) and closes any `<details>` left open.
"""

from __future__ import annotations

from functools import cache
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.token import Token


@cache
def _blocks() -> MarkdownIt:
    return MarkdownIt("commonmark").disable("inline")  # where the blocks end is all we need


def cut_markdown(text: str, limit: int, note: str) -> str:
    """`text` if it fits in `limit` characters, else its longest run of whole top-level
    blocks that fits with `note` (and the closing tags of `<details>` left open) after it."""
    if len(text) <= limit:
        return text
    offsets = [0, *accumulate(len(line) for line in text.splitlines(keepends=True))]
    best = ""
    open_details = 0
    for token in _blocks().parse(text):
        if token.level != 0 or token.map is None or token.nesting == 1:
            continue  # the closing token (or a leaf) says where a top-level block ends
        open_details += _details_change(token)
        kept = text[: offsets[token.map[1]]]
        closed = kept.rstrip("\n") + "\n\n" + "</details>\n\n" * max(0, open_details)
        if len(closed) + len(note) > limit:
            break
        best = closed
    return best + note


def _details_change(token: Token) -> int:
    if token.type != "html_block":
        return 0
    return token.content.count("<details") - token.content.count("</details>")
