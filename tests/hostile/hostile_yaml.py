"""Hostile YAML for the tests of tests/hostile/, and a way to measure what reading it costs:
in a child process, under an address-space limit, so a regression fails the test instead of
taking the shared machine's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Far below the 2.8 GiB a bomb took before the bounds, far above what the child needs.
ADDRESS_SPACE = 1536 * 1024 * 1024


def run_cli(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`triage-bot ARGS...` as a process, with a catalog cache of the test's own."""
    env = {**os.environ, "TRIAGE_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "triage_bot", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


def bomb(key: str = "keywords", levels: int = 9) -> str:
    """The "billion laughs": 9 levels of nine aliases, 9**10 strings once expanded, put
    under `key` (where the schema check looks) of an otherwise small mapping."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    lines.append(f"{key}: *a{levels}")
    return "\n".join(lines) + "\n"


def signature_text(ident: str, match_lines: list[str], no_match: list[str] | None = None) -> str:
    """A valid signature: FROB-SYNC lines, its examples given."""
    matches = "\n".join(f"    - line: {json.dumps(line)}" for line in match_lines)
    refused = json.dumps(no_match if no_match is not None else ["frobnicator alpha is in sync"])
    return f"""\
id: {ident}
title: Frobnicator out of sync
category: build
priority: 70
keywords: ["FROB-SYNC"]
pattern: "FROB-SYNC: frobnicator (?P<name>\\\\w+) is out of sync"
summary: "frobnicator {{{{ name | code }}}} is out of sync"
fix: Run `make frob-sync`.
tests:
  match:
{matches}
  no_match: {refused}
"""


@dataclass(frozen=True)
class Measured:
    result: Any  # what the measured code returned (JSON)
    cpu_s: float  # CPU time of the measured call, in the child
    rss_growth_mb: float  # peak resident memory during the call, above the peak before it


_HARNESS = """
import json, resource, sys, time
limit = {limit}
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
{setup}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.process_time()
result = measured()
cpu = time.process_time() - started
growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print("MEASURED " + json.dumps({{"result": result, "cpu": cpu, "rss_kb": growth}}))
"""


def measure(setup: str, env: dict[str, str] | None = None) -> Measured:
    """Run `setup` (which defines `measured()`, returning JSON) in a child process and time
    the call to `measured` alone (imports and warm-up in `setup` are not counted)."""
    code = _HARNESS.format(limit=ADDRESS_SPACE, setup=textwrap.dedent(setup))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("MEASURED ")]
    assert done.returncode == 0 and lines, f"child failed:\n{done.stdout}\n{done.stderr}"
    data = json.loads(lines[-1].removeprefix("MEASURED "))
    return Measured(data["result"], data["cpu"], data["rss_kb"] / 1024)
