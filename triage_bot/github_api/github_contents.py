"""Repository contents through the contents API: files with their blob SHAs, directories.

A mixin of GitHubClient (github_client.py): the blob SHA GitHub reports beside each file and
directory entry is what lets callers cache a file's content and fetch it again only when it
changed (a directory listing gives every entry's SHA without any content).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import quote

from triage_bot.github_api.github_http import Transport

_CONTENTS = "/repos/{owner}/{repo}/contents/{path}"


@dataclass(frozen=True)
class FileBlob:
    content: bytes
    sha: str  # the git blob SHA: equal SHAs, equal content


@dataclass(frozen=True)
class ContentEntry:
    path: str
    type: str  # "file", "dir", "symlink", "submodule"
    sha: str
    size: int


class ContentsMixin:
    _api: Transport

    def get_file(self, repo: str, path: str, ref: str | None = None) -> bytes | None:
        """A file's bytes at `ref` (default branch if None); None if absent or a directory."""
        blob = self.get_file_blob(repo, path, ref)
        return blob.content if blob is not None else None

    def get_file_blob(self, repo: str, path: str, ref: str | None = None) -> FileBlob | None:
        """A file's bytes and blob SHA at `ref` (default branch if None); None if absent or
        not a file."""
        body = self._contents(repo, path, ref)
        if not isinstance(body, dict) or body.get("type") != "file":
            return None
        # GitHub wraps the base64 at 60 columns; the non-validating decoder skips newlines.
        content = base64.b64decode(str(body.get("content") or ""))
        return FileBlob(content, str(body.get("sha") or ""))

    def file_exists(self, repo: str, path: str, ref: str | None = None) -> bool:
        body = self._contents(repo, path, ref)
        return isinstance(body, dict) and body.get("type") == "file"

    def list_directory(self, repo: str, path: str, ref: str | None = None) -> list[str] | None:
        """The paths of a directory's entries at `ref`; None if absent or a file."""
        entries = self.list_entries(repo, path, ref)
        return None if entries is None else [entry.path for entry in entries]

    def list_entries(
        self, repo: str, path: str, ref: str | None = None
    ) -> list[ContentEntry] | None:
        """A directory's entries (path, type, blob SHA, size) at `ref`; None if absent or a
        file."""
        body = self._contents(repo, path, ref)
        if not isinstance(body, list):
            return None
        return [
            ContentEntry(
                str(entry["path"]),
                str(entry.get("type") or ""),
                str(entry.get("sha") or ""),
                int(entry.get("size") or 0),
            )
            for entry in body
        ]

    def _contents(self, repo: str, path: str, ref: str | None) -> object:
        answer = self._api.request(
            "GET",
            f"/repos/{repo}/contents/{quote(path.strip('/'))}",
            endpoint=_CONTENTS,
            params={"ref": ref} if ref else None,
            allow=(404,),
        )
        return None if answer.status_code == 404 else answer.json()
