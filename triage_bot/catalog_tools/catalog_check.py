"""`catalog lint` and `catalog test`: a signature is refused with the file, line and why.

lint: the schema, id = file stem, unique ids, patterns compile, keywords occur in every
example, templates render with the example captures, no catastrophic backtracking, a `.log`
window beside every signature; and, as warnings (lint still passes), triggers too common to
keep the classifier fast (lint_warnings). test: the inline examples and the `.log` windows
with their `#!` expectations, classified by the real streaming classifier.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2
import regex

from triage_bot.catalog_tools import near_miss
from triage_bot.core.catalog import (
    Catalog,
    Problem,
    Signature,
    load_catalog,
    patterns_dir,
    signature_line,
)
from triage_bot.core.classify import CompiledCatalog, classify
from triage_bot.core.engine import starts_with_literal
from triage_bot.core.limits import MAX_WINDOW_BYTES
from triage_bot.core.regex_shapes import (
    cpu_search,
    repeated_units,
    sample_match,
    top_level_branches,
)
from triage_bot.core.render import render_signature_text

# Every pattern must match in linear time: its CPU time on an adversarial line (a long run of
# what it repeats) is measured at two lengths. Linear growth is 8x for 8x the text, a
# quadratic one 64x; the factor allowed leaves room for noise on a shared machine. Below the
# floor a ratio of two timings says little. The absolute bound is per 64 KiB, the longest
# text the classifier hands a pattern (classify.MAX_REGEX_CHARS). The `regex` engine spends
# 100-300 ns per position where no literal leads the search (a lazy step, an alternation
# tried at each character), so a linear pattern costs up to ~12 ms per 64 KiB of adversarial
# run on a quiet machine. The same pattern measured 10 ms and 21-31 ms in runs an hour apart
# here (one timing of the pattern against the best of three of the reference), and CI fails
# on a refusal, so the bound is 50 ms: growth still catches every superlinear pattern, and a
# linear one at 50 ms costs at most that per line (a job's CPU budget bounds the rest).
LINEAR_SIZES = (8 * 1024, 64 * 1024)
MAX_CPU_PER_64K_S = 0.050
MAX_GROWTH = 20.0
_NOISE_FLOOR_S = 0.001
# The bound is for the machine these figures were taken on; a slower (or busier: CPU time
# grows too when caches are shared) machine gets a larger one, in proportion to its time on
# a fixed linear search that no literal speeds up, measured in the same run.
_REFERENCE_PATTERN = regex.compile(r"[a-z]+\d")
_REFERENCE_TEXT = "a " * 32768
_REFERENCE_CPU_S = 0.0026
# Every probe is screened on a line this long; the costliest few are measured at both sizes.
_SCREEN_SIZE = 2 * 1024
_CONFIRMED = 6
# No single search of the check may take more (an exponential pattern would take hours).
BACKTRACK_TIMEOUT_S = 0.5
# Where runs are put inside example lines: after these, in the first few examples.
_DELIMITERS = frozenset(" :/`'\"([{=,;@")
_CUT_EXAMPLES = 2
_MAX_EXAMPLE = 1024
_CUTS_PER_EXAMPLE = 8
# A character that no pattern expects, so an anchored match fails at the end of the run.
_FAIL = "\u2603"
_LINEAR_HINT = (
    "start with a literal rather than a class (\\S+, .*, [^:]+ are tried from every position "
    "of a long line); no nested quantifiers like (a+)+, no two neighbouring quantified parts "
    "that take the same characters (\\s*.*, [^:]+\\S+); use [^x]* up to a delimiter"
)
_BUDGET_HINT = "fewer or shorter examples, and a pattern anchored on literals"


def catalog_for(paths: Sequence[Path]) -> Catalog:
    """The catalog the given paths make: the built-in one plus any other folders or files."""
    builtin = patterns_dir().resolve()
    extra = [p for p in paths if not _inside(p.resolve(), builtin)]
    catalog = load_catalog()
    if extra:
        catalog = load_catalog(extra, origin="local", base=catalog)
    return catalog


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _where(path: Path) -> Path:
    """Where a file sits, its folders resolved but not a symbolic link in its own name: a
    link under a named folder is selected as it was found there (and refused, when it leads
    out of it, with the same problem `triage --catalog` prints)."""
    return path.absolute().parent.resolve() / path.name


def _roots(paths: Sequence[Path]) -> list[Path]:
    # Both: a named folder may itself be a link, and a named file one too.
    return [root for p in paths for root in (p.resolve(), _where(p))]


def _selected(catalog: Catalog, paths: Sequence[Path]) -> list[Signature]:
    if not paths:
        return list(catalog.signatures)
    roots = _roots(paths)
    return [s for s in catalog.signatures if any(_inside(_where(s.path), r) for r in roots)]


def _selected_problems(catalog: Catalog, paths: Sequence[Path]) -> list[Problem]:
    roots = _roots(paths) if paths else [patterns_dir().resolve()]
    return [p for p in catalog.problems if any(_inside(_where(p.path), r) for r in roots)]


def lint(paths: Sequence[Path]) -> tuple[list[Signature], list[Problem]]:
    catalog = catalog_for(paths)
    signatures = _selected(catalog, paths)
    problems = _selected_problems(catalog, paths)
    for signature in signatures:
        problems.extend(lint_signature(signature))
    return signatures, problems


def lint_warnings(signatures: Sequence[Signature], problems: Sequence[Problem]) -> list[Problem]:
    """What lint says of the signatures it passed (lint's result) without refusing them: the
    triggers that pass too many lines of the near-miss log on to the signature's regex. A
    signature with a problem is mended first (and its warning, if any, comes then)."""
    refused = {problem.path.with_suffix("") for problem in problems}
    passed = [s for s in signatures if s.path.with_suffix("") not in refused]
    return common_trigger_warnings(passed) if passed else []


_COMMON_HINT = (
    "a keyword with the delimiters the tool prints around it (`error:`, `FAILED `), not the "
    "bare word; or a `prefilter` regex"
)


@cache
def _near_miss_sample() -> bytes:
    """The first lines of the bench's near-miss log (built-in catalog, fixed seed): the same
    log whatever is linted, so a signature's count does not depend on its neighbours."""
    return near_miss.NearMissLog(load_catalog(), seed=near_miss.SEED).lines(near_miss.SAMPLE_LINES)


def common_trigger_warnings(signatures: Sequence[Signature]) -> list[Problem]:
    """A warning for each signature whose triggers and keywords pass more than 1 line in
    10,000 of the near-miss log (bench/classify.py --shape near-miss) on to its regex: each
    such line is decoded and searched, on every job."""
    sample = _near_miss_sample()
    lines = sample.count(b"\n")
    counts = near_miss.too_common(signatures, sample)
    return [
        Problem(
            signature.path,
            signature_line(signature, [_trigger_field(signature)]),
            f"warning: triggers too common: {counts[signature.id]:,} of {lines:,} lines of "
            f"the near-miss log reach the pattern (at most 1 in "
            f"{round(1 / near_miss.TOO_COMMON):,})",
            _COMMON_HINT,
        )
        for signature in signatures
        if signature.id in counts
    ]


def _trigger_field(signature: Signature) -> str:
    """The field the prefilter's triggers come from (Signature.triggers)."""
    if signature.prefilter:
        return "prefilter"
    return "any_keywords" if signature.triggers == signature.any_keywords else "keywords"


def lint_signature(signature: Signature) -> list[Problem]:
    problems = lint_rules(signature)
    window = signature.path.with_suffix(".log")
    if not window.is_file():
        problems.append(
            Problem(
                signature.path,
                None,
                f"no log window {window.name} beside the signature",
                "add a real window of a job log with '#! match:' lines",
            )
        )
    elif window.stat().st_size > MAX_WINDOW_BYTES:
        problems.append(
            Problem(
                window,
                None,
                f"larger than {MAX_WINDOW_BYTES:,} bytes",
                "a window is the few dozen lines around the failure, not the whole log",
            )
        )
    return problems


def lint_rules(signature: Signature, *, check_cost: bool = True) -> list[Problem]:
    """What lint checks of the signature itself (its `.log` window aside). `check_cost`:
    False where cost_problems was run first (a repository's signature)."""
    problems: list[Problem] = []
    path = signature.path
    for index, example in enumerate(signature.match_examples):
        for keyword in signature.keywords:
            if keyword not in example.line:
                problems.append(
                    Problem(
                        path,
                        signature_line(signature, ["tests", "match", index, "line"]),
                        f"keyword {keyword!r} does not occur in example {example.line!r}",
                        "keywords are literals that every matching line contains",
                    )
                )
        if signature.any_keywords and not any(k in example.line for k in signature.any_keywords):
            problems.append(
                Problem(
                    path,
                    signature_line(signature, ["tests", "match", index, "line"]),
                    f"none of any_keywords occurs in example {example.line!r}",
                    "every matching line must contain at least one of any_keywords",
                )
            )
        found = signature.pattern.search(example.line)
        captures = {k: v for k, v in found.groupdict().items() if v is not None} if found else {}
        # Optional groups may be missing; templates see them as empty.
        captures = {name: captures.get(name, "") for name in signature.pattern.groupindex}
        for field in ("summary", "fix"):
            try:
                render_signature_text(getattr(signature, field), captures)
            except jinja2.TemplateError as exc:
                problems.append(
                    Problem(
                        path,
                        signature_line(signature, [field]),
                        f"{field} does not render: {exc}",
                        "use only the pattern's named groups",
                    )
                )
    problems.extend(_prefilter_problems(signature))
    problems.extend(_captures_in_urls(signature))
    if check_cost:
        problems.extend(linearity_problems(signature))
    return problems


# A URL in a template's prose that goes on into a `{{ ... }}`: GitHub would link to wherever
# the log text points, and no escaping of the value keeps a link target inert. In code (fenced
# blocks, inline spans) nothing is linked.
_CAPTURE_IN_URL = regex.compile(r"(?:https?://|www\.)[^\s<>()\[\]`{]*\{\{")
_CODE = regex.compile(r"^ *(`{3,}|~{3,})[^\n]*\n.*?^ *\1 *$|`[^`\n]*`", regex.S | regex.M)


def _captures_in_urls(signature: Signature) -> list[Problem]:
    return [
        Problem(
            signature.path,
            signature_line(signature, [field]),
            f"{field} builds a URL from a capture",
            "name the page instead (the site's index and the code in a code span)",
        )
        for field in ("summary", "fix")
        if _CAPTURE_IN_URL.search(_CODE.sub("", getattr(signature, field)))
    ]


def _prefilter_problems(signature: Signature) -> list[Problem]:
    if signature.prefilter is None:
        return []
    path = signature.path
    line = signature_line(signature, ["prefilter"])
    try:
        # Python's `re` runs it where Hyperscan is missing, so both must take it.
        compiled = re.compile(signature.prefilter)
    except re.error as exc:
        return [Problem(path, line, f"prefilter does not compile: {exc}")]
    problems = [
        Problem(
            path,
            line,
            f"prefilter does not match example {example.line!r}",
            "the prefilter must find every line the pattern matches",
        )
        for example in signature.match_examples
        if not compiled.search(example.line)
    ]
    problems.extend(
        Problem(
            path,
            line,
            f"prefilter branch {branch!r} does not start with a literal",
            "without Hyperscan, Python's `re` runs it over the whole log, trying every byte; "
            "start it with the text the tool prints (the pattern checks the rest)",
        )
        for branch in top_level_branches(signature.prefilter)
        if not starts_with_literal(branch.encode())
    )
    try:
        import hyperscan
    except ImportError:
        return problems  # checked where Hyperscan is installed
    try:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=[signature.prefilter.encode()], ids=[0], elements=1, flags=0)
    except hyperscan.error as exc:
        problems.append(
            Problem(
                path,
                line,
                f"Hyperscan cannot compile the prefilter: {exc}",
                "use the syntax both share: no lookaround, no backreference",
            )
        )
    return problems


@dataclass(frozen=True)
class Probe:
    """An adversarial line: `prefix`, then `unit` repeated to a given length, then `tail`."""

    prefix: str
    unit: str
    tail: str

    def text(self, size: int) -> str:
        return self.prefix + self.unit * (size // len(self.unit)) + self.tail

    def describe(self, size: int) -> str:
        return f"{self.prefix[-30:]!r} + {self.unit!r} x {size // len(self.unit)} + {self.tail!r}"


def adversarial_probes(signature: Signature) -> list[Probe]:
    """Runs of what the pattern repeats, after the keyword, before it, and inside example
    lines where a quantified part is likely to be (after each delimiter). Their number does
    not grow with the examples: only the first few are cut."""
    keyword = signature.triggers[0]
    # The keyword itself, over and over: every occurrence is where a search may start.
    units = [*repeated_units(signature.pattern.pattern), keyword, keyword + " "]
    prefixes = ["", keyword, keyword + " "]
    # Short examples only: a probe's length is its run's, whatever a repository's file holds.
    examples = [e.line for e in signature.match_examples if len(e.line) <= _MAX_EXAMPLE]
    for line in examples[:_CUT_EXAMPLES]:
        prefixes += _cuts(line)
    probes = [Probe(prefix, unit, _FAIL) for prefix in dict.fromkeys(prefixes) for unit in units]
    # A whole match after the run: `regex` gives up at once on a line that lacks a literal
    # the pattern needs, so the run must be followed by everything the pattern asks for.
    whole = examples[0] if examples else sample_match(signature.pattern.pattern)
    probes += [
        Probe(prefix, unit, _FAIL + " " + whole) for prefix in prefixes[:3] for unit in units
    ]
    probes += [Probe("", unit, " " + keyword) for unit in units]
    return probes


def _cuts(line: str) -> list[str]:
    """Heads of `line` that end after a delimiter (or at its end), a few spread along it,
    and its first two: a run right after the pattern's opening literal (`[ERROR] ` then
    spaces) is where two quantifiers side by side can split it in every way."""
    ends = [i + 1 for i, char in enumerate(line) if char in _DELIMITERS] + [len(line)]
    step = max(1, len(ends) // _CUTS_PER_EXAMPLE)
    picked = dict.fromkeys([*ends[:2], *ends[::step][-_CUTS_PER_EXAMPLE:]])
    return [line[:end] for end in picked]


def _cpu_cost(pattern: regex.Pattern[str], text: str, limit_s: float) -> float:
    start = time.thread_time()
    cpu_search(pattern, text, limit_s)
    return time.thread_time() - start


def costliest_probes(signature: Signature, cpu_deadline: float | None = None) -> list[Probe]:
    """The probes that cost the pattern most on a short line, costliest first."""
    probes = adversarial_probes(signature)
    screened = [
        (_cpu_cost(signature.pattern, probe.text(_SCREEN_SIZE), _limit(cpu_deadline)), index)
        for index, probe in enumerate(probes)
    ]
    return [probes[index] for _cost, index in sorted(screened, reverse=True)[:_CONFIRMED]]


def probe_costs(
    signature: Signature, probe: Probe, cpu_deadline: float | None = None
) -> tuple[float, float]:
    """The pattern's CPU time on the probe at both LINEAR_SIZES (the best of two runs)."""
    small, large = (
        min(_cpu_cost(signature.pattern, probe.text(size), _limit(cpu_deadline)) for _ in "12")
        for size in LINEAR_SIZES
    )
    return small, large


def linearity_problems(signature: Signature, cpu_deadline: float | None = None) -> list[Problem]:
    """Refuses a pattern whose CPU time on an adversarial line grows faster than the line
    (compared at two lengths) or exceeds MAX_CPU_PER_64K_S on a 64 KiB one. Every probe is
    screened on a short line; the costliest are measured at both lengths. `cpu_deadline`
    (a time.thread_time() value) bounds the whole check: past it, the signature is refused."""
    where = signature_line(signature, ["pattern"])
    try:
        for probe in costliest_probes(signature, cpu_deadline):
            found = _confirmed_verdict(signature, probe, cpu_deadline)
            if found:
                return [Problem(signature.path, where, found, _LINEAR_HINT)]
    except TimeoutError:
        if cpu_deadline is not None and time.thread_time() >= cpu_deadline:
            return [Problem(signature.path, where, "checks took too long", _BUDGET_HINT)]
        return [
            Problem(
                signature.path,
                where,
                f"pattern backtracks catastrophically (over {BACKTRACK_TIMEOUT_S} s of CPU "
                "on an adversarial line)",
                _LINEAR_HINT,
            )
        ]
    return []


def _limit(cpu_deadline: float | None) -> float:
    if cpu_deadline is None:
        return BACKTRACK_TIMEOUT_S
    # Out of budget is a timeout too: the caller tells the two apart by the deadline.
    return max(1e-6, min(BACKTRACK_TIMEOUT_S, cpu_deadline - time.thread_time()))


def _confirmed_verdict(
    signature: Signature, probe: Probe, cpu_deadline: float | None
) -> str | None:
    """The verdict on the best of up to three timings: one timing can land on a busy moment
    of a shared machine, and a refused pattern fails CI. A slow pattern stays slow in all."""
    small, large = probe_costs(signature, probe, cpu_deadline)
    for _ in range(2):
        if _verdict(probe, small, large) is None:
            return None
        again = probe_costs(signature, probe, cpu_deadline)
        small, large = min(small, again[0]), min(large, again[1])
    return _verdict(probe, small, large)


def machine_slowness() -> float:
    """This machine's time now on a fixed linear search, relative to the one the bound was
    set on (at least 1)."""
    costs = [_cpu_cost(_REFERENCE_PATTERN, _REFERENCE_TEXT, BACKTRACK_TIMEOUT_S) for _ in "123"]
    return max(1.0, min(costs) / _REFERENCE_CPU_S)


def _verdict(probe: Probe, small_cost: float, large_cost: float) -> str | None:
    """Why these costs show the pattern superlinear or too slow, or None."""
    small, large = LINEAR_SIZES
    growth = large_cost / max(small_cost, 1e-9)
    line = probe.describe(large)
    per_64k = large_cost * 65536 / large
    # Measured only when needed, right after the pattern's own time (the same conditions).
    allowed = MAX_CPU_PER_64K_S
    if per_64k > allowed:
        allowed *= machine_slowness()
    if per_64k > allowed:
        return (
            f"pattern is too slow: {large_cost * 1000:.1f} ms of CPU on the line {line} "
            f"(at most {allowed * 1000:.0f} ms per 64 KiB here)"
        )
    if large_cost > _NOISE_FLOOR_S and growth > MAX_GROWTH:
        return (
            f"pattern's time grows faster than the line: {small_cost * 1000:.2f} ms of CPU "
            f"at {small} characters, {large_cost * 1000:.2f} ms at {large} ({growth:.0f}x for "
            f"{large // small}x the text) on {line}"
        )
    return None


def cost_problems(signature: Signature, cpu_deadline: float) -> list[Problem]:
    """The checks of an untrusted signature's cost, within `cpu_deadline` (a
    time.thread_time() value): the linearity check, then a bounded search of every example,
    which the other checks then search unbounded."""
    problems = linearity_problems(signature, cpu_deadline)
    if problems:
        return problems
    lines = [e.line for e in signature.match_examples] + list(signature.no_match_examples)
    try:
        for line in lines:
            cpu_search(signature.pattern, line, _limit(cpu_deadline))
    except TimeoutError:
        where = signature_line(signature, ["tests"])
        return [Problem(signature.path, where, "checks took too long", _BUDGET_HINT)]
    return []


@dataclass(frozen=True)
class Failure:
    path: Path
    line: int | None
    expected: str
    actual: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: expected {self.expected}; got {self.actual}"


def test(paths: Sequence[Path]) -> tuple[int, list[Failure], list[Problem]]:
    """(checks run, failures, load problems) for the selected signatures."""
    catalog = catalog_for(paths)
    compiled = CompiledCatalog(catalog)
    checks = 0
    failures: list[Failure] = []
    for signature in _selected(catalog, paths):
        count, found = inline_tests(signature)
        checks += count
        failures.extend(found)
        window = signature.path.with_suffix(".log")
        if window.is_file():
            count, found = window_test(window, compiled)
            checks += count
            failures.extend(found)
    return checks, failures, _selected_problems(catalog, paths)


def _describe(signature_id: str | None, captures: dict[str, str]) -> str:
    if signature_id is None:
        return "no match"
    shown = " ".join(f"{k}={v!r}" for k, v in sorted(captures.items()))
    return f"{signature_id} {shown}".strip()


def inline_tests(signature: Signature) -> tuple[int, list[Failure]]:
    failures: list[Failure] = []
    path = signature.path
    for index, example in enumerate(signature.match_examples):
        found = signature.pattern.search(example.line)
        got = {k: v for k, v in found.groupdict().items() if v is not None} if found else {}
        expected = example.captures
        if found is None or any(got.get(k) != v for k, v in expected.items()):
            failures.append(
                Failure(
                    path,
                    signature_line(signature, ["tests", "match", index]),
                    f"{example.line!r} to match with {_describe(signature.id, expected)}",
                    _describe(signature.id, got) if found else "no match",
                )
            )
    for index, line in enumerate(signature.no_match_examples):
        if signature.pattern.search(line):
            failures.append(
                Failure(
                    path,
                    signature_line(signature, ["tests", "no_match", index]),
                    f"{line!r} not to match",
                    "a match",
                )
            )
    return len(signature.match_examples) + len(signature.no_match_examples), failures


@dataclass(frozen=True)
class Expectation:
    directive_line: int  # in the .log file, for messages
    kind: str  # "match" or "ok"
    signature_id: str
    captures: dict[str, str]


def parse_window(text: str) -> tuple[bytes, dict[int, list[Expectation]]]:
    """Strip `#!` lines; map each expectation to the line number it checks in the rest.

    `#! source: URL` (where the window comes from) is kept out of the log and checks nothing.
    """
    kept: list[str] = []
    expectations: dict[int, list[Expectation]] = {}
    waiting: list[Expectation] = []
    # Split as the classifier splits a log (on newlines only), so that a line holding a bare
    # carriage return (a progress bar's) stays one line, as it is in the job log.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if line.startswith("#!"):
            directive = line[2:].strip()
            # `#! source: URL` names the real log the window was cut from: no expectation.
            if not directive.startswith("source:"):
                waiting.append(_expectation(directive, number))
            continue
        kept.append(line)
        if waiting:
            expectations[len(kept)] = waiting
            waiting = []
    return ("\n".join(kept) + "\n").encode(), expectations


def _expectation(directive: str, number: int) -> Expectation:
    kind, _, rest = directive.partition(":")
    words = shlex.split(rest)
    if kind.strip() not in ("match", "ok") or not words:
        return Expectation(number, "invalid", directive, {})
    captures = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    return Expectation(number, kind.strip(), words[0], captures)


def window_test(window: Path, compiled: CompiledCatalog) -> tuple[int, list[Failure]]:
    # Bytes, decoded: read_text would turn a bare carriage return into a line break.
    with window.open("rb") as file:
        data = file.read(MAX_WINDOW_BYTES + 1)
    if len(data) > MAX_WINDOW_BYTES:
        return 0, [Failure(window, None, f"at most {MAX_WINDOW_BYTES:,} bytes", "more")]
    log, expectations = parse_window(data.decode("utf-8", "replace"))
    result = classify([log], compiled, window.stem, keep_winners=True)
    winners = {line: (sid, caps) for line, sid, caps in result.winners}
    failures: list[Failure] = []
    if not any(
        e.kind == "match" and e.signature_id == window.stem
        for group in expectations.values()
        for e in group
    ):
        failures.append(Failure(window, None, f"a '#! match: {window.stem}' line", "none"))
    checks = 0
    for line, group in expectations.items():
        winner_id, winner_captures = winners.get(line, (None, {}))
        actual = _describe(winner_id, winner_captures)
        for expectation in group:
            checks += 1
            failure = _check(expectation, winner_id, winner_captures)
            if failure:
                failures.append(Failure(window, expectation.directive_line, failure, actual))
    return checks, failures


def _check(expectation: Expectation, winner_id: str | None, captures: dict[str, str]) -> str:
    wanted = _describe(expectation.signature_id, expectation.captures)
    if expectation.kind == "invalid":
        return f"a directive '#! match: ID key=value' or '#! ok: ID', not {wanted!r}"
    if expectation.kind == "ok":
        return (
            f"the next line not to match {expectation.signature_id}"
            if (winner_id == expectation.signature_id)
            else ""
        )
    if winner_id != expectation.signature_id or any(
        captures.get(k) != v for k, v in expectation.captures.items()
    ):
        return f"the next line to match {wanted}"
    return ""
