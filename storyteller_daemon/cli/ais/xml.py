"""``storyteller ais export|import``: FutureMUD's surveillance and custom-tool XML documents.

An import parses and validates the whole document before anything is written, and then saves
the storyteller in one transaction, so a bad document changes nothing. An export to a file goes
through a temporary file in the same directory, so a failed export leaves no partial file.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from storyteller_daemon.cli.support import open_store, register, run_async, say
from storyteller_daemon.cli.views.catalogue import Catalogue, check_tool, find_prog, load_catalogue
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ValidationError


class Part(StrEnum):
    """Which FutureMUD document of a storyteller."""

    SURVEILLANCE = "surveillance"
    TOOLS = "tools"

    @classmethod
    def parse(cls, value: str) -> Part:
        """``surveillance`` or ``tools``; a one-line error otherwise."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ValidationError(f"'{value}' is not a part; use surveillance or tools.") from None


Ref = Annotated[str, typer.Argument(metavar="REF", help="Storyteller id or name.")]
PartOption = Annotated[
    str,
    typer.Option(
        "--part",
        metavar="PART",
        help="surveillance (the <Definition> document) or tools (the <ToolCalls> document, "
        "which also holds speech context, the player information prog and attention rules).",
    ),
]


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path`, or leave `path` as it was."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as exc:
        raise ValidationError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise ValidationError(f"Cannot write {path}: {exc.strerror or exc}.") from None


def _progs_as_ids(st: Storyteller, catalogue: Catalogue) -> Storyteller:
    """Prog references as the world's numeric ids, which FutureMUD requires in ``<Prog>``.

    Packs name progs (ids differ between worlds); a name the world does not know is kept.
    """

    def as_id(ref: str | None) -> str | None:
        prog = find_prog(catalogue, ref) if ref else None
        return str(prog.id) if prog is not None else ref

    tools = tuple(replace(t, prog=as_id(t.prog) or t.prog) for t in st.custom_tools)
    return replace(st, custom_tools=tools, player_info_prog=as_id(st.player_info_prog))


async def export_part(
    ctx: typer.Context,
    ref: Ref,
    part: PartOption,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write to this file instead of stdout.", dir_okay=False
        ),
    ] = None,
) -> None:
    """Write a storyteller's surveillance or tools as FutureMUD XML."""
    from storyteller_daemon.interchange.futuremud_xml import render_surveillance, render_tool_calls

    which = Part.parse(part)
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
    if which is Part.TOOLS:
        st = _progs_as_ids(st, await load_catalogue(ctx))
    text = (
        render_surveillance(st.surveillance)
        if which is Part.SURVEILLANCE
        else render_tool_calls(st)
    )
    if not text.endswith("\n"):
        text += "\n"
    if output is None:
        sys.stdout.write(text)
        return
    _write_atomically(output, text)
    say(f"Exported the {which} of {st.name} to {output}.")


async def import_part(
    ctx: typer.Context,
    ref: Ref,
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="The XML document ('-' for stdin).", dir_okay=False),
    ],
    part: PartOption,
) -> None:
    """Replace a storyteller's surveillance or tools with a FutureMUD XML document."""
    from storyteller_daemon.interchange.futuremud_xml import (
        apply_tool_calls,
        parse_surveillance,
        parse_tool_calls,
    )

    which = Part.parse(part)
    document = _read_document(file)
    if which is Part.SURVEILLANCE:
        surveillance = parse_surveillance(document)

        def change(st: Storyteller) -> Storyteller:
            return replace(st, surveillance=surveillance)
    else:
        definition = parse_tool_calls(document)

        def change(st: Storyteller) -> Storyteller:
            return apply_tool_calls(st, definition)

    # Asked before saving, so nothing can fail between the write and the confirmation.
    catalogue = await load_catalogue(ctx) if which is Part.TOOLS else None
    async with open_store(ctx) as store:
        current = await store.storytellers.get(ref)
        saved = await store.storytellers.save(change(current))
    if which is Part.SURVEILLANCE:
        say(f"Imported the surveillance of {saved.name}: {saved.surveillance.describe()}.")
        return
    invalid = [t.name for t in saved.custom_tools if check_tool(t, catalogue).valid is False]
    note = f"; not offered until fixed: {', '.join(invalid)}" if invalid else ""
    # Rules are named whenever the import touched them, so replacing rules with none is said.
    rules = (
        f", {len(saved.attention_rules)} attention rule(s)"
        if saved.attention_rules or current.attention_rules
        else ""
    )
    grants = (
        f", {len(saved.mcp_grants)} MCP server grant(s)"
        if saved.mcp_grants or current.mcp_grants
        else ""
    )
    say(
        f"Imported {len(saved.custom_tools)} custom tool(s){rules}{grants} and the speech "
        f"context of {saved.name}{note}."
    )


def _read_document(file: Path) -> bytes:
    # Bytes, not text: the parser then honours the document's own encoding declaration.
    if str(file) == "-":
        return sys.stdin.buffer.read()
    try:
        return file.read_bytes()
    except OSError as exc:
        raise ValidationError(f"Cannot read {file}: {exc.strerror or exc}.") from None


def register_commands(app: typer.Typer) -> None:
    """Add ``export`` and ``import`` to the ``ais`` group."""
    register(app, "export")(run_async(export_part))
    register(app, "import")(run_async(import_part))
