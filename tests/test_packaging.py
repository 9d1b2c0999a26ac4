"""The wheel carries the catalog and the templates, and the installed package finds them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from helpers import EXAMPLES, ROOT


def test_wheel_carries_patterns_and_templates_and_works_outside_the_checkout(
    tmp_path: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(tmp_path.glob("triage_bot-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "patterns").rglob("*") if p.is_file()
    }
    carried = {
        n.removeprefix("triage_bot/_data/") for n in names if n.startswith("triage_bot/_data/")
    }
    assert shipped <= carried
    assert "templates/comment.md.j2" in carried and "patterns/schema.json" in carried
    assert "triage_bot/repo/repo_config.schema.json" in names
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    done = subprocess.run(
        [sys.executable, "-m", "triage_bot", "triage", str(EXAMPLES), "--format", "json"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(unpacked)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    data = json.loads(done.stdout)
    assert {g["signature"] for g in data["groups"]} >= {"python-module-not-found"}
    probe = subprocess.run(
        [sys.executable, "-c", "import triage_bot.core.catalog as c; print(c.patterns_dir())"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(unpacked)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip().startswith(str(unpacked))
