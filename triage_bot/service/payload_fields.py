"""Reading a webhook payload's fields: typed, bounded, or refused with the field's name.

The payload is input from the network. Each reader returns the field's value when it has the
expected type and fits any database column (64-bit integers; text with no NUL character and
no unpaired surrogate, which PostgreSQL refuses), and otherwise raises Refused with a reason
that names the field, which events.decide turns into a "refused" decision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

# Bounds that keep every value storable: database integers are 64-bit and PostgreSQL refuses
# NUL characters and unpaired surrogates in text, so such values are refused here, not there.
MAX_INT = 2**63 - 1
MAX_TEXT = 1000

# GitHub's own rules: owner up to 39 characters, name up to 100, of letters, digits, - _ .
REPO_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")


class Refused(Exception):
    """A field is missing or unfit; the message names it."""


def read_repo(payload: Mapping[str, Any]) -> str:
    return read_full_name(read_obj(payload, "repository"), "repository.full_name")


def read_full_name(obj: Mapping[str, Any], field: str) -> str:
    name = obj.get("full_name")
    if not isinstance(name, str) or not REPO_NAME.fullmatch(name):
        raise Refused(f"{field} must be 'owner/name', got {describe(name)}")
    return name


def read_installation_id(payload: Mapping[str, Any]) -> int | None:
    inst = payload.get("installation")
    if inst is None:
        return None  # webhooks of a repository hook carry none; the worker looks it up
    if not isinstance(inst, Mapping):
        raise Refused(f"installation must be an object, got {describe(inst)}")
    return read_int(inst, "id", "installation.id")


def read_obj(parent: Mapping[str, Any], key: str, field: str | None = None) -> Mapping[str, Any]:
    value = parent.get(key)
    if not isinstance(value, Mapping):
        raise Refused(f"{field or key} must be an object, got {describe(value)}")
    return value


def read_str(parent: Mapping[str, Any], key: str, field: str | None = None) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise Refused(f"{field or key} must be a non-empty string, got {describe(value)}")
    return _checked_text(value, field or key)


def read_opt_str(parent: Mapping[str, Any], key: str, field: str | None = None) -> str | None:
    value = parent.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refused(f"{field or key} must be a string or null, got {describe(value)}")
    return _checked_text(value, field or key)


def _checked_text(value: str, field: str) -> str:
    if not is_storable_text(value):
        raise Refused(f"{field} must be printable text of at most {MAX_TEXT} characters")
    return value


def is_storable_text(value: str, limit: int = MAX_TEXT) -> bool:
    """True when `value` can go into any text column: bounded, no NUL, valid UTF-8."""
    if len(value) > limit or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate from a JSON "\\ud800" escape
        return False
    return True


def read_int(parent: Mapping[str, Any], key: str, field: str | None = None) -> int:
    value = parent.get(key)
    if not is_int(value) or not 0 <= value <= MAX_INT:
        raise Refused(f"{field or key} must be a non-negative integer, got {describe(value)}")
    return value


def is_int(value: object) -> TypeGuard[int]:
    # JSON true/false decode to bool, a subclass of int: never an id.
    return isinstance(value, int) and not isinstance(value, bool)


def describe(value: object) -> str:
    """A short, safe description of a bad value for a refusal's reason."""
    if value is None:
        return "nothing"
    if isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:40])
    return type(value).__name__
