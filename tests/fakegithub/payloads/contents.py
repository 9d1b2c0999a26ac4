"""Repository contents: one file (base64, as GitHub wraps it) or one directory listing."""

from __future__ import annotations

import base64
import hashlib
import textwrap
from urllib.parse import quote

from ..http_types import JsonObject
from ..models import Repo
from .core import Urls


def git_blob_sha(data: bytes) -> str:
    """The sha git gives this content as a blob, which GitHub reports as the file's sha."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _entry(urls: Urls, repo: Repo, ref: str, path: str, kind: str, data: bytes) -> JsonObject:
    quoted = quote(path)
    sha = git_blob_sha(data) if kind == "file" else hashlib.sha1(path.encode()).hexdigest()
    api = f"{urls.repo_api(repo)}/contents/{quoted}?ref={quote(ref, safe='')}"
    git = f"{urls.repo_api(repo)}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}"
    html = f"{urls.repo_web(repo)}/{'blob' if kind == 'file' else 'tree'}/{ref}/{quoted}"
    return {
        "type": kind,
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "url": api,
        "git_url": git,
        "html_url": html,
        "download_url": f"{urls.repo_web(repo)}/raw/{ref}/{quoted}" if kind == "file" else None,
        "_links": {"self": api, "git": git, "html": html},
    }


def file_payload(urls: Urls, repo: Repo, ref: str, path: str, data: bytes) -> JsonObject:
    # GitHub wraps the base64 text at 60 columns with "\n"; strict decoders must allow that.
    encoded = "\n".join(textwrap.wrap(base64.b64encode(data).decode(), 60)) + "\n"
    return {**_entry(urls, repo, ref, path, "file", data), "content": encoded, "encoding": "base64"}


def directory_payload(
    urls: Urls, repo: Repo, ref: str, folder: str, files: dict[str, bytes]
) -> list[JsonObject]:
    """The direct children of `folder` ("" for the root): files and sub-directories."""
    prefix = f"{folder}/" if folder else ""
    children: dict[str, JsonObject] = {}
    for path, data in sorted(files.items()):
        if not path.startswith(prefix):
            continue
        name, _, deeper = path[len(prefix) :].partition("/")
        child = prefix + name
        if child not in children:
            kind = "dir" if deeper else "file"
            children[child] = _entry(urls, repo, ref, child, kind, b"" if deeper else data)
    return list(children.values())
