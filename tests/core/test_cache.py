"""The bounded map behind the per-repository caches: least recently used goes first."""

from __future__ import annotations

from triage_bot.core.cache import Lru


def test_the_least_recently_used_entry_is_dropped_past_the_bound() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0 and cache.get("a") is None
