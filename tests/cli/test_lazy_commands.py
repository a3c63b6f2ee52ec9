"""The root command loads its commands lazily: its help and completion import none of them, and
its table of one-line helps says what the commands themselves say."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main

import storyteller_daemon
from storyteller_daemon.cli import COMMANDS, app, load

ROOT = Path(storyteller_daemon.__file__).parent.parent


def _probe(*argv: str, cache: Path | None = None) -> list[str]:
    """The ``storyteller_daemon.cli`` modules (and typer, when imported) a fresh
    ``storyteller ARGV`` imports, keeping what it keeps in `cache`."""
    script = (
        "import sys\n"
        "from storyteller_daemon.cli import main\n"
        f"sys.argv = ['storyteller', *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(m for m in sys.modules"
        " if m.startswith('storyteller_daemon.cli') or m == 'typer'),"
        " file=sys.stderr)\n"
    )
    env = dict(os.environ, **({"XDG_CACHE_HOME": str(cache)} if cache is not None else {}))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    return sorted(done.stderr.split())


def test_root_help_imports_no_command_module_and_then_not_even_typer(tmp_path: Path) -> None:
    face = ["storyteller_daemon.cli", "storyteller_daemon.cli.help_cache"]
    first = _probe("--help", cache=tmp_path)
    assert first == sorted(
        [*face, "storyteller_daemon.cli.root", "storyteller_daemon.cli.support", "typer"]
    )
    assert _probe("--help", cache=tmp_path) == face  # printed back as typer printed it


def test_a_command_imports_only_its_own_module() -> None:
    loaded = _probe("db", "--help")
    assert "storyteller_daemon.cli.db" in loaded
    assert not [
        m
        for m in loaded
        if m.startswith(("storyteller_daemon.cli.ais", "storyteller_daemon.cli.bench"))
    ]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_listed_help_is_the_commands_own_first_paragraph(name: str) -> None:
    command = load(name)
    assert command.name == name
    assert COMMANDS[name].help == inspect.cleandoc(command.help or "").split("\n\n")[0]


def test_completion_names_every_command_from_the_table() -> None:
    root = typer.main.get_command(app)
    names = [item.value for item in root.shell_complete(typer.Context(root), "a")]
    assert names == ["ais", "aisr", "audit"]
    ais = load("ais")
    assert [item.value for item in ais.shell_complete(typer.Context(ais), "cr")] == ["create"]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _typer_names(node: ast.AST) -> list[str]:
    """The typer names `node` imports, reads or patches."""
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.Attribute):
        return [_dotted(node)]
    if (
        isinstance(node, ast.Call)
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
    ):
        return [f"{_dotted(node.args[0])}.{node.args[1].value}"]  # setattr(typer.x, "_y", …)
    return []


def test_no_private_typer_or_click_import() -> None:
    """typer vendors click privately (``typer._click``): code and tests use public names only."""
    found = []
    sources = [
        *ROOT.joinpath("storyteller_daemon").rglob("*.py"),
        *ROOT.joinpath("tests").rglob("*.py"),
    ]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _typer_names(node):
                parts = name.split(".")
                if parts[0] == "typer" and any(p.startswith("_") for p in parts[1:]):
                    found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == []
