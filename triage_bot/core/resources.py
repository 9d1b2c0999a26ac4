"""Where the built-in catalog and templates live, installed or in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # triage_bot/, not core/


def _data_dir(name: str) -> Path:
    # A wheel carries them under triage_bot/_data/; a checkout has them at the top level.
    installed = _PACKAGE_DIR / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / name


def patterns_dir() -> Path:
    return _data_dir("patterns")


def templates_dir() -> Path:
    return _data_dir("templates")


def schema_path() -> Path:
    return patterns_dir() / "schema.json"
