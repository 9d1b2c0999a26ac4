"""The catalog a repository is triaged with: the built-in signatures, the repository's own
(`.github/triage-bot/patterns/` by default), less the ones its config disables.

A repository's signature is checked as `catalog lint` and `catalog test` check a built-in
one (the schema, the id, the pattern, its keywords and examples, catastrophic backtracking,
the prefilter), except that its `.log` window is optional. A broken one is a problem line and
is left out; the rest still run. A repository's signature with the id of a built-in one
replaces the built-in one, for that repository only: that is how a repository rewrites the
fix of a failure for its own setup.

Their `summary` and `fix` templates run in every worker, for every repository's triage, so
they may use less than a built-in's: captures, `if`, comparisons, and a few filters that
cannot blow up (no arithmetic, calls, loops or `replace`), and a bounded number of captures.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2
from jinja2 import nodes

from triage_bot.catalog_tools.catalog_check import cost_problems, inline_tests, lint_rules
from triage_bot.core.catalog import (
    Catalog,
    Signature,
    load_catalog,
    load_signature_text,
    signature_line,
)
from triage_bot.core.classify import CompiledCatalog
from triage_bot.repo.repo_files import RepoFile

# What a repository's templates may hold: output, captures, constants, conditions.
_TEMPLATE_NODES = (
    nodes.Template,
    nodes.Output,
    nodes.TemplateData,
    nodes.Name,
    nodes.Const,
    nodes.Filter,
    nodes.Test,
    nodes.If,
    nodes.CondExpr,
    nodes.And,
    nodes.Or,
    nodes.Not,
    nodes.Compare,
    nodes.Operand,
)
_TEMPLATE_FILTERS = {"code", "verbatim", "default", "trim", "lower", "upper"}
_TEMPLATE_COMPARISONS = {"eq", "ne"}
MAX_TEMPLATE_NAMES = 100
# All of a repository's signature files are checked within this much CPU time (of the
# checking thread): each file gets an equal share of what is left when its turn comes, and
# one that needs more is refused ("checks took too long").
REPO_CHECK_CPU_S = 5.0

log = logging.getLogger(__name__)
_BUDGET_NOTE = f"a repository's signatures are checked within {REPO_CHECK_CPU_S:g} s of CPU in all"


@cache
def builtin_catalog() -> CompiledCatalog:
    """The built-in catalog, compiled once per process."""
    return CompiledCatalog(load_catalog())


@dataclass(frozen=True)
class RepoSignatures:
    signatures: tuple[Signature, ...]
    problems: tuple[str, ...]


def load_repo_signatures(repo: str, files: Sequence[RepoFile]) -> RepoSignatures:
    """The usable signatures of a repository's files, and a problem line for each that is not."""
    signatures: list[Signature] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    deadline = time.thread_time() + REPO_CHECK_CPU_S
    for position, file in enumerate(files):
        if file.text is None:
            problems.append(f"{file.path}: {file.problem}; skipped")
            continue
        now = time.thread_time()
        share = max(0.0, deadline - now) / (len(files) - position)
        signature, found = _checked(repo, file.path, file.text, now + share)
        if signature is not None and not found and signature.id in seen:
            found = [f"{file.path}:1: duplicate id {signature.id!r}, also in {seen[signature.id]}"]
        if signature is None or found:
            problems.extend(found)
            continue
        seen[signature.id] = file.path
        signatures.append(signature)
    return RepoSignatures(tuple(signatures), tuple(problems))


def _checked(
    repo: str, path: str, text: str, cpu_deadline: float
) -> tuple[Signature | None, list[str]]:
    signature, problems = load_signature_text(Path(path), text, origin=repo, keep_source=True)
    if signature is None:
        return None, [str(p) for p in problems]
    unsafe = [p for name in ("summary", "fix") if (p := _template_problem(signature, name))]
    if unsafe:
        return signature, unsafe  # not rendered, not even by lint
    # The pattern's cost first, within the file's share: the other checks search the
    # examples without a bound, which is safe only for a pattern found linear.
    costly = cost_problems(signature, cpu_deadline)
    if costly:
        return signature, [str(p) for p in costly]
    _count, failures = inline_tests(signature)
    found = [str(p) for p in lint_rules(signature, check_cost=False)] + [str(f) for f in failures]
    if time.thread_time() > cpu_deadline:
        found.append(f"{path}:1: checks took too long; {_BUDGET_NOTE}")
    return signature, found


def _template_problem(signature: Signature, field: str) -> str | None:
    where = f"{signature.path}:{signature_line(signature, [field]) or 1}: {field}"
    try:
        tree = jinja2.Environment().parse(getattr(signature, field))
    except (jinja2.TemplateSyntaxError, RecursionError) as exc:  # RecursionError: nested too deep
        return f"{where} does not parse: {exc}"
    names = 0
    for node in tree.find_all(nodes.Node):
        names += isinstance(node, nodes.Name)
        refused = _refused(node)
        if refused:
            return (
                f"{where} uses {refused}, which a repository's signature may not "
                f"(captures, if, ==, != and the filters {', '.join(sorted(_TEMPLATE_FILTERS))})"
            )
    if names > MAX_TEMPLATE_NAMES:
        return f"{where} names captures {names} times; at most {MAX_TEMPLATE_NAMES}"
    return None


def _refused(node: nodes.Node) -> str | None:
    if not isinstance(node, _TEMPLATE_NODES):
        return type(node).__name__.lower()
    if isinstance(node, nodes.Filter) and node.name not in _TEMPLATE_FILTERS:
        return f"the filter {node.name!r}"
    if isinstance(node, nodes.Operand) and node.op not in _TEMPLATE_COMPARISONS:
        return f"the comparison {node.op!r}"
    return None


def compile_catalog(
    repo: str, own: Sequence[Signature], disabled: Sequence[str]
) -> tuple[CompiledCatalog, list[str]]:
    """The built-in catalog with `own` added (replacing built-ins of the same id) and the
    `disabled` ids removed; the built-in one alone when nothing changes it."""
    builtin = builtin_catalog()
    if not own and not set(disabled) & {s.id for s in builtin.catalog.signatures}:
        return builtin, []
    kept = builtin.catalog.without([*disabled, *(s.id for s in own)])
    mine = tuple(s for s in own if s.id not in set(disabled))
    catalog = Catalog(kept.signatures + mine, kept.problems)
    try:
        return CompiledCatalog(catalog), []
    except Exception as error:  # each engine raises its own error type for what it refuses
        log.warning("%s: the repository's signatures do not compile: %s", repo, error)
        fallback = builtin.catalog.without(disabled)
        problem = (
            f"the repository's signatures could not be compiled together ({error}); "
            "only the built-in catalog is used"
        )
        return CompiledCatalog(fallback), [problem]
