"""`triage-bot catalog list` and `catalog explain ID`, offline, on the built-in catalog and a
folder given with --catalog."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import ROOT

from triage_bot.cli.cli import main

PATTERNS = ROOT / "patterns"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["catalog", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def builtin_ids() -> dict[str, dict[str, object]]:
    """Every built-in signature file's fields, by id, read straight from the YAML."""
    found = {}
    for path in PATTERNS.rglob("*.yml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        found[data["id"]] = {**data, "path": path}
    return found


def test_list_names_every_signature_by_id_with_its_category_and_title(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    rows = [line.split(None, 2) for line in out.splitlines()]
    expected = builtin_ids()
    assert [row[0] for row in rows] == sorted(expected)
    for sid, category, title in rows:
        assert (category, title) == (expected[sid]["category"], expected[sid]["title"])


def test_list_by_category(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--category", "resource")
    expected = sorted(sid for sid, data in builtin_ids().items() if data["category"] == "resource")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == expected
    code, out, err = run(capsys, "list", "--category", "no-such-category")
    assert code == 2 and out == ""
    assert "no signature of category 'no-such-category'" in err and "resource" in err


def test_explain_shows_what_a_signature_matches_says_and_where_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "explain", "python-module-not-found")
    assert code == 0
    data = builtin_ids()["python-module-not-found"]
    assert out.startswith(f"python-module-not-found: {data['title']}\n")
    assert "dependency, priority 60" in out
    assert str(data["pattern"]) in out
    tests = data["tests"]
    assert isinstance(tests, dict)
    assert tests["match"][0]["line"] in out  # an example line from its tests
    # The summary and fix, with the capture as a placeholder, as text, not markdown.
    assert "<module> cannot be imported" in out
    assert 'git grep -n "<module>"' in out and "from <module> import Builder" in out
    assert "**" not in out and "```" not in out and "&lt;" not in out
    references = data["references"]
    assert isinstance(references, list) and all(ref in out for ref in references)
    path = data["path"]
    assert isinstance(path, Path)
    assert str(path) in out and str(path.with_suffix(".log")) in out


def test_explain_an_unknown_id_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "python-module-not-fond")
    assert code == 2 and out == ""
    assert "no signature 'python-module-not-fond'; did you mean: python-module-not-found" in err
    code, _, err = run(capsys, "explain", "module-not-found")
    assert code == 2 and "python-module-not-found" in err and "go-module-not-found" in err
    code, _, err = run(capsys, "explain", "zzzzzzzz")
    assert code == 2 and "triage-bot catalog list shows them all" in err


def test_a_catalog_folder_adds_its_signatures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (PATTERNS / "python" / "python-module-not-found.yml").read_text(encoding="utf-8")
    mine = source.replace("id: python-module-not-found", "id: acme-widget-missing").replace(
        "title: Python module not found", "title: Acme widget missing"
    )
    (tmp_path / "acme-widget-missing.yml").write_text(mine, encoding="utf-8")
    code, out, _ = run(capsys, "list", "--catalog", str(tmp_path), "--category", "dependency")
    assert code == 0 and "acme-widget-missing" in out and "python-module-not-found" in out
    assert run(capsys, "explain", "acme-widget-missing")[0] == 2  # not without --catalog
    code, out, _ = run(capsys, "explain", "acme-widget-missing", "--catalog", str(tmp_path))
    assert code == 0 and out.startswith("acme-widget-missing: Acme widget missing\n")
    assert str(tmp_path / "acme-widget-missing.yml") in out
    assert str(tmp_path / "acme-widget-missing.log") not in out  # it has no window
