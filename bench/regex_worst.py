"""Benchmark: each built-in signature's worst CPU time on a 64 KiB adversarial line.

For every signature, `catalog lint`'s probes (runs of what the pattern repeats, after its
keyword, before it and inside its example lines) are screened on short lines; the costliest
are timed at 8 KiB and 64 KiB of run. Printed, worst first: the pattern's CPU time on its
worst 64 KiB line, the same line's naive linear scan in this run (`keyword in line`), their
ratio, and the growth from 8 KiB to 64 KiB (8 is linear, 64 quadratic).

Usage: python bench/regex_worst.py [--top N] [--ids ID ...]
"""

from __future__ import annotations

import argparse
import time

from triage_bot.catalog_tools.catalog_check import (
    LINEAR_SIZES,
    Probe,
    costliest_probes,
    probe_costs,
)
from triage_bot.core.catalog import Signature, load_catalog


def reference_cost(signature: Signature, text: str) -> float:
    """A naive linear scan of the same line: every keyword looked for (the best of three)."""
    keywords = signature.triggers

    def scan() -> float:
        start = time.thread_time()
        for keyword in keywords:
            _ = keyword in text
        return time.thread_time() - start

    return max(min(scan() for _ in range(3)), 1e-7)


def worst(signature: Signature) -> tuple[float, float, float, Probe]:
    """(64 KiB cost, 8 KiB cost, reference cost, probe) of the signature's worst probe."""
    # A pattern that repeats nothing gets no probe: its keyword and a run of spaces stand in.
    found = (0.0, 0.0, 1e-7, Probe(signature.triggers[0], " ", ""))
    try:
        probes = costliest_probes(signature)
    except TimeoutError:
        return float("inf"), float("inf"), 1e-7, found[3]
    for probe in probes:
        try:
            small, large = probe_costs(signature, probe)
        except TimeoutError:
            small, large = float("inf"), float("inf")
        if large > found[0]:
            found = (large, small, reference_cost(signature, probe.text(LINEAR_SIZES[1])), probe)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=0, help="print only the N worst")
    parser.add_argument("--ids", nargs="*", default=[], help="only these signatures")
    args = parser.parse_args()
    signatures = [s for s in load_catalog().signatures if not args.ids or s.id in args.ids]
    started = time.process_time()
    rows = sorted(((worst(s), s.id) for s in signatures), key=lambda row: -row[0][0])
    shown = rows[: args.top] if args.top else rows
    print(f"{'ms/64KiB':>9} {'scan ms':>8} {'x scan':>7} {'8->64':>6}  signature  worst line")
    for (large, small, reference, probe), sid in shown:
        print(
            f"{large * 1000:9.2f} {reference * 1000:8.3f} {large / reference:7.0f} "
            f"{large / max(small, 1e-9):6.1f}  {sid}  {probe.describe(LINEAR_SIZES[1])}"
        )
    print(f"{len(rows)} signatures, {time.process_time() - started:.1f} s of CPU")


if __name__ == "__main__":
    main()
