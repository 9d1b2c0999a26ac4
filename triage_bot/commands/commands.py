"""`/triage` commands in pull request comments: which line is a command, and what it asks.

A command is a line that starts with `/triage` in a paragraph of the comment itself: a line
in a block quote (someone quoting a command, or our reply quoting it), a fenced or indented
code block, a list or an HTML block is not. Telling those apart is CommonMark's business
(a line right under a quoted one continues the quote), so markdown-it-py parses the body.

Pure functions: events.py uses them to decide whether a comment becomes a job at all.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache
from typing import Literal

from markdown_it import MarkdownIt

PREFIX = "/triage"
CommandName = Literal["triage", "retry", "explain", "help", "unknown"]
# Bounds what a command may carry into a job, a log line or a reply.
MAX_ARGUMENT = 200


@dataclass(frozen=True)
class Command:
    name: CommandName
    argument: str = ""  # explain's signature id, or the words an unknown command had
    line: str = ""  # the command line as written (bounded), for replies that quote it


@cache
def _markdown() -> MarkdownIt:
    # Blocks only: which paragraph a line is in is all we need, and inline parsing (emphasis
    # in a long comment) is where the time would go.
    return MarkdownIt("commonmark").disable("inline")


def find_command(body: str) -> Command | None:
    """The first command in a comment's markdown `body`, or None."""
    if PREFIX not in body.casefold():  # most comments: no parse at all
        return None
    tokens = _markdown().parse(body)
    for opening, token in itertools.pairwise(tokens):
        # Top-level paragraphs only: deeper ones are in quotes or lists, and code blocks,
        # HTML blocks and headings are not paragraphs.
        if opening.type != "paragraph_open" or opening.level != 0:
            continue
        for line in token.content.splitlines():
            command = parse_line(line)
            if command is not None:
                return command
    return None


def parse_line(line: str) -> Command | None:
    """The command on one line of paragraph text, or None when the line is not one."""
    words = line.split()
    if not words or words[0].casefold() != PREFIX:
        return None  # "/triaged", "/triage-me" and prose are not commands
    shown = " ".join(words)[: len(PREFIX) + 1 + MAX_ARGUMENT]
    rest = words[1:]
    if not rest:
        return Command("triage", line=shown)
    verb = rest[0].casefold()
    if verb == "retry" and len(rest) == 1:
        return Command("retry", line=shown)
    if verb == "help" and len(rest) == 1:
        return Command("help", line=shown)
    if verb == "explain" and len(rest) == 2 and len(rest[1]) <= MAX_ARGUMENT:
        return Command("explain", rest[1], line=shown)
    return Command("unknown", " ".join(rest)[:MAX_ARGUMENT], line=shown)
