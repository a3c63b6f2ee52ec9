"""Time is a dependency: the daemon reads the system's clock in one module, `clock.py`.

Everything else is handed the runtime `Clock` (a fake one in tests), with no default that
would quietly fall back to real time. The two deadlines that stay on real time on purpose (the
attention request's HTTP timeout and the shutdown drain, docs/runtime.md "Heartbeats") do not
read the clock at all: the model client and `asyncio.timeout` keep them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import storyteller_daemon

PACKAGE = Path(storyteller_daemon.__file__).parent
CLOCK_MODULE = "clock.py"
READS_THE_SYSTEM_CLOCK = re.compile(r"time.monotonic|time.time\(\)|datetime.now")
"""What `grep -rn "time.monotonic\\|time.time()\\|datetime.now" storyteller_daemon` finds."""


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _readers() -> dict[str, list[str]]:
    """File → its lines that read the system clock, for every file but the clock module."""
    found: dict[str, list[str]] = {}
    for path in _sources():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        lines = [
            f"{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), start=1)
            if READS_THE_SYSTEM_CLOCK.search(line)
        ]
        if lines and _name(path) != CLOCK_MODULE:
            found[_name(path)] = lines
    return found


def test_only_the_clock_module_reads_the_system_clock() -> None:
    readers = _readers()
    assert readers == {}, "take the time from the injected Clock instead"


def test_the_clock_module_is_where_the_system_clock_is_read() -> None:
    text = (PACKAGE / CLOCK_MODULE).read_text(encoding="utf-8")
    assert "time.monotonic()" in text and "datetime.now(UTC)" in text


def _clock_parameters_with_defaults(tree: ast.AST) -> list[str]:
    """`name (line)` of each parameter annotated with a clock that has a default value."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: list[tuple[ast.arg, ast.expr | None]] = [
            *zip(
                positional[len(positional) - len(arguments.defaults) :],
                arguments.defaults,
                strict=True,
            ),
            *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
        ]
        for arg, default in defaults:
            annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            if default is not None and re.search(r"\bClock\b", annotation):
                found.append(f"{node.name}({arg.arg}) line {arg.lineno}")
    return found


def test_no_constructor_defaults_its_clock() -> None:
    defaulted = {
        _name(path): found
        for path in _sources()
        if path.suffix == ".py"
        # The shipped test doubles default to a `FakeClock`: a test's time, never real time.
        and not _name(path).startswith("testing/")
        if (found := _clock_parameters_with_defaults(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert defaulted == {}, "pass the clock in; a default quietly runs on real time"


def test_a_defaulted_clock_parameter_is_found() -> None:
    tree = ast.parse("def f(a: int, clock: Clock | None = None, *, b: Clock = SystemClock()): ...")
    assert _clock_parameters_with_defaults(tree) == ["f(clock) line 1", "f(b) line 1"]
