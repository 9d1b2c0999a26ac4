"""Secrets out of log text, before anything from a log is shown, stored or logged.

Redaction runs on what a report keeps of a log (evidence windows, best-guess lines, captures:
report.py, once per report), never on every log line, so its cost is per finding, not per
byte. What counts as a secret:

- gitleaks' rules (vendored as data in secret_rules/, MIT; origin there): some 220 formats of
  provider tokens and keys, each with its keywords, entropy floor and allowlists. An
  Aho-Corasick scan for the keywords picks the few rules worth running on a line.
- Our rules for what CI logs show and gitleaks (written for source files) lets through:
  assignments to names holding PASSWORD, PASSWD, PWD, PASSPHRASE, TOKEN, SECRET, KEY or
  CREDENTIAL (`X=v`, `export X=v`, `X: v`, `"x": "v"`, `--x v`) whose value looks like a
  secret (see `_looks_secret`), URL credentials (the password runs to the LAST '@' before
  the host), Authorization headers and bare bearer tokens, `docker login -p`, `mysql -pX`,
  `curl -u user:pass`, GitHub tokens glued after a word character (`TOKEN_ghp_...`).
- Private keys, whole: the lines from a `-----BEGIN ... PRIVATE KEY-----` to its END, across
  consecutive lines (`redact_lines` keeps the state), or to the end of the text.

A secret is replaced by `***` (what GitHub itself prints for masked secrets); the text around
it stays, so `PGPASSWORD=***` still says what went wrong. Python's regexes backtrack, so no
regex here may take time that grows faster than its text: gitleaks' lazy name runs and curl
rules are left out (secret_rules), ours are bounded, and a long line is read in pieces
(tests/hostile/test_redaction.py times lines built against them).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property

import ahocorasick_rs

from triage_bot.core.secret_rules import TOKEN_START, Allowlist, GitleaksRule, load_gitleaks

REDACTED = "***"
Span = tuple[int, int]
# Lines longer than this are read in pieces that overlap by more than any token is long.
SCAN_PIECE = 2048
SCAN_OVERLAP = 512


@dataclass(frozen=True)
class Rule:
    """One way to find secrets in a line: the regex, the group that is the secret (0: the
    first group that matched, or the whole match), and whether a found value is one."""

    id: str
    pattern: str
    keywords: tuple[str, ...]
    group: int | str = 0
    accept: Callable[[re.Match[str], str], bool] | None = None

    @cached_property
    def regex(self) -> re.Pattern[str]:
        # Compiled on first use: most of gitleaks' rules never meet their keywords in a run.
        return re.compile(self.pattern)

    def spans(self, line: str) -> list[Span]:
        found = []
        for match in self.regex.finditer(line):
            start, end = _secret_span(match, self.group)
            if start < end and (self.accept is None or self.accept(match, line[start:end])):
                found.append((start, end))
        return found


def _secret_span(match: re.Match[str], group: int | str) -> Span:
    if group:
        return match.span(group)
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):  # gitleaks: the first capture group that is not empty
            return match.span(index)
    return match.span(0)


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


# ---- gitleaks' rules --------------------------------------------------------------------


def _gitleaks_rule(rule: GitleaksRule, global_allow: tuple[Allowlist, ...]) -> Rule:
    allowlists = (*global_allow, *rule.allowlists)

    def accept(match: re.Match[str], secret: str) -> bool:
        if rule.entropy and shannon_entropy(secret) <= rule.entropy:
            return False
        line = match.string
        whole = line[_lead_start(line, match.start(), rule.lead) : match.end()]
        return not any(a.allows(secret, whole, line) for a in allowlists)

    return Rule(rule.id, rule.pattern, rule.keywords, rule.secret_group, accept)


def _lead_start(line: str, start: int, lead: int) -> int:
    """Where a gitleaks match begins once its lazy name run (`[\\w.-]{0,lead}?`) is put back."""
    floor = max(0, start - lead)
    while start > floor and (line[start - 1].isalnum() or line[start - 1] in "_.-"):
        start -= 1
    return start


# ---- our rules ------------------------------------------------------------------------------

# Words that make a name hold a secret. KEY alone is weak (KEY_LENGTH, cache keys, sort keys)
# and asks more of the value; the others are strong.
_STRONG_WORDS = (
    r"passw(?:or)?d|passphrase|pwd|token|secret|credentials?"
    r"|api[_.-]?key|priv(?:ate)?[_.-]?key|access[_.-]?key|auth[_.-]?key"
)
_NAME_WORDS = rf"(?:{_STRONG_WORDS}|key)"
_STRONG_NAME = re.compile(_STRONG_WORDS, re.IGNORECASE)
# Names that hold something about a secret, not the secret: its length, file, id, name...
_ABOUT_A_SECRET = re.compile(
    r"(?i)[_.-](?:length|len|size|bits|count|file|path|dir|name|names|id|ids|type|url|uri"
    r"|stdin|env|header|prefix|suffix|format|expiry|expires|expiration|ttl|timeout|hash|version|required)$"
)
_ASSIGNMENT = (
    r"""(?ix)
    (?<![\w.-])
    (?P<quote>["']?)
    (?P<dashes>--?)?
    (?P<name>[a-z0-9_.-]{0,40}?"""
    + _NAME_WORDS
    + r"""[a-z0-9_.-]{0,40})
    (?P=quote)
    (?:[ \t]*=>?[ \t]*|[ \t]*:[ \t]+|[ \t]*:(?=["'])|(?(dashes)[ \t]+|(?!)))
    (?:"(?P<dq>[^"\\]*(?:\\.[^"\\]*)*)"|'(?P<sq>[^'\\]*(?:\\.[^'\\]*)*)'|(?P<bare>[^\s"'`,;]+))
    """
)
# Values that are not a secret whatever their name says.
_PLACEHOLDER = re.compile(
    r"""^(?:\$\{\{.*\}\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%[A-Za-z_][A-Za-z0-9_]*%
    |<[^<>]*>|\*+|x+|\.+|\[[A-Za-z_ -]*\]
    |\(?(?:none|null|nil|empty|redacted|masked|hidden|unset)\)?)$""",
    re.IGNORECASE | re.VERBOSE,
)
_PLAIN_WORDS = frozenset(
    {
        *("true", "false", "yes", "no", "on", "off", "ok", "none", "null", "nil", "undefined"),
        *("unset", "empty", "required", "optional", "invalid", "expired", "missing", "revoked"),
        *("present", "absent", "set", "bearer", "basic", "token", "secret", "password"),
        *("enabled", "disabled", "default", "auto"),
    }
)
_PATH = re.compile(r"^(?:~?/|\.\.?/|[A-Za-z]:[\\/]|file:)")
_FLAG = re.compile(r"^--?[A-Za-z]")  # `--password-stdin --verbose`: the next flag, no value


def _looks_secret(name: str, value: str) -> bool:
    """Whether the value of `name` is a secret: not a placeholder (`${{ secrets.X }}`, `$X`,
    `***`), a plain word (true, none, required), a path, a number, a name about a secret
    (`KEY_LENGTH`, `TOKEN_FILE`) or a flag. A strong name (PASSWORD, TOKEN, SECRET, ...)
    needs 6 characters or more; KEY alone needs 16, letters and digits, and entropy > 3."""
    value = value.strip()
    if _ABOUT_A_SECRET.search(name) or _PLACEHOLDER.match(value) or _PATH.match(value):
        return False
    if value.lower() in _PLAIN_WORDS or _FLAG.match(value):
        return False
    if value.isdigit() and not re.search(r"(?i)pass|pwd", name):
        return False  # counts and sizes (max_tokens=4096); a numeric password is still one
    if _STRONG_NAME.search(name):
        return len(value) >= 6
    has_letter_and_digit = re.search(r"\d", value) and re.search(r"[A-Za-z]", value)
    return len(value) >= 16 and bool(has_letter_and_digit) and shannon_entropy(value) > 3.0


def _assignment_value(match: re.Match[str]) -> Span:
    for group in ("dq", "sq", "bare"):
        if match.group(group) is not None:
            return match.span(group)
    return match.span(0)


class _AssignmentRule(Rule):
    def spans(self, line: str) -> list[Span]:
        found = []
        for match in self.regex.finditer(line):
            start, end = _assignment_value(match)
            if start < end and _looks_secret(match.group("name"), line[start:end]):
                found.append((start, end))
        return found


def _has_digit_or_is_long(_match: re.Match[str], secret: str) -> bool:
    # A credential has a digit somewhere, or is long: "token authentication" stays prose.
    return bool(re.search(r"\d", secret)) or len(secret) >= 24


def _looks_like_token(_match: re.Match[str], secret: str) -> bool:
    return bool(re.search(r"\d", secret) and re.search(r"[A-Za-z]", secret))


_OUR_RULES: tuple[Rule, ...] = (
    _AssignmentRule(
        "assignment",
        _ASSIGNMENT,
        ("passw", "passphrase", "pwd", "token", "secret", "credential", "key"),
    ),
    Rule(
        "url-password",
        # The password runs to the last '@' before the host: `https://u:p@ss@host/`.
        r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@?#]*:(?P<secret>[^\s/?#]+)@[^\s@/?#]",
        ("://",),
        "secret",
    ),
    Rule(
        "url-user-token",
        r"(?i)\b[a-z][a-z0-9+.-]*://(?P<secret>[a-z0-9_-]{20,})@[^\s@/?#]",
        ("://",),
        "secret",
        _looks_like_token,
    ),
    Rule(
        "authorization-header",
        (
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?:(?:bearer|token|basic|digest|negotiate|bot)\s+)?(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
        ),
        ("authorization",),
        "secret",
        _has_digit_or_is_long,
    ),
    Rule(
        "bearer-token",
        r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        ("bearer",),
        "secret",
        _has_digit_or_is_long,
    ),
    Rule(
        "login-password-flag",
        (
            r"(?i)\b(?:docker|podman|buildah|nerdctl|skopeo|helm|oras|crane)\b.{0,200}?\blogin\b"
            r".{0,200}?\s(?:-p|--password)(?:[ \t]+|=)(?P<secret>[^\s\"']+|\"[^\"]*\"|'[^']*')"
        ),
        ("login",),
        "secret",
    ),
    Rule(
        "mysql-password-flag",
        r"(?i)\bmysql(?:dump|admin|sh)?\b.{0,200}?\s-p(?P<secret>[^\s-]\S*)",
        ("mysql",),
        "secret",
    ),
    Rule(
        "curl-user",
        r"(?i)\bcurl\b.{0,300}?\s(?:-u|--user)(?:=|[ \t]+)[\"']?[^\s:\"']{1,100}:"
        r"(?P<secret>[^\s\"']+)",
        ("curl",),
        "secret",
    ),
    Rule(
        "token-after-word",
        # GitHub tokens glued after a word character (`TOKEN_ghp_...`), which gitleaks'
        # rules only catch with their exact lengths.
        TOKEN_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
)


# ---- the redactor -------------------------------------------------------------------------


class Redactor:
    """The rules with their keywords in one Aho-Corasick automaton: a line runs only the rules
    whose keywords it holds (lower-cased, as gitleaks does)."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        keywords = sorted({k for rule in rules for k in rule.keywords})
        self._keywords = ahocorasick_rs.AhoCorasick(keywords)
        self._rules_of: list[list[int]] = [[] for _ in keywords]
        index = {keyword: i for i, keyword in enumerate(keywords)}
        for number, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                self._rules_of[index[keyword]].append(number)
        self._always = [n for n, rule in enumerate(self.rules) if not rule.keywords]

    def spans(self, line: str) -> list[Span]:
        """Where the secrets of one line are, merged, in order. A long line is read in
        overlapping pieces: a backtracking regex's time grows faster than the text it reads,
        and a hostile log can hold a 64 KiB line built to make it so."""
        if len(line) <= SCAN_PIECE:
            return self._spans(line)
        found = []
        for start in range(0, len(line) - SCAN_OVERLAP, SCAN_PIECE - SCAN_OVERLAP):
            piece = line[start : start + SCAN_PIECE]
            found += [(start + s, start + e) for s, e in self._spans(piece)]
        return _merged(found)

    def _spans(self, line: str) -> list[Span]:
        hits = self._keywords.find_matches_as_indexes(line.lower(), overlapping=True)
        if not hits and not self._always:
            return []
        numbers = set(self._always)
        for keyword, _start, _end in hits:
            numbers.update(self._rules_of[keyword])
        found = [span for n in sorted(numbers) for span in self.rules[n].spans(line)]
        return _merged(found)


def _merged(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


@cache
def default_redactor() -> Redactor:
    """gitleaks' rules and ours; read on first use (about 0.02 s of CPU), each regex compiled
    the first time a line holds one of its keywords."""
    gitleaks, global_allow = load_gitleaks()
    return Redactor([*(_gitleaks_rule(r, global_allow) for r in gitleaks), *_OUR_RULES])


def _masked(line: str, spans: Sequence[Span]) -> str:
    parts, last = [], 0
    for start, end in spans:
        parts += [line[last:start], REDACTED]
        last = end
    parts.append(line[last:])
    return "".join(parts)


# ---- private keys across lines --------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
# A line of a key's body, maybe after one prefix (a timestamp, a step name): what is
# redacted when a window starts inside a key, above the END line it shows.
_PEM_BODY = re.compile(r"^\s*(?:\S+\s+)?[A-Za-z0-9+/]{16,}={0,2}\s*$")


def _pem_spans(lines: Sequence[str]) -> list[list[Span]]:
    """Per line, what of it belongs to a private key's body (BEGIN and END lines kept)."""
    spans: list[list[Span]] = [[] for _ in lines]
    inside = False
    for number, line in enumerate(lines):
        start = 0
        if not inside:
            begin = _PEM_BEGIN.search(line)
            end = _PEM_END.search(line)
            if begin is None:
                if end is not None:  # the window starts inside a key: its body above
                    _body_above(lines, number, spans)
                    spans[number].append((0, end.start()))
                continue
            start, inside = begin.end(), True
        end = _PEM_END.search(line, start)
        if end is not None:
            inside = False
        stop = end.start() if end is not None else len(line)
        if start < stop:
            spans[number].append((start, stop))
    return spans


def _body_above(lines: Sequence[str], number: int, spans: list[list[Span]]) -> None:
    above = number - 1
    while above >= 0 and _PEM_BODY.match(lines[above]):
        spans[above].append((0, len(lines[above])))
        above -= 1


# ---- the interface --------------------------------------------------------------------------


def secret_spans(lines: Sequence[str]) -> list[list[Span]]:
    """Per line of consecutive log lines, where its secrets are (merged, in order)."""
    redactor = default_redactor()
    return [
        _merged([*pem, *redactor.spans(line)])
        for line, pem in zip(lines, _pem_spans(lines), strict=True)
    ]


def redact_window(lines: Sequence[str]) -> tuple[list[str], set[str]]:
    """Consecutive log lines with their secrets replaced (a private key spread over several
    lines is removed whole), and the secret values they held: to remove from captures taken
    from these lines, where the context that gave a value away (`password=`) may be missing."""
    spans = secret_spans(lines)
    redacted = [_masked(line, found) for line, found in zip(lines, spans, strict=True)]
    secrets = {
        line[start:end]
        for line, found in zip(lines, spans, strict=True)
        for start, end in found
        if end - start >= 4  # shorter is no secret, and would blank unrelated text
    }
    return redacted, secrets


def redact_lines(lines: Sequence[str]) -> list[str]:
    """Consecutive log lines with their secrets replaced."""
    return redact_window(lines)[0]


def redact(text: str) -> str:
    """`text` (one line, or several joined by newlines) with its secrets replaced."""
    return "\n".join(redact_lines(text.split("\n")))


def redact_capture(value: str, secrets: Iterable[str]) -> str:
    """A capture taken from lines that held `secrets` (redact_window), with them replaced."""
    value = redact(value)
    for secret in sorted(secrets, key=len, reverse=True):
        value = value.replace(secret, REDACTED)
    return value
