"""``storyteller policy``: the limits every prog call passes, and the kill switch.

``policy kill`` creates the kill switch's file flag: from the daemon's next prog call on, every
storyteller's prog calls are refused (attention, situations, memories and read-only tools go
on), and the flag survives restarts. ``policy resume`` removes it. ``policy show`` prints the
limits in force (docs/security.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.common import console, fail, print_json, state
from storyteller_daemon.errors import ConfigError

if TYPE_CHECKING:
    from storyteller_daemon.config import Config

app = typer.Typer(
    help="The policy every prog call passes: show it, stop all prog calls, resume.",
    no_args_is_help=True,
)


def _config(ctx: typer.Context) -> Config:
    try:
        return state(ctx).config()
    except ConfigError as exc:
        raise fail(str(exc), ConfigError.exit_code) from None


def _kill_file(cfg: Config) -> Path:
    from storyteller_daemon.agent.policy import kill_file_path
    from storyteller_daemon.app import database_url

    try:
        path = kill_file_path(cfg.policy, database_url(cfg))
    except ConfigError as exc:
        raise fail(str(exc), ConfigError.exit_code) from None
    if path is None:
        raise fail(
            "no kill file: set [policy] kill_file to a path the daemon can read "
            "(a PostgreSQL database has no file to put it beside)",
            ConfigError.exit_code,
        )
    return path


@app.command("kill")
def kill(ctx: typer.Context) -> None:
    """Stop every storyteller's prog calls now (survives restarts) until `policy resume`."""
    path = _kill_file(_config(ctx))
    try:
        path.touch()
    except OSError as exc:
        raise fail(f"cannot create {path}: {exc.strerror}", 73) from None
    console.print(
        f"kill switch on ({path}): the daemon refuses every prog call from its next one; "
        "`storyteller policy resume` lifts it"
    )


@app.command("resume")
def resume(ctx: typer.Context) -> None:
    """Lift the kill switch's file flag (a `kill_switch = true` setting stays in force)."""
    cfg = _config(ctx)
    path = _kill_file(cfg)
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise fail(f"cannot remove {path}: {exc.strerror}", 73) from None
    if cfg.policy.kill_switch:
        console.print("file flag removed, but [policy] kill_switch = true still stops prog calls")
    else:
        console.print("kill switch off: prog calls run again from the daemon's next one")


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The limits in force and whether the kill switch is on."""
    cfg = _config(ctx)
    policy = cfg.policy
    try:
        path: Path | None = _kill_file(cfg)
    except typer.Exit:
        path = None
    data: dict[str, Any] = {
        "kill_switch": policy.kill_switch or (path is not None and os.path.exists(path)),
        "kill_file": str(path) if path is not None else None,
        **policy.model_dump(exclude={"kill_switch", "kill_file"}),
    }
    if as_json:
        print_json(data)
        return
    for key, value in data.items():
        console.print(f"{key:<28} {value}")
