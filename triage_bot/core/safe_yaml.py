"""YAML the bot does not trust (signature files, a repository's config), read within bounds.

PyYAML shares an aliased node instead of copying it, so loading a "billion laughs" file
(nine levels of `[*a, *a, ...]`, a few hundred bytes) is cheap; what explodes is whatever
then walks the data: the JSON Schema check, and the `repr` its error messages quote. So the
document's events are counted before anything is built, each alias worth the size of the
node it names, and a document is refused as soon as its expansion passes the budget, as is
one too large or nested too deep (`triage_bot.core.limits`). A document without aliases is bounded
by its size alone: it is never called a bomb.

Every YAML load of the package goes through `load` (or `compose`, for finding lines).
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import yaml

from triage_bot.core.limits import (
    MAX_MESSAGE_CHARS,
    MAX_YAML_BYTES,
    MAX_YAML_CHARS,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
)

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# The cheap parser where libyaml is there; the pure-Python one elsewhere.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
INVALID_HINT = "check indentation and quote strings that contain ': ' or '#'"


class YamlProblem(Exception):
    """Why a text was not loaded: not YAML, or past a bound. `line` is 1-based, if known."""

    def __init__(self, line: int | None, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.line, self.reason, self.hint = line, reason, hint


def load(text: str) -> Any:
    """The data of one YAML document, or `YamlProblem` (never another error, never a blow-up)."""
    try:
        _check(text)
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise _invalid(exc) from exc


@lru_cache(maxsize=16)
def compose(text: str) -> yaml.Node | None:
    """The node tree of a document within the bounds (None for an empty one), for the lines
    of its keys; `YamlProblem` as `load`. Cached: messages ask for lines of one file often."""
    try:
        _check(text)
        return yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise _invalid(exc) from exc


def _check(text: str) -> None:
    """Raise `YamlProblem` unless `text` is within every bound (see the module's docstring);
    yaml.YAMLError where the events cannot be read."""
    # A character is at least one byte: a long text is refused before it is encoded.
    if len(text) > MAX_YAML_BYTES or len(text.encode("utf-8", "replace")) > MAX_YAML_BYTES:
        raise YamlProblem(
            None, f"larger than {MAX_YAML_BYTES:,} bytes", "keep a file under the limit"
        )
    _count(text)


@dataclass
class _Open:
    """A mapping or sequence being read: its anchor, and its size so far (itself included)."""

    anchor: str | None
    nodes: int = 1
    chars: int = 0


def _count(text: str) -> None:
    """Walk the events once: depth, and nodes and scalar characters with aliases expanded."""
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, chars) of its node, expanded
    open_nodes: list[_Open] = []
    nodes = chars = aliases = 0
    for event in yaml.parse(text, Loader=_LOADER):
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append(_Open(event.anchor))
            nodes += 1
            if len(open_nodes) > MAX_YAML_DEPTH:
                raise YamlProblem(
                    line,
                    f"YAML nested deeper than {MAX_YAML_DEPTH} levels",
                    "a signature needs 4 levels, a config 2",
                )
            continue
        anchor: str | None = None
        if isinstance(event, yaml.CollectionEndEvent):
            done = open_nodes.pop()
            size, anchor = (done.nodes, done.chars), done.anchor
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            size = sizes.get(event.anchor or "", (1, 0))  # unknown: the composer says so
            nodes, chars = nodes + size[0], chars + size[1]
        elif isinstance(event, yaml.ScalarEvent):
            size, anchor = (1, len(event.value)), event.anchor
            nodes, chars = nodes + 1, chars + size[1]
        else:
            continue
        if anchor is not None:
            sizes[anchor] = size
        if open_nodes:
            open_nodes[-1].nodes += size[0]
            open_nodes[-1].chars += size[1]
        if aliases and nodes > MAX_YAML_NODES:
            raise _bomb(line, f"{MAX_YAML_NODES:,} nodes")
        if aliases and chars > MAX_YAML_CHARS:
            raise _bomb(line, f"{MAX_YAML_CHARS:,} characters")


def _bomb(line: int | None, budget: str) -> YamlProblem:
    return YamlProblem(
        line,
        f"YAML aliases expand beyond {budget} (an alias bomb?)",
        "write the values out instead of repeating anchors (&name) with aliases (*name)",
    )


def _invalid(exc: yaml.YAMLError) -> YamlProblem:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    reason = getattr(exc, "problem", None) or str(exc)
    return YamlProblem(line, f"invalid YAML: {cut(reason)}", INVALID_HINT)


# ---- messages about the data -------------------------------------------------------------------


def _excerpt_repr() -> reprlib.Repr:
    shown = reprlib.Repr()
    shown.maxlevel, shown.maxlist, shown.maxdict, shown.maxtuple = 2, 4, 4, 4
    shown.maxstring, shown.maxother = 40, 40
    return shown


_EXCERPT = _excerpt_repr()


def excerpt(value: Any) -> str:
    """A short `repr` of a value, however large (it looks at the first few items only), cut
    to half a message so that what is said of it still fits."""
    return cut(_EXCERPT.repr(value), MAX_MESSAGE_CHARS // 2)


def cut(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def schema_message(error: ValidationError) -> str:
    """jsonschema's message for an error, bounded: its own quotes the whole offending value,
    which in a hostile file is as large as the bounds allow."""
    if error.validator == "type":
        expected = error.validator_value
        types = expected if isinstance(expected, list) else [expected]
        return cut(f"{excerpt(error.instance)} is not of type {', '.join(map(repr, types))}")
    said = _SAID.get(str(error.validator))
    if said is not None:
        return cut(f"{excerpt(error.instance)} {said.format(excerpt(error.validator_value))}")
    return cut(error.message)


# What jsonschema says of a value it quotes whole, said of an excerpt ({} is the schema's value).
_SAID = {
    "enum": "is not one of {}",
    "const": "is not {}",
    "maxItems": "is too long (at most {} items)",
    "minItems": "is too short (at least {} items)",
    "maxLength": "is too long (at most {} characters)",
    "minLength": "is too short (at least {} characters)",
    "uniqueItems": "has repeated items",
    "pattern": "does not match {}",
}
