"""The `catalog` commands of the command line: lint, test, and new (catalog_new.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from triage_bot.catalog_tools import catalog_check
from triage_bot.core.sources import InputError


def lint(paths: list[Path]) -> bool:
    _require_existing(paths)
    signatures, problems = catalog_check.lint(paths)
    for problem in problems:
        print(problem)
    print(f"catalog lint: {len(signatures)} signatures, {len(problems)} problems")
    return not problems


def test(paths: list[Path]) -> bool:
    _require_existing(paths)
    checks, failures, problems = catalog_check.test(paths)
    for problem in problems:
        print(problem)
    for failure in failures:
        print(failure)
    print(
        f"catalog test: {checks} checks, {len(failures)} failed, {len(problems)} files not loaded"
    )
    return not failures and not problems


def new(args: argparse.Namespace) -> bool:
    from triage_bot.catalog_tools import catalog_new

    request = catalog_new.Request(
        ident=args.id,
        log=args.from_log,
        line=args.line,
        folder=args.dir,
        category=args.category,
        title=args.title,
        force=args.force,
    )
    draft = catalog_new.create(request)
    print(f"wrote {draft.signature} and {draft.window} (priority {draft.priority})")
    if draft.outranks is not None:
        other = draft.outranks
        print(
            f"note: {other.id} (priority {other.priority}, {other.path}) also matches this line;"
            f" if it explains this failure, improve it instead of adding {args.id}",
            file=sys.stderr,
        )
    if draft.problems:
        for problem in draft.problems:
            print(problem)
        print(
            "catalog new: the draft fails these checks; where it wins a line of another "
            "signature's window, improve that signature instead"
        )
        return False
    print(
        "next: generalise the pattern and replace the TODOs (see patterns/README.md), then run\n"
        f"  triage-bot catalog lint {draft.signature} && triage-bot catalog test {draft.signature}"
    )
    return True


def _require_existing(paths: list[Path]) -> None:
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
