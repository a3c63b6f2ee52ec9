"""``storyteller doctor``: check everything the daemon depends on, one line per check.

Each check prints ``ok`` or ``problem`` with what it found, and for a problem a ``fix`` line
saying what to do. The command exits 1 when any check found a problem, so it can gate a
deployment. It changes nothing, except that ``--send-test-alert`` posts one alert to Discord.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Annotated

import typer

from storyteller_daemon.cli.doctor.checks import Doctor
from storyteller_daemon.cli.doctor.findings import Finding
from storyteller_daemon.cli.support import JsonFlag, console, print_json, run_async, state


def report(findings: list[Finding]) -> None:
    """Print one line per finding, and a fix line under each problem."""
    width = max(len(f.check) for f in findings)
    for f in findings:
        status = "ok" if f.ok else "problem"
        console.print(f"{status:<8} {f.check:<{width}}  {f.detail}", markup=False)
        if not f.ok:
            console.print(f"{'':<8} {'fix':<{width}}  {f.fix}", markup=False)


@run_async
async def doctor(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", help="Configuration file (same as the global option)."),
    ] = None,
    send_test_alert: Annotated[
        bool, typer.Option("--send-test-alert", help="Post a test alert to the Discord webhook.")
    ] = False,
    check_seconds: Annotated[
        float, typer.Option(help="Seconds each network check may take.", min=0.1)
    ] = 10.0,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Contact no model endpoint (by default each model in use gets two tiny test "
            "requests, a tool call and a JSON schema, which cost a few tokens).",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Check the config, database, model endpoints and models, world (and that storytellers fit
    it) and webhook; exit 1 on any problem."""
    if config is not None:
        state(ctx).config_path = config
    findings = await Doctor(os.environ, check_seconds, offline=offline).run(
        state(ctx).config, send_test_alert=send_test_alert
    )
    if as_json:
        print_json([asdict(f) for f in findings])
    else:
        report(findings)
    if not all(f.ok for f in findings):
        raise typer.Exit(1)
