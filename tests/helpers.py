"""Small builders shared by the core tests."""

from __future__ import annotations

import textwrap
from functools import cache
from pathlib import Path

from triage_bot.catalog import Catalog, load_catalog
from triage_bot.classify import CompiledCatalog, JobResult, classify

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "pr-2664"


@cache
def builtin() -> Catalog:
    return load_catalog()


@cache
def _compiled_builtin(engine: str | None) -> CompiledCatalog:
    return CompiledCatalog(builtin(), engine)


def compiled(engine: str | None = None, catalog: Catalog | None = None) -> CompiledCatalog:
    return CompiledCatalog(catalog, engine) if catalog else _compiled_builtin(engine)


def run_log(
    text: str | bytes, engine: str | None = None, chunk: int = 1 << 20, **kwargs: object
) -> JobResult:
    data = text.encode() if isinstance(text, str) else text
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)] or [b""]
    return classify(chunks, compiled(engine), "job", **kwargs)  # type: ignore[arg-type]


def write_signature(folder: Path, ident: str, body: str) -> Path:
    path = folder / f"{ident}.yml"
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path
