"""gitleaks' secret rules as data, read by triage_bot.core.redact (see README.md here)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

GITLEAKS_TOML = Path(__file__).with_name("gitleaks.toml")

# Go's POSIX classes, which Python's re does not know (used inside [...]).
_POSIX_CLASSES = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "xdigit": "0-9A-Fa-f",
    "upper": "A-Z",
    "lower": "a-z",
    "word": r"\w",
    "space": r"\s",
}
# A word boundary that also holds after '_': gitleaks writes `\b` before a token, which lets
# `TOKEN_ghp_...` or `X_sk_live_...` through (both sides are word characters).
TOKEN_START = r"(?<![A-Za-z0-9])"


@dataclass(frozen=True)
class Allowlist:
    """When a finding is not a secret: a regex on the secret, the whole match or the line,
    or a stop word inside the secret."""

    target: str  # "secret", "match" or "line"
    patterns: tuple[str, ...]
    stopwords: tuple[str, ...]

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(map(re.compile, self.patterns))  # on first use: most never are

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = match if self.target == "match" else line if self.target == "line" else secret
        if any(regex.search(text) for regex in self.regexes):
            return True
        lowered = secret.lower()
        return any(word in lowered for word in self.stopwords)


@dataclass(frozen=True)
class GitleaksRule:
    id: str
    pattern: str  # as Python's re reads it (go_regex)
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]
    # The characters a match may reach back over (`[\w.-]`) before what `regex` found: see
    # _without_lead.
    lead: int = 0


def go_regex(pattern: str) -> str:
    """A Go (RE2) regex as Python's re reads it the same way: `(?i)` mid-pattern scoped to
    the rest of its group, `\\z` as `\\Z`, POSIX classes spelt out, `[` in a class escaped,
    and a leading `\\b` that holds after '_' too."""
    out: list[str] = []
    wrappers = [0]  # per open group: the `(?i:` opened in it, closed at its `|` and `)`
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        char = pattern[i]
        if char == "\\":
            pair = pattern[i : i + 2]
            out.append(r"\Z" if pair == r"\z" else pair)
            i += 2
        elif in_class:
            in_class = char != "]"
            i = _class_char(pattern, i, out)
        elif char == "[":
            in_class = True
            opening = "[^" if pattern.startswith("[^", i) else "["
            out.append(opening)
            i += len(opening)
            if pattern.startswith("]", i):  # a ']' first in a class is literal
                out.append(r"\]")
                i += 1
        elif pattern.startswith("(?i)", i) and i > 0:
            out.append("(?i:")
            wrappers[-1] += 1
            i += 4
        else:
            _group_char(char, wrappers, out)
            i += 1
    out.append(")" * wrappers[0])
    converted = "".join(out)
    for prefix in ("", "(?i)"):
        if converted.startswith(prefix + r"\b"):
            converted = prefix + TOKEN_START + converted[len(prefix) + 2 :]
    return converted


def _class_char(pattern: str, i: int, out: list[str]) -> int:
    if pattern.startswith("[:", i):
        end = pattern.index(":]", i)
        out.append(_POSIX_CLASSES[pattern[i + 2 : end]])
        return end + 2
    char = pattern[i]
    out.append(r"\[" if char == "[" else char)
    return i + 1


def _group_char(char: str, wrappers: list[int], out: list[str]) -> None:
    if char == "(":
        wrappers.append(0)
        out.append("(")
    elif char == ")":
        out.append(")" * wrappers.pop() + ")")
    elif char == "|":
        out.append(")" * wrappers[-1] + "|" + "(?i:" * wrappers[-1])
    else:
        out.append(char)


def _allowlist(raw: dict[str, Any]) -> Allowlist | None:
    """None for one that needs a file path or a commit to hold (a log line has neither);
    where either of its tests is enough ("OR", the default), its paths are left out."""
    if raw.get("condition") == "AND" and (raw.get("paths") or raw.get("commits")):
        return None
    if not raw.get("regexes") and not raw.get("stopwords"):
        return None
    patterns = tuple(go_regex(r) for r in raw.get("regexes", ()))
    stopwords = tuple(word.lower() for word in raw.get("stopwords", ()))
    return Allowlist(raw.get("regexTarget", "secret"), patterns, stopwords)


def _allowlists(raws: list[dict[str, Any]]) -> tuple[Allowlist, ...]:
    return tuple(a for a in map(_allowlist, raws) if a is not None)


# gitleaks' rules for "a name, then a value" start with a lazy run of name characters, some
# with two nested ones (`[\w.-]{0,50}?(?i:[\w.-]{0,50}?okta...`). Python tries such a run at
# every position of a line (most of the rules' cost; the nested ones make a long line take
# seconds), so the runs are left out of the search and the match extended back over them
# afterwards: the secret found is the same, and the allowlists that look at the whole match
# still see the name.
_LAZY_LEAD = re.compile(r"^(\(\?i\)|\(\?i:)?\[\\w\.-\]\{0,(\d+)\}\?")
# gitleaks' curl rules reach over up to 5 lines with unbounded `.*?`, which costs Python
# time that grows with the square of a line's length; on one line our rules find the same
# (authorization-header, assignment for `-H "X-Api-Key: v"`, curl-user for `-u user:pass`).
SKIPPED_RULES = frozenset({"curl-auth-header", "curl-auth-user"})


def _without_lead(pattern: str) -> tuple[str, int]:
    """The pattern without its leading lazy runs of name characters, and their length."""
    total = 0
    while lead := _LAZY_LEAD.match(pattern):
        total += int(lead.group(2))
        pattern = (lead.group(1) or "") + pattern[lead.end() :]
    return pattern, total


def load_gitleaks(path: Path = GITLEAKS_TOML) -> tuple[list[GitleaksRule], tuple[Allowlist, ...]]:
    """The rules that apply to text (not to file names), and the global allowlists."""
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    rules = []
    for raw in config["rules"]:
        if "regex" not in raw or raw["id"] in SKIPPED_RULES:
            continue  # a rule on file paths only, or one too slow here
        pattern, lead = _without_lead(raw["regex"])
        rules.append(
            GitleaksRule(
                id=raw["id"],
                pattern=go_regex(pattern),
                keywords=tuple(k.lower() for k in raw.get("keywords", ())),
                entropy=float(raw.get("entropy", 0.0)),
                secret_group=int(raw.get("secretGroup", 0)),
                allowlists=_allowlists(raw.get("allowlists", [])),
                lead=lead,
            )
        )
    global_lists = config.get("allowlists", [])
    if "allowlist" in config:
        global_lists = [config["allowlist"], *global_lists]
    return rules, _allowlists(global_lists)
