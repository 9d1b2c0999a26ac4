"""`catalog list` and `catalog explain ID`: the catalog as a reader browses it, offline."""

from __future__ import annotations

import argparse
import difflib
import sys

from triage_bot.cli import cli_triage
from triage_bot.core.catalog import Catalog, Signature

EXIT_USAGE = 2
MAX_SUGGESTIONS = 5


def list_signatures(args: argparse.Namespace) -> int:
    """One line per signature, by id: id, category, title; only those of `--category`."""
    catalog = cli_triage.load(args.catalog)
    shown = sorted(
        (s for s in catalog.signatures if args.category in (None, s.category)),
        key=lambda s: s.id,
    )
    if not shown:
        categories = ", ".join(sorted({s.category for s in catalog.signatures}))
        print(
            f"triage-bot: no signature of category {args.category!r}; there are: {categories}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    id_width = max(len(s.id) for s in shown)
    category_width = max(len(s.category) for s in shown)
    for signature in shown:
        print(
            f"{signature.id:<{id_width}}  {signature.category:<{category_width}}  {signature.title}"
        )
    return 0


def explain(args: argparse.Namespace) -> int:
    """What signature ID matches and says, or the closest ids when there is none of that id."""
    catalog = cli_triage.load(args.catalog)
    signature = catalog.get(args.id)
    if signature is None:
        print(
            f"triage-bot: no signature {args.id!r}{_suggestion(catalog, args.id)}", file=sys.stderr
        )
        return EXIT_USAGE
    sys.stdout.write(explanation(signature))
    return 0


def explanation(signature: Signature) -> str:
    from triage_bot.core.terminal import render, signature_view  # rich: only for the terminal

    return render(signature_view(signature), *cli_triage.terminal_style())


def _suggestion(catalog: Catalog, wanted: str) -> str:
    ids = [s.id for s in catalog.signatures]
    close = difflib.get_close_matches(wanted, ids, n=MAX_SUGGESTIONS, cutoff=0.5)
    # An id is words joined by -: a word of it typed alone finds the ids that hold it.
    close += [i for i in ids if wanted in i.split("-") and i not in close][:MAX_SUGGESTIONS]
    if not close:
        return " (triage-bot catalog list shows them all)"
    return "; did you mean: " + ", ".join(close[:MAX_SUGGESTIONS]) + "?"
