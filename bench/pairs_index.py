"""Write the accuracy index of a folder of pass/fail pairs from its MANIFEST.md.

The pairs corpus (issue #11) is a folder of `NN-.../` folders, each with `fail.log` and
`pass.log`; its MANIFEST.md gives, per pair, `### NN-...`, `- ecosystem / CI: Python ...` and
`- error lines in fail.log: 785, 804-806, 809`. This writes FOLDER/index.json in the shape
bench/accuracy.py reads, each log with its `passing` log:

    python bench/pairs_index.py /work/wt/pairs
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_PAIR = re.compile(r"^### (\S+)$")
_ECOSYSTEM = re.compile(r"^- ecosystem / CI: (\w+)")
_LINES = re.compile(r"^- error lines in fail\.log: ([\d ,-]+)$")


def ranges(text: str) -> list[list[int]]:
    out = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        out.append([int(first), int(last or first)])
    return out


def index_of(manifest: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    pair = language = None
    for line in manifest.splitlines():
        if found := _PAIR.match(line):
            pair, language = found[1], None
        elif (found := _ECOSYSTEM.match(line)) and pair:
            language = found[1]
        elif (found := _LINES.match(line)) and pair:
            rows.append(
                {
                    "file": f"{pair}/fail.log",
                    "passing": f"{pair}/pass.log",
                    "language": language or "?",
                    "ranges": ranges(found[1]),
                }
            )
            pair = None
    return rows


def main() -> int:
    folder = Path(sys.argv[1])
    rows = index_of((folder / "MANIFEST.md").read_text(encoding="utf-8"))
    (folder / "index.json").write_text(json.dumps({"logs": rows}, indent=1) + "\n")
    print(f"wrote {len(rows)} logs to {folder / 'index.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
