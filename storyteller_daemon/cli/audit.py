"""``storyteller audit``: the audit log of admin actions on players' data.

Exports and erasures of a character (``storyteller ais character export|erase``) each write one
entry: when, who (the operating-system user, or ``--actor``), what, about which character, and
the counts of what was exported or erased, never the data itself.
"""

from __future__ import annotations

from typing import Annotated

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    open_store,
    parse_id,
    print_json,
    register,
    run_async,
    table,
)
from storyteller_daemon.cli.views.characters import AUDIT_COLUMNS, audit_json, audit_row
from storyteller_daemon.domain.character_data import subject
from storyteller_daemon.errors import ValidationError

app = typer.Typer(
    help="The audit log of exports and erasures of players' data.", no_args_is_help=True
)


@register(app, "list")
@run_async
async def list_entries(
    ctx: typer.Context,
    character: Annotated[
        str | None, typer.Option("--character", metavar="N", help="Only about this character.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many entries.")] = 100,
    json_out: JsonFlag = False,
) -> None:
    """Audit log entries, newest first."""
    if limit <= 0:
        raise ValidationError(f"--limit must be a positive number, not {limit}.")
    about = subject(parse_id(character, "character")) if character is not None else None
    async with open_store(ctx) as store:
        entries = await store.audit.list(subject=about, limit=limit)
    if json_out:
        print_json([audit_json(e) for e in entries])
    else:
        table(
            "Audit log entries",
            AUDIT_COLUMNS,
            [audit_row(e) for e in entries],
            wide={"Detail", "Actor"},
        )
