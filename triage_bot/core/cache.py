"""A small on-disk cache for what is slow to build and cheap to load (the parsed catalog,
Hyperscan databases). A cache that cannot be read or written is simply not used."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    configured = os.environ.get("TRIAGE_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "triage-bot"


def read(name: str) -> bytes | None:
    try:
        return (cache_dir() / name).read_bytes()
    except OSError:
        return None


def write(name: str, data: bytes) -> None:
    target = cache_dir() / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        partial.replace(target)  # atomic: a reader never sees half a file
    except OSError:
        pass  # a read-only home: build every time, still correct
