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

Pure: no GitHub, no files beyond `save`/`load` (the App's cache of passing logs keeps the
hashes, not the log); the classifier asks `has` or `has_many` of the lines it reports.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import regex

from triage_bot.core import cache

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
        joined = "\n".join(text[:MAX_LINE_CHARS].replace("\n", " ") for text in texts)
        normalised = normalise(joined).split("\n")
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
