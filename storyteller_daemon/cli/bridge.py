"""``storyteller bridge``: check a game's side of the bridge protocol against the spec."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

import typer

from storyteller_daemon.cli.support import (
    DEFAULT_TOKEN_ENV,
    JsonFlag,
    console,
    fail,
    print_json,
    run_async,
)
from storyteller_daemon.errors import EX_CONFIG, EX_USAGE

app = typer.Typer(
    help="The game bridge: check a game's implementation, print the frames' JSON Schema.",
    no_args_is_help=True,
)


def _prog_arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object of arguments by parameter name")
    return value


def _tell_operator(step: str) -> None:
    """Ask the operator to act in the game (on stderr, so ``--json`` output stays clean)."""
    typer.echo(step, err=True)


@app.command("check")
@run_async
async def check(
    url: Annotated[str, typer.Argument(help="The game's bridge URL, ws://host:port/path.")],
    token_env: Annotated[
        str, typer.Option(help="Environment variable holding the shared secret.")
    ] = DEFAULT_TOKEN_ENV,
    prog: Annotated[
        str | None,
        typer.Option(help="A harmless prog to run twice for the idempotency check."),
    ] = None,
    prog_args: Annotated[str, typer.Option(help="The prog's arguments as a JSON object.")] = "{}",
    step_seconds: Annotated[
        float, typer.Option("--timeout", help="Seconds each step may take.", min=0.1)
    ] = 5.0,
    events: Annotated[
        bool,
        typer.Option(
            "--events",
            help="Also check one event of each kind and an invoke, caused by the game's "
            "cause_event hook or, without one, by you in the game when asked.",
        ),
    ] = False,
    event_seconds: Annotated[
        float,
        typer.Option("--event-timeout", help="Seconds to wait for each caused event.", min=0.1),
    ] = 60.0,
    as_json: JsonFlag = False,
) -> None:
    """Run the conformance checks against a running game; exit 1 if any fails."""
    from world_adapter.bridge.client import check_bridge_url
    from world_adapter.bridge.conformance import Status, run_checks

    try:
        check_bridge_url(url)
    except ValueError as exc:
        raise fail(str(exc), EX_USAGE) from None
    token = os.environ.get(token_env, "").strip()
    if not token:
        raise fail(
            f"environment variable {token_env} is not set (the bridge's shared secret)", EX_CONFIG
        )
    arguments = _prog_arguments(prog_args)
    results = await run_checks(
        url,
        token,
        prog=prog,
        prog_arguments=arguments,
        seconds=step_seconds,
        events=_tell_operator if events else None,
        event_seconds=event_seconds,
    )
    failed = sum(r.status is Status.FAIL for r in results)
    skipped = sum(r.status is Status.SKIP for r in results)
    passed = len(results) - failed - skipped
    if as_json:
        print_json(
            {
                "url": url,
                "checks": [
                    {"name": r.name, "status": r.status.value, "detail": r.detail} for r in results
                ],
                "passed": passed,
                "failed": failed,
                "skipped": skipped,
            }
        )
    else:
        styles = {Status.PASS: "green", Status.FAIL: "bold red", Status.SKIP: "yellow"}
        width = max(len(r.name) for r in results)
        for result in results:
            status = f"[{styles[result.status]}]{result.status.value}[/]"
            console.print(f"{status}  {result.name.ljust(width)}  {result.detail}", markup=True)
        console.print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if failed:
        raise typer.Exit(1)


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of every protocol frame (generated from the daemon's code)."""
    from world_adapter.bridge.schema import frame_schema

    print_json(frame_schema())
