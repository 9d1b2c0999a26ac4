"""A sandbox for signature templates (which contributors and repositories write) that cannot
run away: every value it makes is at most MAX_VALUE_CHARS long, ranges at most MAX_RANGE
items, the output at most MAX_OUTPUT_CHARS, and a render at most MAX_STEPS template lines
and MAX_CPU_SECONDS of CPU. Past a bound it raises TemplateBudgetError, a jinja2
TemplateError, which `catalog lint` and the repository checks report like any template error.
"""

from __future__ import annotations

import functools
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from types import FrameType
from typing import Any

import jinja2
import jinja2.sandbox
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame

MAX_VALUE_CHARS = 100_000
MAX_OUTPUT_CHARS = 200_000
MAX_RANGE = 10_000
MAX_STEPS = 50_000
MAX_CPU_SECONDS = 0.25
MAX_INT_BITS = 4096

# The str methods a template may call: none of them makes a string longer than its inputs
# (replace is checked before it runs).
_STR_METHODS = frozenset(
    {
        *("split", "rsplit", "splitlines", "partition", "rpartition"),
        *("strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "replace"),
        *("lower", "upper", "title", "capitalize", "casefold"),
        *("startswith", "endswith", "find", "rfind", "index", "rindex", "count"),
        *("isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper"),
    }
)
_MAPPING_METHODS = frozenset({"get", "keys", "values", "items"})
# Filters a template may use, as in patterns/README.md; each runs through _guarded.
FILTERS = frozenset(
    {
        *("default", "d", "trim", "lower", "upper", "capitalize", "title", "replace"),
        *("int", "float", "string", "list", "abs", "round"),
        *("length", "count", "first", "last", "join", "truncate"),
    }
)
# A width or precision of 6 digits or more in a %-format or str.format is refused.
_WIDE_FORMAT = re.compile(r"\d{6,}|\*")


class TemplateBudgetError(jinja2.TemplateRuntimeError):
    """A template went past one of its bounds."""


def _checked(value: Any, what: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INT_BITS:
            raise TemplateBudgetError(f"{what} makes a number of over {MAX_INT_BITS} bits")
    elif isinstance(value, str | bytes | list | tuple) and len(value) > MAX_VALUE_CHARS:
        raise TemplateBudgetError(f"{what} makes a value of over {MAX_VALUE_CHARS:,} items")
    return value


def _refuse_big_ints(args: tuple[Any, ...], kwargs: Mapping[str, Any], what: str) -> None:
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE_CHARS:
            raise TemplateBudgetError(f"{what} is given {arg}, over {MAX_VALUE_CHARS:,}")


def _predicted(name: str, subject: Any, args: tuple[Any, ...]) -> int:
    """How long the result of `replace` or `join` will be, before it is made."""
    if name == "replace" and len(args) >= 2 and isinstance(subject, str):
        return len(subject) + (len(subject) + 1) * len(str(args[1]))
    if name == "join" and isinstance(subject, list | tuple):
        glue = len(str(args[0])) if args else 0
        return sum(len(str(item)) + glue for item in subject)
    return 0


def _guarded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # A filter may take the context or environment first (jinja2's pass_* decorators, which
    # functools.wraps carries over); the subject is the argument after it.
    passed = 1 if hasattr(function, "jinja_pass_arg") else 0

    @functools.wraps(function)
    def filter_(*args: Any, **kwargs: Any) -> Any:
        subject, rest = args[passed], args[passed + 1 :]
        _refuse_big_ints(rest, kwargs, f"the filter {name!r}")
        if _predicted(name, subject, rest) > MAX_VALUE_CHARS:
            raise TemplateBudgetError(f"the filter {name!r} would make over {MAX_VALUE_CHARS:,}")
        return _checked(function(*args, **kwargs), f"the filter {name!r}")

    return filter_


def _binop_problem(operator_: str, left: Any, right: Any) -> str | None:
    """Why `left operator_ right` would make too big a value, before it is made."""
    ints = isinstance(left, int) and isinstance(right, int)
    if operator_ == "*":
        sequence, times = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(sequence, str | bytes | list | tuple) and isinstance(times, int):
            if len(sequence) * max(times, 0) > MAX_VALUE_CHARS:
                return f"would make over {MAX_VALUE_CHARS:,} items"
        elif ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            return f"would make a number of over {MAX_INT_BITS} bits"
    if operator_ == "**" and ints and max(left.bit_length(), 1) * right > MAX_INT_BITS:
        return f"would make a number of over {MAX_INT_BITS} bits"
    if operator_ == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
        return "formats with a width of 6 digits or '*'"
    return None


def _bounded_range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise TemplateBudgetError(f"range() of {len(numbers):,} items; at most {MAX_RANGE:,}")
    return numbers


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles `a ~ b` to a join that checks the length first."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BudgetSandbox(jinja2.sandbox.SandboxedEnvironment):
    """The sandbox, with every way to make a big value or a long loop checked."""

    code_generator_class = _BoundedCodeGenerator
    # Intercepted operators are not folded at compile time either ('x' * 3000000000).
    intercepted_binops = frozenset({"*", "**", "%", "+", "//"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals = {"range": _bounded_range}  # no lipsum, cycler, joiner, namespace
        self.filters = {name: _guarded(name, self.filters[name]) for name in FILTERS}

    def call_binop(
        self, context: jinja2.runtime.Context, operator_: str, left: Any, right: Any
    ) -> Any:
        what = f"the operator {operator_!r}"
        problem = _binop_problem(operator_, left, right)
        if problem:
            raise TemplateBudgetError(f"{what} {problem}")
        return _checked(super().call_binop(context, operator_, left, right), what)

    def bounded_concat(self, parts: tuple[Any, ...]) -> str:
        texts = [str(part) for part in parts]
        if sum(map(len, texts)) > MAX_VALUE_CHARS:
            raise TemplateBudgetError(f"'~' would make over {MAX_VALUE_CHARS:,} characters")
        return "".join(texts)

    def call(
        __self,
        __context: jinja2.runtime.Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if isinstance(__obj, jinja2.Undefined):
            __obj._fail_with_undefined_error()  # "'lipsum' is undefined", not a call refused
        if __obj is _bounded_range:  # it says itself what is wrong with a range
            return super().call(__context, __obj, *args, **kwargs)
        name = getattr(__obj, "__name__", "")
        subject = getattr(__obj, "__self__", None)
        allowed = (isinstance(subject, str) and name in _STR_METHODS) or (
            isinstance(subject, Mapping) and name in _MAPPING_METHODS
        )
        if not allowed and not isinstance(__obj, jinja2.runtime.Macro):
            raise TemplateBudgetError(f"a template may not call {name or type(__obj).__name__}")
        _refuse_big_ints(args, kwargs, f"{name}()")
        if _predicted(name, subject, args) > MAX_VALUE_CHARS:
            raise TemplateBudgetError(f"{name}() would make over {MAX_VALUE_CHARS:,} characters")
        return _checked(super().call(__context, __obj, *args, **kwargs), f"{name}()")


class _Steps:
    """Counts the lines the template's own code runs and stops it past MAX_STEPS lines or
    MAX_CPU_SECONDS of this thread's CPU (nested loops, recursive macros)."""

    def __init__(self) -> None:
        self.steps = 0
        self.deadline = time.thread_time() + MAX_CPU_SECONDS

    def on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != "<template>":
            return None  # only the template's own lines are counted
        return self.on_line

    def on_line(self, frame: FrameType, event: str, arg: Any) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateBudgetError(f"the template ran over {MAX_STEPS:,} steps")
        if self.steps % 1000 == 0 and time.thread_time() > self.deadline:
            raise TemplateBudgetError(f"the template ran over {MAX_CPU_SECONDS} s of CPU")
        return self.on_line


def compile_bounded(environment: jinja2.Environment, source: str) -> jinja2.Template:
    """The compiled template; one nested too deep for the parser is a TemplateBudgetError."""
    try:
        return environment.from_string(source)
    except RecursionError as exc:
        raise TemplateBudgetError("the template nests too deep") from exc


def render_bounded(template: jinja2.Template, context: Mapping[str, Any]) -> str:
    """The template's output; TemplateBudgetError past any bound."""
    steps = _Steps()
    previous = sys.gettrace()
    sys.settrace(steps.on_call)
    try:
        return _collect(template.generate(**context))
    except RecursionError as exc:
        raise TemplateBudgetError("the template recursed too deep") from exc
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
        # What Python raises inside a template ({{ 1 | join }}, int('x')) is the template's
        # fault: reported like a template error, not a crash of lint or of the comment.
        raise jinja2.TemplateRuntimeError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        sys.settrace(previous)


def _collect(chunks: Iterator[str]) -> str:
    out: list[str] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > MAX_OUTPUT_CHARS:
            raise TemplateBudgetError(f"the template wrote over {MAX_OUTPUT_CHARS:,} characters")
        out.append(chunk)
    return "".join(out)
