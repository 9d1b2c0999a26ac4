"""Caches: a small on-disk one for what is slow to build and cheap to load (the parsed
catalog, Hyperscan databases), where a cache that cannot be read or written is simply not
used; and Lru, the bounded map behind what a worker keeps in memory per repository.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Generic, TypeVar

from cachetools import LRUCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


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
        write_atomically(target, data)
    except OSError:
        pass  # a read-only home: build every time, still correct


def write_atomically(target: Path, data: bytes) -> None:
    """Write `data` to `target` so that a reader sees the old file or the new one, never
    half of one (a temporary file of this process and thread, then a rename)."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        partial.write_bytes(data)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


class Lru(Generic[K, V]):
    """A bounded map that a worker's threads share: what a worker keeps per repository
    (setups, file texts, which files exist) stays bounded. cachetools' LRUCache does the
    evicting; it is not thread-safe, so every use holds the lock."""

    def __init__(self, size: int) -> None:
        self._items: LRUCache[K, V] = LRUCache(maxsize=size)
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
