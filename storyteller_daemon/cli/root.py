"""The root command: the table of top-level commands, their lazy loading, the global options.

Each top-level command lives in the module (or package) of its name under ``cli/`` and is
imported only when it runs, asks for its own help or completes its arguments: the root's help
lists every command from `COMMANDS` without importing one.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from storyteller_daemon import __version__
from storyteller_daemon.cli.support import CliState
from storyteller_daemon.errors import EX_USAGE

CLICK_USAGE_EXIT = 2
"""The exit code click gives a usage mistake; the root turns it into EX_USAGE."""


@dataclass(frozen=True)
class Entry:
    """Where a top-level command is defined, and its one-line help for the root's listing."""

    module: str
    attribute: str
    """``app`` for a command group (a `typer.Typer`), else the command's function."""
    help: str
    """The first paragraph of the command's help, exactly (a test keeps the two equal)."""


COMMANDS: dict[str, Entry] = {
    "costs": Entry(
        "costs",
        "costs",
        "Tokens and USD of model requests, summed by day, storyteller, trigger, situation or\n"
        "status (failed requests included, with what they may be billed).",
    ),
    "dashboard": Entry(
        "dashboard",
        "dashboard",
        "Serve the web dashboard from the database until Ctrl-C (no daemon needed).",
    ),
    "run": Entry(
        "run",
        "run",
        "Run the storyteller daemon against the configured world until SIGINT/SIGTERM.",
    ),
    "demo": Entry(
        "demo",
        "demo",
        "Migrate a fresh SQLite file, load the packs, and watch a storyteller work (Ctrl-C ends).",
    ),
    "doctor": Entry(
        "doctor",
        "doctor",
        "Check the config, database, model endpoints and models, world (and that storytellers fit\n"
        "it) and webhook; exit 1 on any problem.",
    ),
    "init": Entry(
        "init",
        "init",
        "Probe your game over the bridge and write a configuration and a starter pack for it.",
    ),
    "db": Entry("db", "app", "Database schema: upgrade, downgrade, show the current revision."),
    "cluster": Entry(
        "cluster",
        "app",
        "Several daemons sharing one PostgreSQL database: which daemon runs which storyteller.",
    ),
    "ais": Entry(
        "ais", "app", "Storytellers: list, create, show, configure, pause, delete, clone."
    ),
    "aisr": Entry(
        "aisr", "app", "Reference documents: list, create, show, edit, restrict, search."
    ),
    "seed": Entry("seed", "app", "Example storyteller packs: list and load."),
    "sim": Entry("sim", "app", "The embedded sim world, served over the bridge protocol."),
    "bridge": Entry(
        "bridge",
        "app",
        "The game bridge: check a game's implementation, print the frames' JSON Schema.",
    ),
    "world": Entry(
        "world", "app", "The configured world, read-only: zones, rooms, progs, characters."
    ),
    "tools": Entry("tools", "app", "The built-in tools every storyteller is offered."),
    "bench": Entry(
        "bench",
        "app",
        "Benchmarks: pipeline throughput, reference search, the dashboard's pages, bad "
        "tool-call arguments and the daemon's start-up.",
    ),
    "eval": Entry(
        "evals",
        "evaluate",
        "Run a pack's scenarios through the whole daemon against a model and report how often\n"
        "each expectation held (exit 1 below the threshold).",
    ),
    "runs": Entry(
        "runs",
        "app",
        "Run records: list and show what storytellers did, replay a turn, compare a change, prune.",
    ),
    "policy": Entry(
        "policy",
        "app",
        "The policy every prog call passes: show it, stop all prog calls, resume, approve.",
    ),
    "mcp": Entry(
        "mcp", "app", "The daemon's MCP server: storytellers, runs and decisions for AI clients."
    ),
    "audit": Entry("audit", "app", "The audit log of exports and erasures of players' data."),
}
"""Every top-level command, in the order the root's help lists them."""

_LOADED: dict[str, Any] = {}
"""Commands built once per process (typer builds the root anew for every invocation)."""


def _annotation(param: Any) -> Any:
    return getattr(getattr(param, "type_descriptor", None), "annotation", None)


def _no_type(ctx: Any) -> None:
    return None


def _tidy_metavars(command: Any) -> None:
    """Help without type noise: a flag shows no value, a text option shows TEXT (typer would
    print ``<bool>`` and ``<str>``); numbers, choices and paths keep their typed hints."""
    for param in command.params:
        if param.param_type_name == "argument" and _annotation(param) is str:
            param.__dict__["display_type_rich"] = _no_type  # the name says it; <str> is noise
            continue
        if param.metavar is not None or not param.opts or not param.opts[0].startswith("-"):
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif _annotation(param) is str:
            param.metavar = "TEXT"
    help_option = command.get_help_option(typer.Context(command))  # made once, then cached
    if help_option is not None:
        help_option.metavar = ""
    for sub in (getattr(command, "commands", None) or {}).values():
        _tidy_metavars(sub)


def load(name: str) -> Any:
    """The click command of the top-level command `name`, importing its module on first use."""
    if name not in _LOADED:
        entry = COMMANDS[name]
        module = importlib.import_module(f"storyteller_daemon.cli.{entry.module}")
        target = getattr(module, entry.attribute)
        holder = typer.Typer(add_completion=False)
        holder.callback()(lambda: None)  # a group, so the command is built as a subcommand
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=name)
        else:
            holder.command(name)(target)
        command = typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]
        _tidy_metavars(command)
        _LOADED[name] = command
    return _LOADED[name]


class _Listed(TyperCommand):
    """A command as the root's help and completion name it, without importing it."""


class _Root(TyperGroup):
    """The root command: it loads its commands lazily (see `COMMANDS`); a usage mistake anywhere
    below it exits 64 (EX_USAGE), not click's 2; its help and its commands' show no bare type
    names."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if self._listing and cmd_name not in _LOADED:
            return _Listed(name=cmd_name, help=COMMANDS[cmd_name].help)
        return load(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        self._listing = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        self.commands = dict.fromkeys(COMMANDS)  # type: ignore[assignment]  # names to suggest
        try:
            return super().resolve_command(ctx, args)
        finally:
            self.commands = {}

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_tidied", False):
            _tidy_metavars(self)
            self._tidied = True
        try:
            return super().make_context(*args, **kwargs)
        except Exception as exc:
            _as_usage_exit(exc)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            _as_usage_exit(exc)
            raise


def _as_usage_exit(exc: Exception) -> None:
    """A click usage mistake (the exception that exits 2) exits EX_USAGE instead."""
    if getattr(exc, "exit_code", None) == CLICK_USAGE_EXIT and hasattr(exc, "format_message"):
        exc.exit_code = EX_USAGE  # type: ignore[attr-defined]


app = typer.Typer(
    name="storyteller",
    help="AI storyteller daemon for MUD worlds: configure storytellers, run the daemon.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=_Root,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"storyteller {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            envvar="STORYTELLER_CONFIG",
            help="Configuration file (default: ./storyteller.toml if present).",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", envvar="STORYTELLER_DB", help="Database URL; overrides the config."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    actor: Annotated[
        str | None,
        typer.Option("--actor", hidden=True, help="Who the audit log names (in-game commands)."),
    ] = None,
) -> None:
    """Global options."""
    ctx.obj = CliState(config_path=config, database_url=db, actor=actor)


def run() -> None:
    """Run the command line (`storyteller_daemon.cli.main`): usage mistakes become one line,
    like every other error."""
    from storyteller_daemon.cli.support import err_console

    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:
        # click's errors (typer vendors click privately) carry their message and exit code.
        exit_code = getattr(exc, "exit_code", None)
        if not isinstance(exit_code, int) or not hasattr(exc, "format_message"):
            raise
        message = exc.format_message().strip()
        if message:  # an empty message follows the help text shown for a bare group
            err_console.print(f"[bold red]error:[/] {message} (see --help)", markup=True)
        sys.exit(exit_code)
    sys.exit(code if isinstance(code, int) else 0)
