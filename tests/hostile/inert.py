"""Is a comment inert? It is rendered as GitHub would (CommonMark, tables, strikethrough,
raw HTML, autolinks), and the HTML is read element by element.

GitHub links more than markdown does, after rendering: @user and @org/team, #12,
owner/repo#12, GH-12, commit SHAs, bare URLs and www. addresses, e-mail addresses, in the
text outside <code> and <pre>. markdown-it's linkify is not GitHub's (it links `//host`,
which GitHub does not), so that autolinking is modelled here by searching the text nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

# The elements the comment's templates and the built-in signatures write; any other is raw
# HTML that came from the text.
TEMPLATE_TAGS = frozenset(
    [
        "p",
        "br",
        "hr",
        "code",
        "pre",
        "strong",
        "em",
        "del",
        "a",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "details",
        "summary",
        "sub",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "blockquote",
    ]
)
_LINKED_AFTER_MARKDOWN = {
    "mention": re.compile(r"(?<![\w`])@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9_.-]+)?"),
    "reference": re.compile(r"(?<![\w&])#\d+\b|\bGH-\d+\b|\b[\w.-]+/[\w.-]+#\d+\b", re.IGNORECASE),
    "sha": re.compile(r"(?<![\w@/])[0-9a-f]{7,40}(?![\w@/])", re.IGNORECASE),
    "url": re.compile(r"\b[a-z][a-z0-9+.-]*://\S|\bwww\.\S", re.IGNORECASE),
    "email": re.compile(r"[\w.+-]@[\w-]+\.[\w.-]+"),
}


def github_markdown() -> MarkdownIt:
    md = MarkdownIt("gfm-like", {"html": True, "linkify": True})
    assert md.linkify is not None  # linkify-it-py is installed
    # GitHub links scheme:// and www. addresses, not bare domains or `//host`.
    md.linkify.set({"fuzzy_link": False, "fuzzy_email": True})
    md.linkify.add("//", None)
    return md


@dataclass
class _Reader(HTMLParser):
    """What the HTML holds: its elements, links, images, and the text outside code."""

    elements: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    text_outside_code: list[str] = field(default_factory=list)
    link_texts: list[str] = field(default_factory=list)
    _in_code: int = 0
    _in_link: int = 0

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {name: value or "" for name, value in attrs}))
        self._in_code += tag in ("code", "pre")
        self._in_link += tag == "a"

    def handle_endtag(self, tag: str) -> None:
        self._in_code -= tag in ("code", "pre") and self._in_code > 0
        self._in_link -= tag == "a" and self._in_link > 0

    def handle_data(self, data: str) -> None:
        if self._in_link:
            self.link_texts.append(data)  # a link's text: GitHub links nothing more in it
        elif not self._in_code:
            self.text_outside_code.append(data)

    def handle_comment(self, data: str) -> None:
        self.elements.append(("!--", {"text": data}))


def html_problems(html: str, trusted_links: frozenset[str] = frozenset()) -> list[str]:
    """What in `html` is live that should not be: raw elements, links and images the
    templates did not write, and text GitHub would link."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    problems = [
        f"raw element <{tag} {attrs}>" for tag, attrs in reader.elements if _raw(tag, attrs)
    ]
    problems += [
        f"link to {attrs.get('href')!r}"
        for tag, attrs in reader.elements
        if tag == "a" and attrs.get("href") not in trusted_links
    ]
    text = "\n".join(reader.text_outside_code)
    for what, pattern in _LINKED_AFTER_MARKDOWN.items():
        problems += [f"{what} {found.group()!r} in the text" for found in pattern.finditer(text)]
    return problems


def _raw(tag: str, attrs: dict[str, str]) -> bool:
    if tag == "!--":
        return "triage-bot:sticky-comment" not in attrs["text"]
    return tag not in TEMPLATE_TAGS


def markdown_problems(markdown: str, trusted_links: frozenset[str] = frozenset()) -> list[str]:
    return html_problems(github_markdown().render(markdown), trusted_links)


def links_in(markdown: str) -> frozenset[str]:
    """The links a benign rendering of the same template holds: the template's own."""
    reader = _Reader()
    reader.feed(github_markdown().render(markdown))
    return frozenset(attrs.get("href", "") for tag, attrs in reader.elements if tag == "a")


def elements_in(markdown: str) -> list[str]:
    """The elements of the rendered markdown, in order: its structure, without the text."""
    reader = _Reader()
    reader.feed(github_markdown().render(markdown))
    return [tag for tag, _attrs in reader.elements]
