"""Benchmark: redaction of evidence lines, the new redactor against the old one, in one run.

Redaction runs on what a report keeps (evidence windows, best-guess lines, captures), not on
every log line, so its cost is per finding. This prints, in CPU time (time.process_time,
the best of --repeat runs):

- per 10,000 evidence lines (real CI lines from examples/, with --secret-share of them from
  the secrets corpus), in windows of 18 lines: the old redactor (the regex list that
  triage_bot/core/sanitize.py had before triage_bot/core/redact.py, copied below) and the new one;
- the new one's first use (reading gitleaks' rules; each regex compiles on first need);
- how many corpus secrets each lets through, and how many innocent lines each changes;
- the triage of examples/pr-2664: classifying its logs against building the report (which
  is where redaction runs), and how many lines that redacted.

Usage: python bench/redact.py [--lines 10000] [--repeat 5] [--secret-share 0.05]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage_bot.core.catalog import load_catalog  # noqa: E402
from triage_bot.core.classify import CompiledCatalog, classify  # noqa: E402
from triage_bot.core.redact import default_redactor, redact_lines  # noqa: E402
from triage_bot.core.report import build_report, report_json  # noqa: E402

EXAMPLES = ROOT / "examples" / "pr-2664"
CORPUS = ROOT / "tests" / "hostile" / "secrets_corpus.yaml"
WINDOW = 18  # 12 lines before a match, the match, 5 after: a typical evidence window

# The old redactor: triage_bot/core/sanitize.py's `_SECRETS` and `redact` as they were.
_OLD = "***"
_OLD_SECRETS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"), _OLD),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b"), _OLD),
    (
        re.compile(r"(?i)\b(aws_secret_access_key|aws_session_token)(\s*[=:]\s*[\"']?)[^\s\"',;]+"),
        rf"\1\2{_OLD}",
    ),
    (
        re.compile(
            r"(?i)\b(secret_?key|api_?key|password|passwd|token)(\s*=\s*[\"']?)[^\s\"',;]{6,}"
        ),
        rf"\1\2{_OLD}",
    ),
    (
        re.compile(
            r"(?i)\b(authorization:\s*(?:bearer|token|basic)|bearer)(\s+)"
            r"(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}"
        ),
        rf"\1\2{_OLD}",
    ),
    (re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@"), rf"\1{_OLD}@"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _OLD),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), _OLD),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "-----BEGIN PRIVATE KEY----- " + _OLD),
]


def old_redact(text: str) -> str:
    for pattern, replacement in _OLD_SECRETS:
        text = pattern.sub(replacement, text)
    return text


def old_redact_lines(lines: Sequence[str]) -> list[str]:
    return [old_redact(line) for line in lines]


def evidence_lines(count: int, secret_share: float, corpus: dict[str, Any]) -> list[str]:
    """`count` lines: real CI lines from the examples, some of them secret-bearing."""
    real = [
        line
        for path in sorted(EXAMPLES.glob("*.log"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    secrets = [entry["line"] for entry in corpus["secrets"]] + corpus["innocent"]
    rng = random.Random(8)
    return [
        rng.choice(secrets) if rng.random() < secret_share else rng.choice(real)
        for _ in range(count)
    ]


def best_cpu(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def in_windows(redactor: Callable[[Sequence[str]], list[str]], lines: list[str]) -> None:
    for start in range(0, len(lines), WINDOW):
        redactor(lines[start : start + WINDOW])


def leaks(redactor: Callable[[Sequence[str]], list[str]], corpus: dict[str, Any]) -> str:
    survived = 0
    for entry in corpus["secrets"]:
        [out] = redactor([entry["line"]])
        survived += any(secret in out for secret in entry["secrets"])
    for block in corpus["blocks"]:
        out = "\n".join(redactor(block["lines"]))
        survived += any(secret in out for secret in block["secrets"])
    changed = sum(redactor([line]) != [line] for line in corpus["innocent"])
    total = len(corpus["secrets"]) + len(corpus["blocks"])
    innocent = len(corpus["innocent"])
    return f"{survived}/{total} secret lines leak, {changed}/{innocent} innocent lines changed"


def example_triage(repeat: int) -> str:
    catalog = CompiledCatalog(load_catalog())
    logs = {path.stem: path.read_bytes() for path in sorted(EXAMPLES.glob("*.log"))}

    def classified() -> list[Any]:
        return [classify([data], catalog, name) for name, data in logs.items()]

    classify_cpu = best_cpu(classified, repeat)
    results = [classified() for _ in range(repeat)]
    times = []
    for jobs in results:
        start = time.process_time()
        report = build_report(jobs)
        times.append(time.process_time() - start)
    data = report_json(report)
    redacted = sum(
        len(m["before"]) + 1 + len(m["after"])
        for job in data["jobs"]
        for m in [job["root_cause"], *job["also"]]
        if m
    ) + sum(len(job["fallback_lines"]) for job in data["jobs"])
    return (
        f"examples/pr-2664 ({len(logs)} jobs, {sum(map(len, logs.values())) // 1024} KiB): "
        f"classify {classify_cpu * 1000:.1f} ms, build_report (redaction) "
        f"{min(times) * 1000:.1f} ms for {redacted} lines"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--secret-share", type=float, default=0.05)
    args = parser.parse_args()
    corpus = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    lines = evidence_lines(args.lines, args.secret_share, corpus)

    start = time.process_time()
    default_redactor()
    first_use = time.process_time() - start
    per = 10_000 / len(lines)
    old = best_cpu(lambda: in_windows(old_redact_lines, lines), args.repeat) * per
    new = best_cpu(lambda: in_windows(redact_lines, lines), args.repeat) * per
    rules = len(default_redactor().rules)
    print(f"{rules} rules; reading them {first_use:.3f} s (a regex compiles on first need)")
    share = f"{args.secret_share:.0%} from the corpus"
    print(f"per 10k evidence lines ({share}), CPU, best of {args.repeat}:")
    print(f"  old redactor {old * 1000:7.1f} ms   {leaks(old_redact_lines, corpus)}")
    print(f"  new redactor {new * 1000:7.1f} ms   {leaks(redact_lines, corpus)}")
    print(example_triage(args.repeat))


if __name__ == "__main__":
    main()
