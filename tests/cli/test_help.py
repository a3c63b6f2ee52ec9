"""The ``--help`` text lists every command, so the CLI's own documentation cannot fall behind."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from storyteller_daemon.cli import app

AIS = [
    "list",
    "create",
    "show",
    "delete",
    "clone",
    "pause",
    "unpause",
    "refsearch",
    "export",
    "import",
    "set",
    "situation",
    "memory",
    "digest",
    "plan",
    "claim",
    "character",
]
AIS_SET = [
    "name",
    "description",
    "model",
    "reasoning",
    "attention-prompt",
    "system-prompt",
    "time-system-prompt",
    "subscribe",
    "status-prog",
    "player-prog",
    "surveillance",
    "pacing",
    "budget",
    "speech-context",
    "tool",
    "rule",
    "mcp",
    "direction",
    "provider",
]
AIS_TOOL = ["add", "remove", "description", "parameter", "prog", "echo"]
AIS_RULE = ["add", "remove", "memory", "forget"]
AIS_MCP = ["add", "remove"]
AISR = ["list", "create", "show", "delete", "clone", "search", "set"]
AISR_SET = [
    "name",
    "description",
    "folder",
    "type",
    "keywords",
    "contents",
    "storyteller",
    "storytellers",
]

_COMMAND_ROW = re.compile(r"^│ (\S+)\s{2,}", re.MULTILINE)


def listed_commands(*args: str) -> list[str]:
    """Command names in the Commands panel of ``storyteller ARGS --help``."""
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    panel = result.stdout.split("─ Commands ", 1)[1]
    return _COMMAND_ROW.findall(panel)


def visible_commands(*path: str) -> list[str]:
    """The commands the CLI really has at `path`, hidden aliases left out."""
    group = typer.main.get_command(app)
    for name in path:
        group = group.get_command(typer.Context(group), name)  # type: ignore[attr-defined]
    return [n for n, c in _subcommands(group) if not c.hidden]


def _subcommands(command: object) -> list[tuple[str, object]]:
    """A group's commands by name, through click's public group API (the root loads lazily)."""
    if not hasattr(command, "list_commands"):
        return []
    ctx = typer.Context(command)  # type: ignore[arg-type]
    return [(n, command.get_command(ctx, n)) for n in command.list_commands(ctx)]


def test_root_help_lists_every_command_group() -> None:
    listed = listed_commands()
    assert {"db", "ais", "aisr"} <= set(listed)
    assert listed == visible_commands()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("ais",), AIS),
        (("ais", "set", "REF"), AIS_SET),
        (("ais", "set", "REF", "tool"), AIS_TOOL),
        (("ais", "set", "REF", "rule"), AIS_RULE),
        (("ais", "set", "REF", "mcp"), AIS_MCP),
        (("ais", "set", "REF", "direction"), ["plans", "cooperate"]),
        (("ais", "set", "REF", "provider"), ["add", "remove"]),
        (("ais", "set", "REF", "speech-context"), ["count", "window"]),
        (("ais", "situation"), ["list", "show", "scope"]),
        (("ais", "memory"), ["list", "show", "forget", "history"]),
        (("ais", "digest"), ["show", "refresh"]),
        (("ais", "plan"), ["list", "show"]),
        (("ais", "claim"), ["list"]),
        (("ais", "character"), ["export", "erase"]),
        (("audit",), ["list"]),
        (("aisr",), AISR),
        (("mcp",), ["serve"]),
        (("world",), ["zones", "rooms", "room", "progs", "character", "online", "snapshot"]),
        (("aisr", "set", "REF"), AISR_SET),
    ],
)
def test_group_help_lists_exactly_the_documented_commands(
    args: tuple[str, ...], expected: list[str]
) -> None:
    assert listed_commands(*args) == expected
    assert expected == visible_commands(*(a for a in args if a != "REF"))


def test_ais_set_help_without_a_storyteller_still_lists_its_commands() -> None:
    assert listed_commands("ais", "set") == AIS_SET


@pytest.mark.parametrize(
    ("args", "aliases"),
    [
        (("ais", "create"), "Aliases: new."),
        (("ais", "set", "REF", "reasoning"), "Aliases: effort."),
        (
            ("ais", "set", "REF", "system-prompt"),
            "Aliases: system, systemprompt, eventsystem, eventprompt.",
        ),
        (("ais", "set", "REF", "surveillance"), "Aliases: watch."),
        (("ais", "set", "REF", "tool", "add"), "Aliases: new."),
        (("ais", "set", "REF", "rule", "add"), "Aliases: new."),
        (("ais", "set", "REF", "rule", "remove"), "Aliases: delete."),
        (("aisr", "set", "REF", "storyteller"), "Aliases: restriction, restrict."),
    ],
)
def test_command_help_names_its_aliases(args: tuple[str, ...], aliases: str) -> None:
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0
    assert aliases in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    "args",
    [("ais", name) for name in AIS if name != "set"]
    + [("ais", "digest", name) for name in ("show", "refresh")]
    + [("ais", "plan", name) for name in ("list", "show")]
    + [("ais", "claim", "list")]
    + [("ais", "set", "REF", name) for name in AIS_SET]
    + [("ais", "set", "REF", "tool", name) for name in AIS_TOOL]
    + [("ais", "set", "REF", "rule", name) for name in AIS_RULE]
    + [("ais", "set", "REF", "mcp", name) for name in AIS_MCP]
    + [("ais", "memory", "history"), ("ais", "character", "export"), ("ais", "character", "erase")]
    + [("audit", "list")]
    + [("aisr", name) for name in AISR if name != "set"]
    + [("aisr", "set", "REF", name) for name in AISR_SET],
)
def test_every_command_has_a_summary(args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    usage, summary = _usage_and_summary(result.stdout)
    assert usage.startswith("Usage: ") and args[-1] in usage
    assert summary[0].isupper() and summary.endswith(".")


def _usage_and_summary(text: str) -> tuple[str, str]:
    """The usage line and the first paragraph after it, each joined onto one line."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    return paragraphs[0], paragraphs[1]


def every_command_line() -> list[list[str]]:
    """``--help`` lines of every visible command and group (REF stands in for arguments)."""
    lines: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        lines.append([*path, "--help"])
        for name, sub in _subcommands(command):
            if not sub.hidden:  # type: ignore[attr-defined]
                params = getattr(command, "params", [])
                refs = ["REF" for p in params if p.param_type_name == "argument"]
                walk(sub, [*path, *refs, name])

    walk(typer.main.get_command(app), [])
    return lines


def test_every_command_is_walked() -> None:
    lines = every_command_line()
    assert len(lines) > 80
    assert ["ais", "set", "REF", "tool", "add", "--help"] in lines


@pytest.mark.parametrize("line", every_command_line(), ids=" ".join)
def test_help_shows_no_bare_type_names(line: list[str]) -> None:
    result = CliRunner().invoke(app, line, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "<str>" not in result.output
    if line[0] == "costs":
        assert re.search(r"--since\s+TEXT", result.output)
