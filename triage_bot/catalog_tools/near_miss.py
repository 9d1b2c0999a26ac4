"""A job log full of near misses, made from the catalog's own words, and what it costs.

Big jobs print, on nearly every line, names that hold the words failures are told by:
pytest's progress (`tests/timeouts/test_failed_login.py::test_error_path PASSED`), packages
(`errorhandler-utils`, `failsafe-retry`), CMake targets (`Building CXX object
src/errors/CMakeFiles/oom_guard.dir/no_space.cpp.o`), compiler commands thousands of
characters long, and progress bars. None of these lines is a failure, but a trigger that is
a bare word finds them all and hands each to its signature's regex. The words are taken from
the catalog's keywords, weighted by how many signatures use them, so the log follows the
catalog as it grows. Everything is drawn from a seeded generator: the same catalog and seed
give the same bytes (`bench/classify.py --shape near-miss` times the classifier on it;
`catalog lint` warns of a signature whose triggers pass too many of its lines).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from triage_bot.core import logs
from triage_bot.core.catalog import Catalog, Signature
from triage_bot.core.classify import CompiledCatalog

# The words a name is told by: a capitalised or lower-case run, or an upper-case one
# (`ModuleNotFoundError` gives Module, Not, Found, Error; `SIGSEGV` stays whole).
_WORD = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])")
_MIN_WORD = 3
# The other half of a name: ordinary words a test or package is about.
_PLAIN = (  # noqa: SIM905 (a list of 49 quoted words reads worse)
    "login path modes guard space utils retry handler parser client cache config session token "
    "upload download stream buffer worker queue schedule render layout index query user "
    "account billing report export import migrate sync backup restore metrics probe socket "
    "request response codec format limit quota policy router kernel tensor shard"
).split(" ")
LINES_PER_STEP = 2000
# The share of lines of each shape, in per cent (the rest is pytest's progress).
_SHARES = (("pip", 14), ("cmake", 12), ("long", 2), ("logging", 6), ("dots", 4))
LONG_LINE_CHARS = (2000, 12000)
PLANTED_FAILURES = 20
# The seed `catalog lint` measures with, and the bench's default: the same log for both.
SEED = 13
_GREEN = "\x1b[32m"
_RESET = "\x1b[0m"


def catalog_words(catalog: Catalog) -> tuple[list[str], list[int]]:
    """The words of the catalog's keywords, each weighted by the number of signatures whose
    keywords hold it: the failure words (`error`, `failed`, `timeout`) weigh most."""
    counts: Counter[str] = Counter()
    for signature in catalog.signatures:
        words = {
            word.lower()
            for keyword in (*signature.keywords, *signature.any_keywords)
            for word in _WORD.findall(keyword)
            if len(word) >= _MIN_WORD and word.lower() not in _FUNCTION_WORDS
        }
        counts.update(words)
    ordered = sorted(counts)  # a stable order, for a stable log from one seed
    return ordered, [counts[word] for word in ordered]


def failure_windows(catalog: Catalog) -> list[list[str]]:
    """The catalog's `.log` windows (real job logs around a failure), `#!` lines left out,
    in the order of the signatures' ids."""
    windows = []
    for signature in sorted(catalog.signatures, key=lambda s: s.id):
        window = _window_lines(signature.path.with_suffix(".log"))
        if window:
            windows.append(window)
    return windows


def _window_lines(path: Path) -> list[str]:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.split("\n") if line and not line.startswith("#!")]


# English function words: in a keyword's phrase (`could not find the`), never in a name.
_FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905
        "the and for with from this that your are was were has have had but while when such "
        "than then after into onto its our you all any can did does"
    ).split(" ")
)
# Names are drawn once into pools this large, then picked from them (as a real job repeats
# its names); drawing each name afresh costs the generator five times as much.
_POOL = 4096


class _Names:
    """Names made of a catalog word and a plain word, in the cases code uses."""

    def __init__(self, rng: random.Random, words: list[str], weights: list[int]) -> None:
        self.rng = rng
        self._words = words
        self._cumulative = list(accumulate(weights))
        self.snakes = [self._snake() for _ in range(_POOL)]
        self.camels = [self._camel() for _ in range(_POOL)]
        self.packages = [self._package() for _ in range(_POOL)]
        self.folders = [self._folder() for _ in range(_POOL)]
        self.params = [self._param() for _ in range(_POOL)]

    def _word(self) -> str:
        return self.rng.choices(self._words, cum_weights=self._cumulative)[0]

    def _plain(self) -> str:
        return self.rng.choice(_PLAIN)

    def _snake(self) -> str:
        """`failed_login`, `oom_guard`, `error_path`."""
        pair = [self._word(), self._plain()]
        self.rng.shuffle(pair)
        return "_".join(pair)

    def _camel(self) -> str:
        """`ErrorHandler`, `TimeoutRetry`."""
        return self._word().capitalize() + self._plain().capitalize()

    def _package(self) -> str:
        """`errorhandler-utils`, `failsafe-retry`."""
        return f"{self._word()}{self._plain()}-{self.rng.choice([self._plain(), self._word()])}"

    def _folder(self) -> str:
        """`timeouts/`, `errors/`, `failure_modes/`."""
        return self.rng.choice([f"{self._word()}s/", f"{self._snake()}/"])

    def _param(self) -> str:
        """A test's parameters: `[TIMEOUT-3]`, `[error_path]`."""
        if self.rng.random() < 0.5:
            return f"[{self._word().upper()}-{self.rng.randrange(10)}]"
        return f"[{self._snake()}]"

    def snake(self) -> str:
        return self.rng.choice(self.snakes)

    def camel(self) -> str:
        return self.rng.choice(self.camels)

    def package(self) -> str:
        return self.rng.choice(self.packages)

    def folder(self) -> str:
        return self.rng.choice(self.folders)

    def param(self) -> str:
        return self.rng.choice(self.params)


class NearMissLog:
    """A job log of near misses, as GitHub Actions prints it, made block by block."""

    def __init__(self, catalog: Catalog, seed: int = SEED, failures: int = 0) -> None:
        words, weights = catalog_words(catalog)
        self.rng = random.Random(seed)
        self.names = _Names(self.rng, words, weights)
        windows = failure_windows(catalog) if failures else []
        self.planted = self.rng.sample(windows, min(failures, len(windows)))
        self._shapes = [shape for shape, share in _SHARES for _ in range(share)]
        self._second = 0
        self._line = 0

    def blocks(self, size: int) -> Iterator[bytes]:
        """About `size` bytes of log, as blocks of whole lines; the planted failures (if
        any) spread evenly through it."""
        written = 0
        due = [size * (k + 1) // (len(self.planted) + 1) for k in range(len(self.planted))]
        planted = list(self.planted)
        while written < size:
            lines = self._step_lines()
            if due and written >= due[0]:
                due.pop(0)
                at = self.rng.randrange(1, len(lines))
                lines[at:at] = [f"{self._stamp()} {line}" for line in planted.pop(0)]
            block = ("\n".join(lines) + "\n").encode()
            written += len(block)
            yield block

    def lines(self, count: int) -> bytes:
        """The first `count` lines (no failure planted in them: a sample of near misses)."""
        out: list[str] = []
        while len(out) < count:
            out.extend(self._step_lines())
        return ("\n".join(out[:count]) + "\n").encode()

    def _stamp(self) -> str:
        second = self._second
        return (
            f"2026-10-21T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
            f".{self.rng.randrange(10**7):07d}Z"
        )

    def _step_lines(self) -> list[str]:
        """One step of the job: its `##[group]Run` line, then LINES_PER_STEP of output."""
        self._second += 1
        lines = [f"{self._stamp()} ##[group]Run step {self._second}"]
        for _ in range(LINES_PER_STEP - 1):
            self._line += 1
            if self._line % 200 == 0:
                self._second += 1
            lines.append(f"{self._stamp()} {self._text()}")
        return lines

    def _text(self) -> str:
        roll = self.rng.randrange(100)
        shape = self._shapes[roll] if roll < len(self._shapes) else "pytest"
        return _SHAPES[shape](self)

    def pytest(self) -> str:
        names, rng = self.names, self.rng
        test = f"{names.folder()}test_{names.snake()}.py::"
        if rng.random() < 0.4:
            test += f"Test{names.camel()}::"
        test += f"test_{names.snake()}"
        if rng.random() < 0.4:
            test += names.param()
        pad = " " * max(1, 88 - len(test))
        return f"{test} {_GREEN}PASSED{_RESET}{pad}[{rng.randrange(101):3d}%]"

    def dots(self) -> str:
        names, rng = self.names, self.rng
        dots = "." * rng.randrange(5, 60)
        return f"tests/{names.folder()}test_{names.snake()}.py {dots} [{rng.randrange(101):3d}%]"

    def pip(self) -> str:
        names, rng = self.names, self.rng
        package = names.package()
        version = f"{rng.randrange(5)}.{rng.randrange(20)}.{rng.randrange(10)}"
        wheel = package.replace("-", "_")
        done = rng.randrange(1, 400) / 10
        choices = (
            f"Collecting {package}=={version}",
            f"  Downloading {wheel}-{version}-py3-none-any.whl.metadata ({done} kB)",
            f"   {'━' * 40} {done}/{done} MB {rng.randrange(1, 90)}.{rng.randrange(10)} MB/s "
            f"eta 0:00:00",
            f"\x1b[?25l   \x1b[90m{'━' * rng.randrange(1, 40)}\x1b[0m \x1b[32m{done}/"
            f"{done * 2:.1f} MB\x1b[0m \x1b[31m{rng.randrange(90)}.{rng.randrange(10)} MB/s"
            f"\x1b[0m eta \x1b[36m0:00:0{rng.randrange(10)}\x1b[0m",
            f"Requirement already satisfied: {package} in ./.venv/lib/python3.11/site-packages "
            f"(from {names.package()}) ({version})",
            f"  Building wheel for {package} (pyproject.toml): finished with status 'done'",
        )
        return rng.choice(choices)

    def cmake(self) -> str:
        names, rng = self.names, self.rng
        target = names.snake()
        percent = f"[{rng.randrange(101):3d}%]"
        choices = (
            f"{percent} Building CXX object src/{names.folder()}CMakeFiles/{target}.dir/"
            f"{names.snake()}.cpp.o",
            f"{percent} Building C object src/{names.folder()}CMakeFiles/{target}.dir/"
            f"{names.snake()}.c.o",
            f"{percent} Linking CXX static library lib{target}.a",
            f"{percent} Built target {target}",
        )
        return rng.choice(choices)

    def logging(self) -> str:
        names, rng = self.names, self.rng
        level = rng.choice(("INFO", "DEBUG", "INFO", "INFO"))
        return (
            f"{level} [{names.snake()}.{names.snake()}:{rng.randrange(1, 900)}] "
            f"{names.camel()} ready in {rng.randrange(1, 999)} ms"
        )

    def long(self) -> str:
        """A compiler command or a list of installed packages, 2,000 to 12,000 characters."""
        names, rng = self.names, self.rng
        length = rng.randrange(*LONG_LINE_CHARS)
        # Drawn in a batch more than long enough (no name is under 12 characters), then cut
        # to the length wanted.
        count = length // 12 + 1
        if rng.random() < 0.5:
            flags = [
                f"-I/src/{folder}include -D{snake.upper()}=1 -isystem /deps/{package}/include"
                for folder, snake, package in zip(
                    rng.choices(names.folders, k=count // 3 + 1),
                    rng.choices(names.snakes, k=count // 3 + 1),
                    rng.choices(names.packages, k=count // 3 + 1),
                    strict=True,
                )
            ]
            head = "/usr/bin/c++ " + " ".join(flags)
            head = head[: head.rfind(" -", 0, length)]
            return f"{head} -c /src/{names.folder()}{names.snake()}.cpp"
        installed = " ".join(
            f"{p}-{rng.randrange(5)}.0" for p in rng.choices(names.packages, k=count)
        )
        return "Successfully installed " + installed[: installed.rfind(" ", 0, length)]


_SHAPES = {
    "pytest": NearMissLog.pytest,
    "dots": NearMissLog.dots,
    "pip": NearMissLog.pip,
    "cmake": NearMissLog.cmake,
    "logging": NearMissLog.logging,
    "long": NearMissLog.long,
}


@dataclass
class RegexReach:
    """Of a log's lines, those the prefilter passes on to a signature's regex."""

    lines: int = 0
    reaching: int = 0  # lines that reach at least one regex
    # Lines decoded at all: those, and those holding an error word (scored as best guesses)
    # or a step's end or marker (ranking.py's literals, not the signatures').
    decoded: int = 0
    searches: int = 0  # (line, signature) pairs: the regex searches at most
    by_signature: Counter[str] = field(default_factory=Counter)

    def add(self, other: RegexReach) -> None:
        self.lines += other.lines
        self.reaching += other.reaching
        self.decoded += other.decoded
        self.searches += other.searches
        self.by_signature.update(other.by_signature)


def regex_reach(compiled: CompiledCatalog, block: bytes) -> RegexReach:
    """Which lines of a block of whole lines reach which signatures' regexes (and which are
    decoded), decided as the classifier decides it (classify.JobClassifier._examine_line):
    the scan finds the lines holding a trigger, the stripped line says which triggers it
    holds, and a signature whose keywords the line holds is tried."""
    reach = RegexReach(lines=block.count(b"\n"))
    for start, known in compiled.lines_found(block).items():
        end = block.find(b"\n", start)
        raw = block[start : len(block) if end < 0 else end]
        clean = logs.strip_ansi(raw)
        present = compiled.triggers_in(raw, clean, known)
        candidates = compiled.regex_candidates(clean, present)
        if candidates or not present.isdisjoint(compiled.decoded_anyway):
            reach.decoded += 1
        if candidates:
            reach.reaching += 1
            reach.searches += len(candidates)
            reach.by_signature.update(s.id for s in candidates)
    return reach


# `catalog lint` warns of a signature that reaches its regex on more lines of the near-miss
# log than this share (1 in 10,000), measured on a sample of this many lines: enough for the
# share to mean a few lines (more than 3), small enough to keep lint fast (0.3 s).
TOO_COMMON = 1 / 10_000
SAMPLE_LINES = 30_000


def too_common(signatures: Sequence[Signature], sample: bytes) -> dict[str, int]:
    """The signatures whose triggers (and keywords) pass more than TOO_COMMON of the sample's
    lines on to their regex, with how many lines they do."""
    if not signatures:
        return {}
    compiled = CompiledCatalog(Catalog(tuple(signatures)))
    reach = regex_reach(compiled, sample)
    return {
        signature_id: count
        for signature_id, count in sorted(reach.by_signature.items())
        if count > reach.lines * TOO_COMMON
    }
