"""What a job handler is: the contract between the queue (queue.py) and the code that does
a job's work, and which handler runs.

A handler is called as `handler(payload, context)` and returns the report (a JSON-ready dict)
for triage jobs, or None. It raises PermanentJobError for a failure no retry cures, and
RetryLater (or any error with a numeric `retry_in`) to be run again later without using an
attempt. The handler is looked up when a job runs: `set_handler(callable_or_"module:name")`,
default `triage_bot.service.handler:handle_job`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triage_bot.config import Settings
from triage_bot.store.store import Store

DEFAULT_HANDLER = "triage_bot.service.handler:handle_job"


class PermanentJobError(Exception):
    """Raised by a handler for a failure that retrying cannot cure (e.g. the repo is gone)."""


class RetryLater(Exception):
    """Raised by a handler to run the job again in `retry_in` seconds, not as a failure.

    Any exception with a numeric `retry_in` attribute is treated the same way, which is how
    the GitHub client's RateLimited reaches the queue without it knowing about it: a long
    rate-limit wait is spent in the queue's schedule, not holding a worker thread.
    """

    def __init__(self, retry_in: float, reason: str = "deferred") -> None:
        super().__init__(f"{reason}: run again in {retry_in:.0f}s")
        self.retry_in = retry_in


@dataclass(frozen=True)
class JobContext:
    """What a handler gets beside the payload."""

    job_id: str
    attempt: int  # 1 for the first run
    store: Store
    settings: Settings | None
    dry_run: bool  # render and log the comment, post nothing
    lease_lost: threading.Event  # set when another worker took the job over (rare)
    # False on the try at the end of the outage budget (queue.py): a log its host still will
    # not serve is then noted in the comment, instead of LogsUnavailable putting the job off.
    logs_may_wait: bool = True


# handler(payload, context) -> the report (a JSON-ready dict) for triage jobs, or None.
Handler = Callable[[dict[str, Any], JobContext], "dict[str, Any] | None"]

_handler: Handler | str = DEFAULT_HANDLER


def set_handler(handler: Handler | str) -> None:
    """Register the job handler: a callable, or "module:name" to import when a job runs."""
    global _handler
    _handler = handler


def resolve_handler(handler: Handler | str | None = None) -> Handler:
    """The callable for `handler` (default: the registered one); ImportError says which."""
    chosen = _handler if handler is None else handler
    if callable(chosen):
        return chosen
    module_name, _, name = chosen.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise ImportError(f"job handler {chosen!r} cannot be loaded: {error}") from error
    if not callable(found):
        raise ImportError(f"job handler {chosen!r} is not callable")
    return found  # type: ignore[no-any-return]
