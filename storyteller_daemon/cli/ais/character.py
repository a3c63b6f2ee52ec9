"""``storyteller ais character …``: everything held about one character, exported or erased.

A character here is the game's character id; what is held about them spans every storyteller.
Both commands are written to the audit log (``storyteller audit list``) with counts only.
``erase`` first reports what it would delete and redact and asks before doing it (``--yes``
skips the question, ``--dry-run`` only reports). See docs/security.md for what erasure covers
and what it cannot reach.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, TextIO

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    acting_user,
    command_group,
    fail,
    open_store,
    parse_id,
    print_json,
    register,
    run_async,
    say,
    table,
)
from storyteller_daemon.cli.views.characters import export_json, report_json, report_lines
from storyteller_daemon.domain.character_data import ErasureReport
from storyteller_daemon.errors import ValidationError

app = command_group(
    "Everything held about one character, across storytellers: export, erase. Alias: characters."
)

CharacterId = Annotated[str, typer.Argument(metavar="ID", help="The game's character id.")]
Also = Annotated[
    list[str] | None,
    typer.Option(
        "--also",
        metavar="TEXT",
        help="Another name to look for (a first name, a nickname); may be repeated.",
    ),
]
Actor = Annotated[
    str | None,
    typer.Option("--actor", metavar="NAME", help="Who to name in the audit log (default: you)."),
]


@register(app, "export")
@run_async
async def export(
    ctx: typer.Context,
    character: CharacterId,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the JSON to FILE.", dir_okay=False
        ),
    ] = None,
    also: Also = None,
    actor: Actor = None,
) -> None:
    """Print everything held about a character as JSON (memories, their history, situations,
    speech, events, parked calls, runs and digests that mention them)."""
    ident = parse_id(character, "character")
    sink = _open(output) if output is not None else None  # before the export is audited
    with sink or contextlib.nullcontext():
        async with open_store(ctx) as store:
            record = await store.characters.export(
                ident, actor=actor or acting_user(ctx), also=also or ()
            )
        document = export_json(record, store.clock.now())
        if sink is None:
            print_json(document)
            return
        sink.write(json.dumps(document, indent=2, default=str, ensure_ascii=False) + "\n")
    counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in record.counts.items() if n)
    say(f"Wrote what is held about character #{ident} to {output} ({counts or 'nothing held'}).")


def _open(path: Path) -> TextIO:
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"Cannot write {path}: {exc.strerror or exc}.") from None


@register(app, "erase")
@run_async
async def erase(
    ctx: typer.Context,
    character: CharacterId,
    yes: Annotated[bool, typer.Option("--yes", help="Erase without asking.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what would be erased.")
    ] = False,
    also: Also = None,
    actor: Actor = None,
    json_out: JsonFlag = False,
) -> None:
    """Delete a character's memories, their history, their situations and speech, and redact
    every other mention of their texts and id, in one transaction."""
    ident = parse_id(character, "character")
    who, names = actor or acting_user(ctx), also or ()
    async with open_store(ctx) as store:
        if not yes or dry_run:
            preview = await store.characters.erase(ident, actor=who, also=names, dry_run=True)
            if dry_run:
                _show(preview, json_out)
                return
            if not preview.deleted and not preview.redacted and not preview.rejected_approvals:
                say(f"Nothing is held about character #{ident}; nothing to erase.")
                return
            for line in report_lines(preview):
                typer.echo(line, err=True)
            if not typer.confirm(f"Erase all of this about character #{ident}?", err=True):
                raise fail(f"Nothing about character #{ident} was erased.")
        report = await store.characters.erase(ident, actor=who, also=names)
    _show(report, json_out)


def _show(report: ErasureReport, json_out: bool) -> None:
    if json_out:
        print_json(report_json(report))
        return
    for line in report_lines(report):
        say(line)
    rows = [[column, n] for column, n in sorted(report.redacted.items())]
    if rows:
        table("Redacted", ["Column", "Rows"], rows)
