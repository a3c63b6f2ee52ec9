"""``storyteller cluster``: several daemons sharing one PostgreSQL database.

``cluster status`` shows, from the database, every daemon that joined (live while its last
renewal has not expired), how many storytellers each holds, its last renewal and the open work
of its storytellers, and the storytellers no live daemon holds (docs/operations.md, "Running a
cluster").
"""

from __future__ import annotations

from typing import Any

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    open_store,
    print_json,
    run_async,
    say,
    table,
    yes_no,
)

app = typer.Typer(
    help="Several daemons sharing one PostgreSQL database: which daemon runs which storyteller.",
    no_args_is_help=True,
)


@app.command("status")
@run_async
async def status(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The daemons, their leases, last renewals and open work, and what no daemon holds."""
    async with open_store(ctx) as store:
        await store.leases.sync()
        seen = await store.leases.status()
    data: dict[str, Any] = {
        "instances": [
            {
                "name": i.name,
                "live": i.live,
                "started_at": i.started_at.isoformat(),
                "renewed_at": i.renewed_at.isoformat(),
                "leases": i.leases,
                "open_work": i.open_work,
            }
            for i in seen.instances
        ],
        "storytellers": seen.storytellers,
        "unowned": seen.unowned,
        "unowned_work": seen.unowned_work,
    }
    if as_json:
        print_json(data)
        return
    table(
        "Daemons",
        ("Instance", "Live", "Leases", "Open work", "Last renewal", "Started"),
        [
            (
                i.name,
                yes_no(i.live),
                i.leases,
                i.open_work,
                f"{i.renewed_at:%Y-%m-%d %H:%M:%S}",
                f"{i.started_at:%Y-%m-%d %H:%M:%S}",
            )
            for i in seen.instances
        ],
    )
    say(
        f"{seen.storytellers} storytellers; {seen.unowned} held by no live daemon "
        f"({seen.unowned_work} open work items waiting)"
    )
