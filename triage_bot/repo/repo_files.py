"""A repository's own files on its default branch: the config and its signature files.

Listed through the contents API, whose listing gives each file's blob SHA without its
content, and fetched only when that SHA is not in the process's cache: a file is downloaded
once per change, however many triages read it. Everything is bounded: files, folders, bytes.

GitHub refusing to show a file or folder (403: the installation has not accepted the Contents
permission; 404) raises `Unreadable`, which names the path and why, so the caller can go on
with the defaults; 5xx, timeouts and rate limits propagate (the queue tries again later).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from triage_bot.core.cache import Lru
from triage_bot.core.limits import MAX_FILE_BYTES, MAX_FOLDERS, MAX_SIGNATURE_FILES
from triage_bot.github_api.github import ContentFile as ContentEntry
from triage_bot.github_api.github import GitHubClient, GitHubStatusError

SIGNATURE_SUFFIXES = (".yml", ".yaml")

# Blob SHA -> text. A SHA names its content, so one entry serves every repository holding it.
_texts: Lru[str, str] = Lru(512)


@dataclass(frozen=True)
class RepoFile:
    path: str
    sha: str
    text: str | None  # None: not usable, `problem` says why
    problem: str | None = None


class Unreadable(Exception):
    """GitHub refused to show `path` (403 or 404)."""

    def __init__(self, path: str, error: GitHubStatusError) -> None:
        super().__init__(f"{path}: {error}")
        self.path, self.status, self.message = path, error.status, error.message

    @property
    def problem(self) -> str:
        """One line for the comment's footer: what could not be read, and why."""
        if self.status == 403 and "not accessible by integration" in self.message.lower():
            why = "grant the Contents: read permission"  # GitHub's words for a missing one
        else:
            why = self.message.strip()[:200] or "refused"
        return f"the App cannot read {self.path} ({self.status}: {why})"


@contextmanager
def reading(path: str) -> Iterator[None]:
    """Turn GitHub's refusal to show `path` into `Unreadable`."""
    try:
        yield
    except GitHubStatusError as error:
        if error.status not in (403, 404):
            raise
        raise Unreadable(path, error) from error


def clear_cache() -> None:
    _texts.clear()


def github_folder(client: GitHubClient, repo: str, label: str = ".github/") -> list[ContentEntry]:
    """The entries of `.github/` on the default branch ([] when there is none); `label`:
    what a refusal says could not be read (the listing is how the config is found)."""
    with reading(label):
        return client.list_entries(repo, ".github") or []


def read_file(client: GitHubClient, repo: str, entry: ContentEntry) -> RepoFile:
    """The text of a listed file, from the cache when its SHA is there."""
    if entry.size > MAX_FILE_BYTES:
        return RepoFile(entry.path, entry.sha, None, f"larger than {MAX_FILE_BYTES:,} bytes")
    cached = _texts.get(entry.sha) if entry.sha else None
    if cached is not None:
        return RepoFile(entry.path, entry.sha, cached)
    with reading(entry.path):
        blob = client.get_file_blob(repo, entry.path)
    if blob is None:  # deleted between the listing and now
        return RepoFile(entry.path, entry.sha, None, "vanished while being read")
    content = blob.decoded_content
    if len(content) > MAX_FILE_BYTES:  # grown between the listing and now
        return RepoFile(entry.path, blob.sha, None, f"larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return RepoFile(entry.path, blob.sha, None, "not UTF-8 text")
    _texts.put(blob.sha, text)
    return RepoFile(entry.path, blob.sha, text)


def signature_files(
    client: GitHubClient, repo: str, folder: str, github: list[ContentEntry]
) -> tuple[list[RepoFile], list[str]]:
    """Every *.yml (and *.yaml) under `folder`, recursively within the bounds, sorted by path;
    and what the bounds left out. `github`: the listing of `.github/`, which saves a request
    when the folder is under it and absent."""
    folder = folder.strip("/")
    if not _may_exist(folder, github):
        return [], []
    entries, problems = _walk(client, repo, folder)
    wanted = sorted(
        (e for e in entries if e.type == "file" and e.path.endswith(SIGNATURE_SUFFIXES)),
        key=lambda e: e.path,
    )
    if len(wanted) > MAX_SIGNATURE_FILES:
        problems.append(
            f"{folder}: {len(wanted)} signature files; only the first "
            f"{MAX_SIGNATURE_FILES} (by path) are used"
        )
        wanted = wanted[:MAX_SIGNATURE_FILES]
    return [read_file(client, repo, entry) for entry in wanted], problems


def _may_exist(folder: str, github: list[ContentEntry]) -> bool:
    head, _, rest = folder.partition("/")
    if head != ".github" or not rest:
        return True
    child = f".github/{rest.split('/', 1)[0]}"
    return any(entry.path == child and entry.type == "dir" for entry in github)


def _walk(client: GitHubClient, repo: str, folder: str) -> tuple[list[ContentEntry], list[str]]:
    found: list[ContentEntry] = []
    waiting, listed = deque([folder]), 0
    while waiting:
        if listed >= MAX_FOLDERS:
            return found, [f"{folder}: more than {MAX_FOLDERS} folders; the rest are not read"]
        path = waiting.popleft()
        with reading(f"{path}/"):
            entries = client.list_entries(repo, path) or []
        listed += 1
        found.extend(entries)
        waiting.extend(sorted(e.path for e in entries if e.type == "dir"))
    return found, []
