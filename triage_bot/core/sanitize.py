"""Making untrusted text inert in markdown: mentions, links, markup, HTML and code fences.

Everything that comes from a log (evidence lines, captures) passes through redact.redact
before it is stored in a report, and through fill_slots (render.py's templates) or one of the
helpers here (the replies to commands) when it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# --- Markdown: one rule for untrusted text, wherever a template puts it ---------------------
#
# Templates print untrusted values through `fill_slots`: while a template renders, each value
# becomes a slot (a private-use marker), so the rendered markdown holds only the template's
# own structure. `fill_slots` then finds where each slot landed and writes the value in the
# form that is inert there:
#
# - in a fenced code block or an inline code span, as is: the fence or the span's backticks
#   are lengthened past any run in the value, and GitHub neither links nor notifies inside
#   code; an inline value stays on one line;
# - in an HTML block (`<details><summary>...`), where GitHub renders no markdown: character
#   references for everything markdown or HTML would read;
# - anywhere else (prose, headings, link text, table cells): backslash escapes for what could
#   start markup, `&lt;`/`&gt;` for HTML, on one line.
#
# Outside code, what GitHub links after rendering markdown (mentions, team pings, issue and
# pull request references, commit SHAs, URLs and e-mail addresses) gets a word joiner
# (U+2060): invisible, so the text reads the same, but no longer the pattern GitHub links.

WORD_JOINER = "\u2060"
SLOT_START = "\ue000"
SLOT_END = "\ue001"
_SLOT = re.compile(f"{SLOT_START}(\\d+){SLOT_END}")
_SLOT_MARKS = re.compile(f"[{SLOT_START}{SLOT_END}]")

# What GitHub autolinks in rendered text: @user and @org/team (and the domain of an e-mail
# address), #12 and owner/repo#12, GH-12, a scheme's "://" and "www.", and a SHA, which is
# any run of 7 to 40 hex digits; a run is cut every 6 digits.
_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
_REFERENCE = re.compile(r"(#|GH-)(?=\d)", re.IGNORECASE)
_WWW = re.compile(r"www(?=\.)", re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*(?=://)")
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{7,}")


def neutralise_mentions(text: str) -> str:
    """No @user or @org/team that GitHub would notify (kept for replies that quote users)."""
    return _MENTION.sub("@" + WORD_JOINER, text)


def _cut_hex(found: re.Match[str]) -> str:
    run = found.group()
    return WORD_JOINER.join(run[i : i + 6] for i in range(0, len(run), 6))


def neutralise_links(text: str) -> str:
    """Text that reads the same but that GitHub turns into no mention, reference or link."""
    text = _MENTION.sub("@" + WORD_JOINER, text)
    text = _REFERENCE.sub(lambda m: m.group(1) + WORD_JOINER, text)
    text = _WWW.sub(lambda m: m.group() + WORD_JOINER, text)
    text = _SCHEME.sub(lambda m: m.group() + WORD_JOINER, text)
    return _HEX_RUN.sub(_cut_hex, text)


def one_line(text: str) -> str:
    """Line breaks (and runs of white space around them) as one space."""
    return re.sub(r"\s*[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]\s*", " ", text)


# Prose: what can start markup anywhere on a line. `_` only counts at a word's edge, `&` only
# before what reads as a character reference, so paths and test names stay as they are.
_PROSE_SPECIAL = re.compile(r"[\\`*~\[\]|$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITY_LIKE = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
# At the start of a line also: a heading, a list item, a setext underline, a block quote.
_LINE_START = re.compile(r"^(\s*)(?:([#+=-])|(\d+)(?=[.)]))")


def escape_text(text: str, line_start: bool = False) -> str:
    """Untrusted text as inert markdown prose on one line: no markup, HTML, mention or link."""
    text = neutralise_links(one_line(text))
    text = _ENTITY_LIKE.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    text = _PROSE_SPECIAL.sub(lambda m: "\\" + m.group(), text)
    if line_start:
        text = _LINE_START.sub(_escape_line_start, text, count=1)
    return text


def _escape_line_start(found: re.Match[str]) -> str:
    indent, marker, number = found.groups()
    return f"{indent}\\{marker}" if marker else f"{indent}{number}\\"


_HTML_SPECIAL = re.compile(r"[&<>\"'\\`*~\[\]|$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def escape_html(text: str) -> str:
    """Untrusted text inside an HTML element (GitHub renders no markdown there), on one line.
    Character references read the same in markdown prose, so this is safe in either."""
    text = neutralise_links(one_line(text))
    return _HTML_SPECIAL.sub(lambda m: f"&#{ord(m.group())};", text)


def _longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)


def _span(content: str) -> str:
    fence = "`" * (_longest_run(content, "`") + 1)
    # A span whose text starts or ends with a backtick needs a space inside each fence (one
    # space either side is stripped when the span is read).
    padded = f" {content} " if content[:1] == "`" or content[-1:] == "`" else content
    return f"{fence}{padded}{fence}"


def code_span(text: str) -> str:
    """Inline code that no backtick in the text can close early."""
    return _span(one_line(text).strip())


def strip_slot_marks(text: str) -> str:
    """Text without the private-use characters slots are made of."""
    return _SLOT_MARKS.sub("\ufffd", text)


def slot(index: int) -> str:
    return f"{SLOT_START}{index}{SLOT_END}"


_FENCE_OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])([ \t]+|$)")
# A line that starts an HTML block, where GitHub renders no markdown (CommonMark's kinds 1
# to 6, which may interrupt a paragraph; and 7, a lone tag on a line, which may not).
_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|"
    "optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|"
    "track|ul"
)
_HTML_INTERRUPTS = re.compile(
    r"^ {0,3}(?:<(?:script|pre|style|textarea)(?:\s|>|$)|<!--|<\?|<![A-Za-z]|<!\[CDATA\[|"
    rf"</?(?:{_HTML_BLOCK_TAGS})(?:\s|/?>|$))",
    re.IGNORECASE,
)
_HTML_LONE_TAG = re.compile(r"^ {0,3}</?[A-Za-z][A-Za-z0-9-]*(?:\s[^>]*)?/?>[ \t]*$")
# What may open a block inside a line's start: list markers and block quotes.
_CONTAINER_PREFIX = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+|>[ \t]?)*")
_TABLE_DELIMITER_ROW = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
# A backslash before ASCII punctuation escapes it; a code span opens and closes at runs of
# backticks of one length.
_ESCAPE_OR_BACKTICKS = re.compile(r"\\[!-/:-@\[-`{-~]|`+")
_BACKTICKS = re.compile("`+")


def fill_slots(markdown: str, values: Sequence[str]) -> str:
    """`markdown` with each slot replaced by its value, in the form inert where it landed."""
    lines = markdown.split("\n")
    out: list[str] = []
    paragraph: list[str] = []
    list_column = -1  # where the content of the list item around us starts, if any
    index = 0
    while index < len(lines):
        line = lines[index]
        list_column = _list_column(line, list_column, bool(paragraph))
        fence = None if _starts_html_block(paragraph) else _fence_open(line, list_column)
        if fence is None:
            if _HTML_INTERRUPTS.match(line) and not _starts_html_block(paragraph):
                out.extend(_fill_paragraph(paragraph, values))  # an HTML block begins here
                paragraph = [line]
            elif line.strip():
                paragraph.append(line)
            else:
                out.extend(_fill_paragraph(paragraph, values))
                paragraph = []
                out.append(line)
            index += 1
            continue
        out.extend(_fill_paragraph(paragraph, values))
        paragraph = []
        end, closed = _fence_end(lines, index, fence)
        out.extend(_fill_fenced(lines[index:end], fence, closed, values))
        index = end
    out.extend(_fill_paragraph(paragraph, values))
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _list_column(line: str, column: int, in_paragraph: bool) -> int:
    """The content column of the list item `line` opens or continues; -1 outside lists."""
    item = _LIST_ITEM.match(line)
    if item:
        return len(item.group(0).expandtabs(4)) if item.group(2) else _indent(line) + 2
    if line.strip() and _indent(line) < column and not in_paragraph:
        return -1
    return column


def _starts_html_block(paragraph: list[str]) -> bool:
    return bool(paragraph) and bool(
        _HTML_INTERRUPTS.match(paragraph[0]) or _HTML_LONE_TAG.match(paragraph[0])
    )


def _fence_open(line: str, list_column: int) -> str | None:
    """The fence `line` opens a code block with; only at an indent a fence can have there."""
    found = _FENCE_OPEN.match(line)
    if not found:
        return None
    fence, info = found.group(2), found.group(3)
    if fence[0] == "`" and "`" in info:
        return None  # an inline code span, not a fence
    indent = _indent(line)
    base = max(list_column, 0)
    if not base <= indent <= base + 3 and indent > 3:
        return None
    return fence


def _fence_end(lines: list[str], start: int, fence: str) -> tuple[int, bool]:
    """Where the block that `lines[start]` opens ends (past its closing fence), and whether
    it is closed at all (an unclosed one runs to the end)."""
    closing = re.compile(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*")
    for index in range(start + 1, len(lines)):
        if closing.fullmatch(lines[index]):
            return index + 1, True
    return len(lines), False


def _fill_fenced(block: list[str], fence: str, closed: bool, values: Sequence[str]) -> list[str]:
    """A fenced block with its values as they are, the fence longer than any run in them."""
    if not any(_SLOT.search(line) for line in block):
        return block
    opening, body = block[0], block[1 : len(block) - closed]
    indent = opening[: len(opening) - len(opening.lstrip())]
    # A value's later lines keep the block's indent, or they would end a list item around it.
    filled = [_SLOT.sub(lambda m: _block_value(values, m, indent), line) for line in body]
    char = fence[0]
    longest = max((_longest_run(line, char) for line in filled), default=0)
    wider = char * max(len(fence), longest + 1)
    info = _SLOT.sub(
        lambda m: re.sub(r"[^A-Za-z0-9+#._-]", "", _value(values, m)),
        opening.lstrip()[len(fence) :],
    )
    out = [f"{indent}{wider}{info}", *filled]
    if closed:
        closing = block[-1]
        out.append(closing[: len(closing) - len(closing.lstrip())] + wider)
    return out


def _block_value(values: Sequence[str], found: re.Match[str], indent: str) -> str:
    return re.sub(r"\r\n?|\n", "\n" + indent, _value(values, found))


def _value(values: Sequence[str], found: re.Match[str]) -> str:
    index = int(found.group(1))
    return values[index] if index < len(values) else ""


def _fill_paragraph(lines: list[str], values: Sequence[str]) -> list[str]:
    """Lines of one block outside fenced code: values in its code spans as they are (the
    spans widened), in an HTML block as character references, elsewhere escaped as prose."""
    if not lines:
        return []
    text = "\n".join(lines)
    if _SLOT.search(text) is None:
        return lines
    if _starts_html_block(lines):
        html = _SLOT.sub(lambda m: _apart(escape_html(_value(values, m)), text, *m.span()), text)
        return html.split("\n")
    in_table = any("|" in line and _TABLE_DELIMITER_ROW.match(line) for line in lines)
    out: list[str] = []
    done = 0
    for start, end, run in _code_spans(text):
        out.append(_fill_prose(text, done, start, values))
        content = text[start + run : end - run]
        if _SLOT.search(content) is None:
            out.append(text[start:end])
        else:
            # On one line: a value at the start of a line could open a block (`<script`, a
            # heading) before the span is read. A line break in a span reads as a space.
            content = re.sub(r"[ \t]*\n[ \t]*", " ", content)
            out.append(_span(_SLOT.sub(lambda m: _code_value(values, m, in_table), content)))
        done = end
    out.append(_fill_prose(text, done, len(text), values))
    return "".join(out).split("\n")


def _code_value(values: Sequence[str], found: re.Match[str], in_table: bool) -> str:
    value = one_line(_value(values, found))
    return value.replace("|", "\\|") if in_table else value


def _fill_prose(text: str, start: int, end: int, values: Sequence[str]) -> str:
    out: list[str] = []
    done = start
    for found in _SLOT.finditer(text, start, end):
        line_begins = text.rfind("\n", 0, found.start()) + 1
        # (a value before this one on the line may be empty)
        before = _SLOT.sub("", text[line_begins : found.start()])
        at_line_start = _CONTAINER_PREFIX.fullmatch(before) is not None
        value = escape_text(_value(values, found), line_start=at_line_start)
        out += [text[done : found.start()], _apart(value, text, found.start(), found.end())]
        done = found.end()
    out.append(text[done:end])
    return "".join(out)


def _apart(value: str, text: str, start: int, end: int) -> str:
    """`value` with a word joiner at an edge where it and the text around it would make one
    link: "E" + "1f0e3c9" a SHA, "#" + "12" a reference, "@" + "octocat" a mention."""
    before = _SLOT_MARKS.sub("0", text[max(0, start - 40) : start])
    after = _SLOT_MARKS.sub("0", text[end : end + 40])
    if value and _links_across(before, value):
        value = WORD_JOINER + value
    if value and _links_across(value, after):
        value += WORD_JOINER
    return value


def _links_across(left: str, right: str) -> bool:
    return neutralise_links(left + right) != neutralise_links(left) + neutralise_links(right)


def _code_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, backtick count) of each inline code span, as CommonMark finds them."""
    spans: list[tuple[int, int, int]] = []
    index = 0
    while (found := _ESCAPE_OR_BACKTICKS.search(text, index)) is not None:
        index = found.end()
        if found[0][0] == "\\":
            continue  # an escaped character, a backtick too, opens nothing
        run = len(found[0])
        closing = next(
            (m.end() for m in _BACKTICKS.finditer(text, index) if len(m[0]) == run), None
        )
        if closing is not None:  # else the backticks are plain text
            spans.append((found.start(), closing, run))
            index = closing
    return spans
