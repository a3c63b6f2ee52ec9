"""``storyteller db``: schema migrations."""

from __future__ import annotations

from typing import Annotated

import typer

from storyteller_daemon.cli.support import JsonFlag, console, open_store, print_json, run_async

app = typer.Typer(
    help="Database schema: upgrade, downgrade, show the current revision.", no_args_is_help=True
)


@app.command("upgrade")
@run_async
async def upgrade(
    ctx: typer.Context,
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Apply migrations (creates the database file if needed)."""
    async with open_store(ctx, migrated=False) as store:
        before = await store.db.current_revision()
        await store.db.upgrade(revision)
        after = await store.db.current_revision()
    console.print(f"database upgraded: {before or 'empty'} -> {after}")


@app.command("downgrade")
@run_async
async def downgrade(
    ctx: typer.Context,
    revision: Annotated[str, typer.Argument(help="Target revision, or 'base' to remove all.")],
) -> None:
    """Revert migrations down to a revision."""
    async with open_store(ctx, migrated=False) as store:
        before = await store.db.current_revision()
        await store.db.downgrade(revision)
        after = await store.db.current_revision()
    console.print(f"database downgraded: {before or 'empty'} -> {after or 'empty'}")


@app.command("current")
@run_async
async def current(
    ctx: typer.Context,
    as_json: JsonFlag = False,
) -> None:
    """Show the database's revision and the newest one this version ships."""
    async with open_store(ctx, migrated=False) as store:
        now, head = await store.db.current_revision(), store.db.head_revision()
    if as_json:
        print_json({"current": now, "head": head, "up_to_date": now == head})
        return
    state = "up to date" if now == head else "needs `storyteller db upgrade`"
    console.print(f"current: {now or 'empty'}  head: {head}  ({state})")
