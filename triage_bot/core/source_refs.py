"""Files and lines named in log lines, mapped to paths inside the repository.

Log lines name source files in a handful of shapes: Python tracebacks
(`File "/path/x.py", line N`), compilers and linters (`path:line:col:`, rustc's
` --> src/x.rs:12:5`, go's `./x.go:12:3:`, pytest's `tests/x.py:42:`) and MSVC
(`path(line,col):`). The path is often absolute on the runner: `/__w/repo/repo/...` in a
container job, `/home/runner/work/repo/repo/...`, `D:\\a\\repo\\repo\\...` on Windows, or a
mount such as `/workspace/ATOM/...`. `candidates` turns it into the repository paths it may
be, best first; which one exists is for the caller to ask GitHub.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A file name ends in an extension of letters (and digits or +, as c++): it keeps times
# (12:30:01), addresses (host:443) and the like out.
_FILE = r"[^\s:\"'()<>,=|`]*[^\s:\"'()<>,=|`.]\.[A-Za-z][A-Za-z0-9+_]{0,11}"
_DRIVE = r"(?:\b[A-Za-z]:[\\/])?"
_PYTHON = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_COLON = re.compile(rf"(?P<path>{_DRIVE}{_FILE}):(?P<line>\d+)(?::\d+)?(?=:|\s|,|\)|$)")
_MSVC = re.compile(rf"(?P<path>{_DRIVE}{_FILE})\((?P<line>\d+)(?:,\d+)?\)")
_SHAPES = (_PYTHON, _COLON, _MSVC)

# Checkouts on GitHub's runners: <work>/<repo>/<repo>/... (the name twice).
_RUNNER_WORK = re.compile(
    r"^(?:/__w|/home/runner/(?:_)?work|/Users/runner/work|[A-Za-z]:/a|[A-Za-z]:/actions-runner/"
    r"_work|/[^/]+(?:/[^/]+)*/_work)/([^/]+)/\1/(?P<rest>.+)$"
)
# A container job's workspace: /github/workspace/..., or a mount such as /workspace/NAME/...
_WORKSPACE = re.compile(r"^(?:/github/workspace|/workspace/[^/]+)/(?P<rest>.+)$")
MAX_LINE = 10_000_000


@dataclass(frozen=True)
class SourceRef:
    path: str  # as the log wrote it
    line: int


def source_refs(text: str) -> list[SourceRef]:
    """The files and lines one log line names, in the order they appear, without repeats."""
    found: list[tuple[int, SourceRef]] = []
    taken: list[tuple[int, int]] = []
    for shape in _SHAPES:
        for match in shape.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue  # a traceback's path also looks like a compiler's: report it once
            line = int(match["line"])
            if 0 < line <= MAX_LINE:
                taken.append(span)
                found.append((span[0], SourceRef(match["path"], line)))
    refs = [ref for _, ref in sorted(found, key=lambda item: item[0])]
    return list(dict.fromkeys(refs))


def candidates(raw: str, repo_name: str) -> list[str]:
    """The repository paths `raw` may stand for, best first; [] when it cannot be one (a
    file of the system or of an installed package is simply never found in the repo)."""
    path = raw.replace("\\", "/")
    while "//" in path:
        path = path.replace("//", "/")
    known = _RUNNER_WORK.match(path) or _WORKSPACE.match(path)
    if known:
        found = [known["rest"]]
    elif _is_absolute(path):
        found = _after_repo_name(path, repo_name)
    else:
        found = [path]
    return [c for c in dict.fromkeys(_clean(c) for c in found) if c]


def _is_absolute(path: str) -> bool:
    return path.startswith("/") or re.match(r"^[A-Za-z]:/", path) is not None


def _after_repo_name(path: str, repo_name: str) -> list[str]:
    """What follows a directory named like the repository, the innermost first."""
    parts = path.split("/")
    wanted = repo_name.lower()
    return [
        "/".join(parts[at + 1 :])
        for at in range(len(parts) - 2, -1, -1)
        if parts[at].lower() == wanted
    ]


def _clean(path: str) -> str:
    """A relative path inside the repository, or "" when it leaves it."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or re.match(r"^[A-Za-z]:$", parts[0]):
        return ""
    return "/".join(parts)
