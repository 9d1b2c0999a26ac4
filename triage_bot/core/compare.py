"""What is new in a failing log, compared with a passing run of the same job.

A failing job's log is mostly the same as the last passing one: the lines a passing run also
printed (a warning, a retried download, an exception a test expects) are not the cause. Lines
are compared after `normalise`, which blanks what differs between two runs of the same job
and says nothing about the failure: timestamps, durations, hex ids and SHAs, temporary paths,
ports, process ids, progress counters and sizes. Numbers that carry meaning stay (`Failures:
1` is not `Failures: 0`), so a normalised line only matches a line that said the same thing.

`PassingLog` reads the passing log as it streams and keeps one 64-bit hash per distinct
normalised line, sorted in a numpy array: 8 bytes a line, so the `MAX_DISTINCT_LINES` cap of
1 Mi lines is 8 MiB whatever the log's size (a Python set of ints would take ~60 bytes a line).
A log with more distinct lines keeps its first 1 Mi: a line past the cap counts as new, which
can only leave a line in view, never hide one. A false match needs two different lines with
the same 64-bit hash: about 1 in 10^13 per lookup at the cap.

`PassingFile` is the other way round, for a passing log that can be read again (a file): it
is read only once the failing log is classified, and only for the lines the classifier asks
about (a few thousand at most). Each asked line's words that survive normalisation verbatim
(the longest one the anchor) are looked for in the raw passing log by the prefilter engine; only
the lines holding every such word are normalised and hashed. Triage reads the failing log
once, the passing log is scanned for a few literals: what reading every line of the passing
log through the catalog's triggers cost (as much again as the triage) is gone.

Pure: no GitHub, no files beyond `save`/`load` (the App's cache of passing logs keeps the
hashes, not the log) and the chunks `PassingFile` is handed; the classifier asks `has_many`
of the lines it reports, once, when the failing log is read.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import regex

from triage_bot.core import cache, logs
from triage_bot.core.engine import Trigger, build_prefilter, choose_engine

MAX_DISTINCT_LINES = 1 << 20
# Hashes gathered before they are sorted and merged into the set (bounds the working memory).
BATCH_LINES = 1 << 16
MAX_LINE_CHARS = 4096  # a longer line is compared on its first 4 Ki characters
# Changes whenever `normalise` does: hashes saved by another version are of other lines.
NORMALISE_VERSION = 2

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


class PassingLog:
    """The normalised lines of a passing log, fed in chunks of any size (see the module doc)."""

    def __init__(self, max_lines: int = MAX_DISTINCT_LINES) -> None:
        self.max_lines = max_lines
        self.lines = 0  # lines read
        self.truncated = False  # distinct lines past max_lines were not kept
        self._known = np.empty(0, dtype=np.uint64)
        self._batch: list[int] = []
        self._rest = b""

    @classmethod
    def from_chunks(cls, chunks: Iterable[bytes]) -> PassingLog:
        passing = cls()
        for chunk in chunks:
            passing.feed(chunk)
        passing.finish()
        return passing

    def save(self, path: Path) -> None:
        """Write the kept hashes to `path` (numpy's .npz, uncompressed: hashes do not
        compress), atomically: a reader sees the old file or the new one, never half of one."""
        self.finish()
        meta = np.array([self.lines, int(self.truncated), self.max_lines], dtype=np.uint64)
        saved = io.BytesIO()  # at most 8 MiB of hashes
        np.savez(saved, hashes=self._known, meta=meta)
        cache.write_atomically(path, saved.getvalue())

    @classmethod
    def load(cls, path: Path) -> PassingLog:
        """A passing log written by `save`. Raises OSError when `path` cannot be read and
        ValueError when it does not hold a saved passing log (truncated, altered, foreign)."""
        try:
            with np.load(path, allow_pickle=False) as saved:
                hashes, meta = saved["hashes"], saved["meta"]
        except OSError as error:
            if path.is_file():  # numpy says OSError for a file that is not .npz
                raise ValueError(f"{path}: not a saved passing log ({error})") from None
            raise
        except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a saved passing log ({error!r})") from None
        if meta.dtype != np.uint64 or meta.shape != (3,):
            raise ValueError(f"{path}: not a saved passing log (its header)")
        lines, truncated, max_lines = (int(value) for value in meta)
        if hashes.dtype != np.uint64 or hashes.ndim != 1 or hashes.size > max_lines:
            raise ValueError(f"{path}: not a saved passing log (its hashes)")
        if hashes.size > 1 and not bool(np.all(hashes[1:] > hashes[:-1])):
            raise ValueError(f"{path}: not a saved passing log (hashes out of order)")
        passing = cls(max_lines)
        passing.lines, passing.truncated, passing._known = lines, bool(truncated), hashes
        return passing

    @property
    def distinct(self) -> int:
        """Distinct normalised lines kept."""
        return int(self._known.size)

    def feed(self, chunk: bytes) -> None:
        data = self._rest + chunk
        end = data.rfind(b"\n") + 1
        self._rest = data[end:]
        if end:
            self._add_lines(data[:end])

    def finish(self) -> None:
        if self._rest:
            self._add_lines(self._rest)
            self._rest = b""
        self._merge()

    def has(self, text: str) -> bool:
        """Whether the passing log printed `text` (a line, with or without its timestamp and
        colour codes), once both are normalised."""
        return self.has_many([text])[0]

    def has_many(self, texts: list[str]) -> list[bool]:
        """`has` of each of `texts` (lines without a newline), normalised together: each
        pattern runs once over them all, in C, instead of once per line."""
        if not texts:
            return []
        normalised = normalise_lines(texts)
        wanted = np.fromiter((line_hash(line) for line in normalised), dtype=np.uint64)
        return [bool(value) for value in self._known_among(wanted)]

    def _known_among(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        """Which of `hashes` the set holds, by binary search in the sorted set."""
        at = np.searchsorted(self._known, hashes)
        inside = at < self._known.size
        known = np.zeros(hashes.size, dtype=bool)
        known[inside] = self._known[at[inside]] == hashes[inside]
        return known

    def _add_lines(self, block: bytes) -> None:
        # Normalised a block at a time: each pattern runs once over many lines, in C.
        text = block.decode("utf-8", "replace")
        for line in normalise(text).split("\n"):
            self.lines += 1
            if line:
                self._batch.append(line_hash(line[:MAX_LINE_CHARS]))
        self.lines -= 1 if text.endswith("\n") else 0  # the split's last, empty piece
        if len(self._batch) >= BATCH_LINES:
            self._merge()

    def _merge(self) -> None:
        if not self._batch:
            return
        fresh = np.unique(np.fromiter(self._batch, dtype=np.uint64, count=len(self._batch)))
        self._batch.clear()
        # The hashes not known yet, found by binary search: union1d would concatenate and
        # sort the whole set again for each batch (O(n log n) and several copies of 8 MiB).
        new = fresh[~self._known_among(fresh)]
        room = self.max_lines - self._known.size
        if new.size > room:
            # Keep what was known and as many of the new lines as fit (the batch that
            # crosses the cap gives an arbitrary part of its own).
            new = new[: max(room, 0)]
            self.truncated = True
        if new.size:
            # One array of the merged size, still sorted: each run of new hashes goes in at
            # its place, in order.
            self._known = np.insert(self._known, np.searchsorted(self._known, new), new)


class PassingLines(Protocol):
    """What the classifier asks of a passing run: which of these lines it printed."""

    def has_many(self, texts: list[str]) -> list[bool]: ...


class PassingUnreadable(Exception):
    """The passing log could not be read when it was asked about: no comparison (a note)."""


# What normalise puts in place of the noise (no raw line holds these as they stand), and what
# cannot be looked for: what decoding put for bytes that are not UTF-8 (the raw line holds
# the bytes), and NUL (Hyperscan takes patterns as C strings).
_NOT_VERBATIM = regex.compile(r"<(?:time|tmp|uuid|hex|port|pid|dur|size|pct|n)>|[\x00\ufffd]+")
# A run shorter than this is too common to look for (the anchor); a word shorter than
# MIN_CHECKED_BYTES too common to be worth checking; a longer run is looked for by its start.
MIN_ANCHOR_BYTES = 3
MIN_CHECKED_BYTES = 4
_SPACE = ord(" ")
# Hits of an anchor whose lines are all found after which it is no longer looked for.
REBUILD_HITS = 1000
MAX_ANCHOR_BYTES = 16  # longer ones cost Hyperscan's compile more than they save
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
        for block in _line_blocks(self._chunks()):
            kept = lookout.lines_to_normalise(block)
            if kept:
                self.lines_normalised += len(kept)
                lookout.found_lines(normalise_lines(kept))
                if lookout.done:
                    break  # the rest of the log cannot change an answer
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
        # An anchor whose lines are all found is no longer looked for once it was hit often
        # (`Finished release profile`, on every build): a hit costs a few microseconds of
        # Python, compiling the rest anew ~30 ms for a thousand anchors.
        if any(
            hits >= REBUILD_HITS and self._all_found(asks)
            for hits, (_anchor, asks) in zip(self._hits, self._asked, strict=True)
        ):
            self._look_for({a: asks for a, asks in self._asked if not self._all_found(asks)})

    def _all_found(self, asks: list[_Asked]) -> bool:
        return all(one.hash in self.found for one in asks)

    def lines_to_normalise(self, block: bytes) -> list[str]:
        """The lines of `block` (whole lines) that hold an anchor and every checked word of
        a line asked with it, each once (colour codes and the timestamp cut, as the
        classifier reports lines)."""
        at_lines: dict[int, set[int]] = {}  # anchor indexes by the start of their line
        for end, index in self._prefilter.scan_ids(block):
            at_lines.setdefault(block.rfind(b"\n", 0, end) + 1, set()).add(index)
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


def _line_blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` as blocks of whole lines, each ending with a newline; a line longer than
    MAX_LINE_BYTES is cut there (the classifier reads no more of it)."""
    carry = b""
    skipping = False  # in the rest of a line cut short
    for chunk in chunks:
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk, skipping = chunk[newline + 1 :], False
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut] if cut < len(data) else data
        carry = data[cut:]
        if len(carry) > MAX_LINE_BYTES:
            yield carry[:MAX_LINE_BYTES] + b"\n"
            carry, skipping = b"", True
    if carry:
        yield carry + b"\n"
