"""The ``storyteller`` command: admin verbs, database, seed packs, the daemon and the demo."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer._click.core import Context
from typer._click.exceptions import UsageError
from typer.core import TyperGroup

from storyteller_daemon import __version__
from storyteller_daemon.cli.common import CliState
from storyteller_daemon.errors import EX_USAGE


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
    help_option = command.get_help_option(Context(command))  # made once, then cached
    if help_option is not None:
        help_option.metavar = ""
    for sub in (getattr(command, "commands", None) or {}).values():
        _tidy_metavars(sub)


class _Root(TyperGroup):
    """The root command: a usage mistake anywhere below it exits 64 (EX_USAGE), not click's 2;
    its help and its commands' show no bare type names."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_tidied", False):
            _tidy_metavars(self)
            self._tidied = True
        try:
            return super().make_context(*args, **kwargs)
        except UsageError as exc:
            exc.exit_code = EX_USAGE
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            exc.exit_code = EX_USAGE
            raise


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


def _register() -> None:
    # Each command group lives in its own module; importing registers nothing globally.
    from storyteller_daemon.cli import (
        ais,
        aisr,
        audit,
        bench,
        bridge,
        costs,
        dashboard,
        db,
        demo,
        doctor,
        init,
        mcp,
        policy,
        run,
        runs,
        seed,
        sim,
        tools,
        world,
    )

    app.add_typer(db.app, name="db")
    app.add_typer(ais.app, name="ais")
    app.add_typer(aisr.app, name="aisr")
    app.add_typer(seed.app, name="seed")
    app.add_typer(sim.app, name="sim")
    app.add_typer(bridge.app, name="bridge")
    app.add_typer(world.app, name="world")
    app.add_typer(tools.app, name="tools")
    app.add_typer(bench.app, name="bench")
    app.add_typer(runs.app, name="runs")
    app.add_typer(policy.app, name="policy")
    app.add_typer(mcp.app, name="mcp")
    app.add_typer(audit.app, name="audit")
    app.command("costs")(costs.costs)
    app.command("dashboard")(dashboard.dashboard)
    app.command("run")(run.run)
    app.command("demo")(demo.demo)
    app.command("doctor")(doctor.doctor)
    app.command("init")(init.init)


_register()


def main() -> None:
    """Console-script entry point: usage mistakes become one line, like every other error."""
    from typer._click.exceptions import ClickException  # typer vendors click
    from typer.exceptions import Abort

    from storyteller_daemon.cli.common import err_console

    try:
        code = app(standalone_mode=False)
    except ClickException as exc:
        message = exc.format_message().strip()
        if message:  # an empty message follows the help text shown for a bare group
            err_console.print(f"[bold red]error:[/] {message} (see --help)", markup=True)
        sys.exit(exc.exit_code)
    except Abort:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
