"""``storyteller seed``: list the example packs and load one, idempotently."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.bundled import bundled_dir
from storyteller_daemon.cli.support import (
    JsonFlag,
    console,
    err_console,
    fail,
    open_store,
    print_json,
    run_async,
    state,
    table,
    working,
)
from storyteller_daemon.errors import EX_DATAERR, ConfigError

if TYPE_CHECKING:
    from storyteller_daemon.interchange.packs.contents import Pack
    from storyteller_daemon.storage.seeding import LoadReport

# storage (SQLAlchemy) is imported by the commands themselves, so `--help` stays quick.
SEED_DIR = bundled_dir("seed")

_PACK_WIDE = frozenset({"Description", "Written for", "Storytellers", "Documents"})

app = typer.Typer(help="Example storyteller packs: list and load.", no_args_is_help=True)

SeedDir = Annotated[
    Path,
    typer.Option(
        "--seed-dir", help="Directory whose sub-directories are packs.", show_default=False
    ),
]


def _summary(report: LoadReport) -> str:
    from storyteller_daemon.storage.seeding import Action

    if not report.changed:
        return f"pack {report.pack}: no changes"
    created, updated = report.count(Action.CREATE), report.count(Action.UPDATE)
    unchanged = report.count(Action.UNCHANGED)
    verbs = ("would create", "would update") if report.dry_run else ("created", "updated")
    counts = f"{verbs[0]} {created}, {verbs[1]} {updated}, unchanged {unchanged}"
    suffix = " (dry run: nothing written)" if report.dry_run else ""
    return f"pack {report.pack}: {counts}{suffix}"


async def _check_world(ctx: typer.Context, pack: Pack) -> None:
    """Refuse a pack whose storytellers name what the configured world does not have."""
    from storyteller_daemon.app.world_access import reach_world, world_facts
    from storyteller_daemon.domain.world_fit import misfits

    async with reach_world(state(ctx).config(), os.environ) as world:
        facts = await world_facts(world, pack.storytellers)
    found = [m for st in pack.storytellers for m in misfits(st, facts)]
    for misfit in found:
        err_console.print(f"misfit: {misfit}", markup=False)
    if found:
        raise fail(
            f"pack {pack.name} does not fit {facts.identity}: {len(found)} misfit(s) above; "
            "nothing loaded (`storyteller world` lists the world's ids and progs)",
            EX_DATAERR,
        )


@app.command("list")
@run_async
async def list_(
    seed_dir: SeedDir = SEED_DIR,
    as_json: JsonFlag = False,
) -> None:
    """Show the packs under seed/: the world each was written for, its storytellers and how many
    documents it holds."""
    from storyteller_daemon.interchange.packs.files import list_packs, read_pack

    rows: list[tuple[str, str, str, str, str]] = []
    packs: list[dict[str, object]] = []
    for pack_dir in list_packs(seed_dir):
        try:
            pack = read_pack(pack_dir, seed_dir)
        except ConfigError as exc:
            rows.append((pack_dir.name, f"invalid: {exc}", "", "", ""))
            packs.append({"name": pack_dir.name, "error": str(exc)})
            continue
        storytellers = [st.name for st in pack.storytellers]
        rows.append(
            (
                pack.name,
                pack.description,
                pack.world or "unsaid",
                ", ".join(storytellers) or "none",
                str(len(pack.documents)),
            )
        )
        packs.append(
            {
                "name": pack.name,
                "description": pack.description,
                "storytellers": storytellers,
                "documents": len(pack.documents),
                "world": pack.world,
            }
        )
    if as_json:
        print_json(packs)
        return
    table(
        "Packs",
        ["Pack", "Description", "Written for", "Storytellers", "Documents"],
        rows,
        wide=_PACK_WIDE,
    )


@app.command("load")
@run_async
async def load(
    ctx: typer.Context,
    pack: Annotated[str, typer.Argument(help="A pack name under seed/, or a pack directory.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; write nothing.")
    ] = False,
    check_world: Annotated[
        bool,
        typer.Option(
            "--check-world",
            help="First check the pack against the configured world; load nothing on a misfit.",
        ),
    ] = False,
    seed_dir: SeedDir = SEED_DIR,
    as_json: JsonFlag = False,
) -> None:
    """Create or update a pack's storytellers and documents by name; leave unchanged ones be.

    Everything is validated first and written in one transaction. A storyteller's pause state is
    set only when it is created.
    """
    from storyteller_daemon.interchange.packs.files import read_pack
    from storyteller_daemon.storage.seeding import load_pack

    with working(f"reading and loading pack {pack}"):
        parsed = read_pack(pack, seed_dir)
        if check_world:
            await _check_world(ctx, parsed)
        async with open_store(ctx) as store:
            report = await load_pack(store.db, parsed, dry_run=dry_run, clock=store.clock)
    if as_json:
        print_json(
            {
                "pack": report.pack,
                "dry_run": report.dry_run,
                "changes": [
                    {"kind": c.kind, "name": c.name, "action": c.action.value, "fields": c.fields}
                    for c in report.changes
                ],
            }
        )
        return
    if report.changed or dry_run:
        table(
            None,
            ["Kind", "Name", "Action", "Changed fields"],
            [(c.kind, c.name, c.action.value, ", ".join(c.fields)) for c in report.changes],
            wide={"Name", "Changed fields"},
        )
    console.print(_summary(report))
