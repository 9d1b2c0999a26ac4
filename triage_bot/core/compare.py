"""What is new in a failing log, compared with a passing run of the same job.

A failing job's log is mostly the same as the last passing one: the lines a passing run also
printed (a warning, a retried download, an exception a test expects) are not the cause. Lines
are compared after `normalise`, which blanks what differs between two runs of the same job
and says nothing about the failure: timestamps, durations, hex ids and SHAs, temporary paths,
ports, process ids, progress counters and sizes. Numbers that carry meaning stay (`Failures:
1` is not `Failures: 0`), so a normalised line only matches a line that said the same thing.

The passing log is read after the failing one is classified, and only for the lines the
classifier asks about (its matches, annotations and best-guess lines: a few thousand at
most), by `PassingFile`. Each asked line is looked for in the raw passing log by one literal
(`_anchored`: a 16-byte window of its text between placeholders, one that few other asked
lines share), in one scan of the prefilter engine; a line holding it and every word of the
asked line is normalised and its hash compared. So a 1 GiB passing log costs one literal scan
and a few hundred normalised lines, where normalising it whole would take minutes. An asked
line is answered "also printed" only when a passing line normalises to exactly it (a 64-bit
hash: a false match about 1 in 10^16 per pair); a line missed (padding that moved with a
number inside the literal) counts as new, left in view, never hidden.

Pure: no GitHub, no files: `PassingFile` is handed a function that gives the log's chunks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import regex

from triage_bot.core import logs
from triage_bot.core.engine import Trigger, build_prefilter, choose_engine

MAX_LINE_CHARS = 4096  # a longer line is compared on its first 4 Ki characters

# Each (pattern, replacement) blanks one kind of run-to-run noise. Order matters: timestamps
# before durations and numbers, paths before hex ids.
_NOISE: tuple[tuple[regex.Pattern[str], str], ...] = tuple(
    (regex.compile(pattern, flags), replacement)
    for pattern, replacement, flags in (
        # GitHub's per-line timestamp and colour codes (the classifier reports lines without).
        (r"^\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?", "", regex.M),
        (r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]", "", 0),
        # A progress line redrawn with \r: the last drawing is what the terminal showed.
        (r"\r+$", "", regex.M),
        (r"^[^\n]*\r(?=[^\r\n])", "", regex.M),
        (r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?", "<time>", 0),
        (r"\b\d{1,2}:\d\d:\d\d(?:[.,]\d+)?\b", "<time>", 0),
        (
            r"(?i)(?:/tmp|/var/tmp|/private/var/folders|/var/folders|/home/runner/work/_temp"
            r"|[a-z]:\\users\\[^\\\s]+\\appdata\\local\\temp)[/\\][^\s'\":,)\]]*",
            "<tmp>",
            0,
        ),
        (r"\btmp[a-z0-9_]{6,}\b", "<tmp>", 0),
        (r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>", 0),
        (r"(?i)\b0x[0-9a-f]+\b", "<hex>", 0),
        (r"(?i)\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", "<hex>", 0),
        (
            r"(?i)\b(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|\d+\.\d+\.\d+\.\d+):\d{2,5}\b",
            r"\1:<port>",
            0,
        ),
        (r"(?i)\b(pid|process|thread)([ =:#]*)\d+", r"\1\2<pid>", 0),
        (r"\b([A-Za-z_][\w.-]*)\[\d+\]", r"\1[<pid>]", 0),  # python[1234], java[99]
        (
            r"(?i)\b\d+(?:\.\d+)?[ \t]?(?:ns|µs|us|ms|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b"
            r"|\b\d+m\d+(?:\.\d+)?s\b",
            "<dur>",
            0,
        ),
        (r"(?i)\b\d+(?:\.\d+)?[ \t]?(?:[kmgt]i?b|bytes|b)(?:/s)?\b", "<size>", 0),
        (r"\d+(?:\.\d+)?[ \t]?%", "<pct>", 0),
        (r"\b\d+[ \t]?/[ \t]?\d+\b", "<n>/<n>", 0),  # [12/345], 3/10 steps
        (r"#\d+\b", "#<n>", 0),
        (r"[ \t]+", " ", 0),
        (r"^ | $", "", regex.M),
    )
)


def normalise(text: str) -> str:
    """`text` (one line, or several) with the run-to-run noise blanked; see the module doc."""
    for pattern, replacement in _NOISE:
        text = pattern.sub(replacement, text)
    return text


def normalise_lines(texts: list[str]) -> list[str]:
    """Each of `texts` (one line each, as the classifier reports it) normalised, all at once:
    each pattern runs once over them all, in C, instead of once per line."""
    if not texts:
        return []
    joined = "\n".join(text[:MAX_LINE_CHARS].replace("\n", " ") for text in texts)
    return normalise(joined).split("\n")


def line_hash(normalised: str) -> int:
    digest = hashlib.blake2b(normalised.encode("utf-8", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class PassingLines(Protocol):
    """What the classifier asks of a passing run: which of these lines it printed."""

    def has_many(self, texts: list[str]) -> list[bool]: ...


class PassingUnreadable(Exception):
    """The passing log could not be read when it was asked about: no comparison (a note)."""


# What normalise puts in place of the noise (no raw line holds these as they stand), and what
# cannot be looked for: what decoding put for bytes that are not UTF-8 (the raw line holds
# the bytes), and NUL (Hyperscan takes patterns as C strings).
_NOT_VERBATIM = regex.compile(r"<(?:time|tmp|uuid|hex|port|pid|dur|size|pct|n)>|[\x00\ufffd]+")
# An anchor is a window of MIN_ANCHOR_BYTES to MAX_ANCHOR_BYTES of an asked line (shorter is
# too common to look for; longer costs Hyperscan's compile more than it saves); a word
# shorter than MIN_CHECKED_BYTES is too common to be worth checking on a hit line.
MIN_ANCHOR_BYTES = 3
MAX_ANCHOR_BYTES = 16
MIN_CHECKED_BYTES = 4
_SPACE = ord(" ")
# Hits of an anchor whose lines are all found after which it is no longer looked for.
REBUILD_HITS = 1000
# Lines of the passing log looked at, remembered so that a line printed again (a third of a
# real log's lines) is looked at once: 8 bytes of hash each in a set, ~5 MiB at most.
MAX_SEEN_LINES = 1 << 16
# A line longer than this is looked at on its first bytes (the classifier reads as much).
MAX_LINE_BYTES = 64 * 1024


@dataclass(frozen=True)
class _Asked:
    """One asked line: its normalised hash and the words a raw line printing it holds."""

    hash: int
    words: tuple[bytes, ...]


class PassingFile:
    """A passing log read when the classifier asks about lines, not before (see the module
    doc). `chunks` gives the log from its start each time it is called; it may raise
    PassingUnreadable (a broken file), which `has_many` passes on."""

    def __init__(self, chunks: Callable[[], Iterable[bytes]], engine: str | None = None) -> None:
        self._chunks = chunks
        self._engine = engine
        self.lines_normalised = 0  # lines of the passing log normalised, over all asks

    def has_many(self, texts: list[str]) -> list[bool]:
        normalised = normalise_lines(texts)
        hashes = [line_hash(line) for line in normalised]
        by_anchor = _anchored(
            {
                hashed: (text[:MAX_LINE_CHARS], line)
                for hashed, text, line in zip(hashes, texts, normalised, strict=True)
            }
        )
        if not by_anchor:
            return [False] * len(texts)  # nothing to look for: every line counts as new
        found = self._scan(by_anchor)
        return [hashed in found for hashed in hashes]

    def _scan(self, by_anchor: dict[bytes, list[_Asked]]) -> set[int]:
        """The hashes of `by_anchor`'s lines the passing log printed."""
        lookout = _Lookout(by_anchor, choose_engine(self._engine))
        for kept in _kept_lines(self._chunks(), lookout):
            if kept:
                self.lines_normalised += len(kept)
                lookout.found_lines(normalise_lines(kept))
                if lookout.done:
                    break  # the rest of the log cannot change an answer
            lookout.forget_found()
        return lookout.found


def _anchored(lines: dict[int, tuple[str, str]]) -> dict[bytes, list[_Asked]]:
    """The asked lines (by hash: as asked, and normalised) by the literal each is looked for
    by: a run of the normalised line between placeholders that the asked line holds as it
    stands (else one of the run's words), cut to MAX_ANCHOR_BYTES; of these the one fewest
    other asked lines share, the longest among those. A run of words points at one line
    (`1 out of 3 tests failed (`), where a word (`tests`) is on a tenth of a log's lines and
    each line holding it would be checked. A line with no literal of MIN_ANCHOR_BYTES is not
    looked for: it counts as new."""
    literals = {hashed: _literals(*texts) for hashed, texts in lines.items()}
    sharing: dict[bytes, int] = {}
    for found in literals.values():
        for literal in set(found):
            sharing[literal] = sharing.get(literal, 0) + 1
    by_anchor: dict[bytes, list[_Asked]] = {}
    for hashed, found in literals.items():
        if not found:
            continue
        anchor = min(found, key=lambda literal: (sharing[literal], -len(literal)))
        words = _verbatim_words(lines[hashed][1])
        checked = tuple(w for w in words if len(w) >= MIN_CHECKED_BYTES and w not in anchor)
        by_anchor.setdefault(anchor, []).append(_Asked(hashed, checked))
    return by_anchor


def _literals(asked: str, normalised: str) -> set[bytes]:
    """What the passing log may be scanned for to find `asked`: the runs of its normalised
    form that it holds as they stand (blanks squeezed by normalise are not: for those, the
    run's words), each cut to MAX_ANCHOR_BYTES. The passing run printed the same line with
    the same blanks, unless padding moved with a number (the line then counts as new)."""
    raw = asked.encode("utf-8", "replace")
    found: set[bytes] = set()
    for run in _verbatim_runs(normalised):
        if run not in raw:
            found.update(word[:MAX_ANCHOR_BYTES] for word in run.split())
            continue
        # A window at each word's start: lines that begin alike differ further on.
        starts = [0, *(at + 1 for at in range(len(run)) if run[at] == _SPACE)]
        found.update(run[at : at + MAX_ANCHOR_BYTES].strip() for at in starts)
    return {literal for literal in found if len(literal) >= MIN_ANCHOR_BYTES}


def _verbatim_runs(normalised: str) -> list[bytes]:
    """The runs of a normalised line between its placeholders (normalise cuts timestamps and
    colour codes, replaces noise with placeholders and squeezes blanks: what is left between
    them is the raw line's own, but for its blanks)."""
    runs = (run.strip() for run in _NOT_VERBATIM.split(normalised))
    return [run.encode("utf-8") for run in runs if run]


def _verbatim_words(normalised: str) -> list[bytes]:
    """The words of a normalised line that any raw line normalising to it holds as they
    stand: those of its runs."""
    return [word.encode("utf-8") for word in _NOT_VERBATIM.sub(" ", normalised).split()]


class _Lookout:
    """What the passing log is scanned with, and what was found of it so far."""

    def __init__(self, by_anchor: dict[bytes, list[_Asked]], engine: str) -> None:
        self._engine = engine
        self._wanted = {one.hash for asks in by_anchor.values() for one in asks}
        self.found: set[int] = set()
        self._seen: set[int] = set()
        self._look_for(by_anchor)

    def _look_for(self, by_anchor: dict[bytes, list[_Asked]]) -> None:
        self._asked = list(by_anchor.items())
        self._hits = [0] * len(self._asked)  # by anchor, since the last compile
        # Colour parts of the anchors too: a line whose anchor colour codes split is found.
        triggers = [Trigger(anchor) for anchor in by_anchor]
        self._prefilter = build_prefilter(triggers, self._engine, persist=False)

    @property
    def done(self) -> bool:
        return len(self.found) == len(self._wanted)

    def found_lines(self, normalised: list[str]) -> None:
        self.found.update(h for h in map(line_hash, normalised) if h in self._wanted)

    def forget_found(self) -> None:
        """Stop looking for the anchors whose lines are all found and that were hit often
        (`Finished release profile`, on every build): a hit costs a few microseconds of
        Python, compiling the rest anew ~20 ms for a thousand anchors."""
        if any(
            hits >= REBUILD_HITS and self._all_found(asks)
            for hits, (_anchor, asks) in zip(self._hits, self._asked, strict=True)
        ):
            self._look_for({a: asks for a, asks in self._asked if not self._all_found(asks)})

    def _all_found(self, asks: list[_Asked]) -> bool:
        return all(one.hash in self.found for one in asks)

    def lines_to_normalise(self, block: bytes, begin: int, end: int) -> list[str]:
        """The lines of block[begin:end] (whole lines) that hold an anchor and every checked
        word of a line asked with it, each once (colour codes and the timestamp cut, as the
        classifier reports lines). The whole block is scanned: a chunk is not copied."""
        at_lines: dict[int, set[int]] = {}  # anchor indexes by the start of their line
        for at, index in self._prefilter.scan_ids(block):
            if begin < at <= end:
                at_lines.setdefault(block.rfind(b"\n", begin, at) + 1 or begin, set()).add(index)
        kept = []
        for start, indexes in at_lines.items():
            raw = block[start : min(block.index(b"\n", start), start + MAX_LINE_BYTES)]
            line = logs.strip_ansi(raw[logs.timestamp_length(raw) :])
            if self._wants(line, indexes):
                kept.append(line.decode("utf-8", "replace"))
        return kept

    def _wants(self, line: bytes, indexes: set[int]) -> bool:
        if -1 in indexes:  # the engine found the line, not which anchor: ask the line
            indexes = self._prefilter.literals_in(line)
        for index in indexes:
            self._hits[index] += 1
        key = hash(line)
        if key in self._seen:
            return False  # a line printed again (a third of a real log's lines)
        if len(self._seen) >= MAX_SEEN_LINES:
            self._seen.clear()
        self._seen.add(key)
        return any(
            one.hash not in self.found and all(word in line for word in one.words)
            for index in indexes
            for one in self._asked[index][1]
        )


def _kept_lines(chunks: Iterable[bytes], lookout: _Lookout) -> Iterator[list[str]]:
    """For each chunk, the lines `lookout` keeps of the lines it completes; a line longer
    than MAX_LINE_BYTES is read on its first MAX_LINE_BYTES (the classifier reads no more)."""
    carry = b""
    for chunk in chunks:
        first = chunk.find(b"\n") + 1
        if not first:
            carry = (carry + chunk)[: MAX_LINE_BYTES + 1]
            continue
        # The line the last chunk began, on its own; then the chunk in place, its lines
        # from `first` to its last newline.
        head = (
            carry[:MAX_LINE_BYTES] + b"\n" if len(carry) > MAX_LINE_BYTES else carry + chunk[:first]
        )
        cut = chunk.rfind(b"\n") + 1
        yield lookout.lines_to_normalise(head, 0, len(head)) + lookout.lines_to_normalise(
            chunk, first, cut
        )
        carry = chunk[cut:]
    if carry:
        last = carry[:MAX_LINE_BYTES] + b"\n"
        yield lookout.lines_to_normalise(last, 0, len(last))
