"""The `flaky` field of a signature file (patterns/schema.json, catalog.py): `never` is read
as never_flaky; anything else is refused with the file's line; without it, the history
decides."""

from __future__ import annotations

from helpers import ROOT

from triage_bot.core.catalog import load_signature_text

PYTEST = ROOT / "patterns" / "python" / "python-pytest-failed.yml"


def with_flaky(value: str | None) -> str:
    text = PYTEST.read_text()
    return text if value is None else f"{text.rstrip()}\nflaky: {value}\n"


def test_flaky_never_is_read() -> None:
    signature, problems = load_signature_text(PYTEST, with_flaky("never"))
    assert problems == [] and signature is not None and signature.never_flaky


def test_without_the_field_the_history_decides() -> None:
    signature, problems = load_signature_text(PYTEST, with_flaky(None))
    assert problems == [] and signature is not None and not signature.never_flaky


def test_another_value_is_refused_on_its_line() -> None:
    text = with_flaky("sometimes")
    signature, problems = load_signature_text(PYTEST, text)
    assert signature is None
    [problem] = problems
    assert problem.line == len(text.splitlines())
    assert "never" in str(problem), str(problem)
