"""``storyteller ais set REF tool …``: custom tools, the progs the model may call.

Unlike FutureMUD, tool names are checked against the model API's pattern and the built-in tool
names, and rebinding a tool to another prog also drops descriptions of parameters the new prog
does not have. Progs are stored by id when the world's prog catalogue knows them (as FutureMUD
stores them); when the catalogue is unknown, progs and parameters are taken on trust and the
confirmation says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais.set.selection import apply_change
from storyteller_daemon.cli.support import command_group, register, run_async
from storyteller_daemon.cli.views.catalogue import (
    Catalogue,
    describe_prog,
    find_prog,
    load_checkable,
    stored_reference,
)
from storyteller_daemon.domain.storytellers import CustomTool, Storyteller, validate_tool_name
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.errors import (
    ConflictError,
    NotFoundError,
    ServiceUnavailable,
    ValidationError,
)

app = command_group("Custom tools: add, remove, describe, rebind, toggle echo-only. Alias: tools.")

ToolName = Annotated[str, typer.Argument(metavar="NAME", help="Custom tool name.")]
ProgRef = Annotated[str, typer.Argument(metavar="PROG", help="Prog id or name.")]
Words = Annotated[list[str], typer.Argument(metavar="TEXT")]

_UNCHECKED = " (not checked against the world's progs: --unchecked)"
_TAKE_AS_TYPED = " (--unchecked takes it as typed)"
_UNREACHABLE = " (world unreachable and no stored catalogue: not checked against its progs)"
Unchecked = Annotated[
    bool,
    typer.Option(
        "--unchecked",
        help="Take PROG as typed, without checking it against the world's progs (live or stored).",
    ),
]


async def _progs_for(ctx: typer.Context, prog: str, unchecked: bool) -> tuple[Catalogue, str]:
    """The catalogue PROG is checked against (the world's, else the one last stored) and the
    confirmation's note; no catalogue with `unchecked`.

    Raises:
        ServiceUnavailable: the world cannot be asked and no catalogue was ever stored.
    """
    if unchecked:
        return None, _UNCHECKED
    catalogue, note = await load_checkable(ctx)
    if catalogue is None:
        raise ServiceUnavailable(
            f"The world is unreachable and no catalogue of its progs is stored, so '{prog}' "
            "cannot be checked: start the game (the daemon, or a tool command run while it is up, "
            "stores its progs), or pass --unchecked to take it as typed."
        )
    return catalogue, note


def _tool(st: Storyteller, name: str) -> CustomTool:
    tool = st.tool(name)
    if tool is None:
        raise NotFoundError(f"Storyteller {st.name} has no custom tool named '{name}'.")
    return tool


def _swap(st: Storyteller, old: CustomTool, new: CustomTool) -> Storyteller:
    return replace(st, custom_tools=tuple(new if t is old else t for t in st.custom_tools))


def _offered(tool: CustomTool) -> str:
    return "on echo and speech triggers only" if tool.echo_only else "on every trigger"


@register(app, "add", "new")
@run_async
async def add_tool(
    ctx: typer.Context,
    name: ToolName,
    prog: ProgRef,
    echo: Annotated[bool, typer.Option("--echo", help="Offer it on echo and speech only.")] = False,
    unchecked: Unchecked = False,
) -> None:
    """Add a custom tool that runs PROG; parameter descriptions start blank.

    PROG is checked against the world's progs, or, while the world is unreachable, against the
    catalogue stored when it last answered.
    """
    validate_tool_name(name, BUILTIN_TOOL_NAMES)
    catalogue, note = await _progs_for(ctx, prog, unchecked)
    stored = stored_reference(catalogue, prog, hint=_TAKE_AS_TYPED)
    signature = find_prog(catalogue, stored)
    tool = CustomTool(name=name, description=f"Custom tool {name}", prog=stored, echo_only=echo)
    if signature is not None:
        tool = tool.rebound(signature.parameter_names)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if st.tool(name) is not None:
            raise ConflictError(f"Storyteller {st.name} already has a custom tool named '{name}'.")
        return replace(st, custom_tools=(*st.custom_tools, tool)), (
            f"Storyteller {st.name} has a new tool {name} running "
            f"{describe_prog(catalogue, tool.prog)}, offered {_offered(tool)}{note}."
        )

    await apply_change(ctx, change)


@register(app, "remove", "delete")
@run_async
async def remove_tool(ctx: typer.Context, name: ToolName) -> None:
    """Remove a custom tool."""

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        gone = _tool(st, name)
        kept = tuple(t for t in st.custom_tools if t is not gone)
        return replace(st, custom_tools=kept), f"Removed tool {gone.name} from {st.name}."

    await apply_change(ctx, change)


@register(app, "description", "desc")
@run_async
async def describe_tool(ctx: typer.Context, name: ToolName, text: Words) -> None:
    """Set the description the model reads for a tool."""
    value = " ".join(text).strip()
    if not value:
        raise ValidationError("A tool description must not be blank.")

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        tool = _tool(st, name)
        return _swap(st, tool, replace(tool, description=value)), (
            f"Tool {tool.name} of {st.name} has a new description."
        )

    await apply_change(ctx, change)


def _parameter_name(tool: CustomTool, catalogue: Catalogue, parameter: str) -> str:
    """The prog's own spelling of `parameter`; checked only when the catalogue is known."""
    if catalogue is None:
        return next(
            (n for n, _ in tool.parameter_descriptions if n.casefold() == parameter.casefold()),
            parameter,
        )
    signature = find_prog(catalogue, tool.prog)
    if signature is None:
        raise NotFoundError(
            f"Tool {tool.name} runs '{tool.prog}', which the world does not have; "
            "rebind it with `tool prog` first."
        )
    for real in signature.parameter_names:
        if real.casefold() == parameter.casefold():
            return real
    known = ", ".join(signature.parameter_names) or "none"
    raise NotFoundError(
        f"Prog {signature.name} has no parameter '{parameter}' (its parameters: {known})."
    )


@register(app, "parameter", "param")
@run_async
async def describe_parameter(
    ctx: typer.Context,
    name: ToolName,
    parameter: Annotated[str, typer.Argument(metavar="PARAM", help="Parameter of the prog.")],
    text: Words,
) -> None:
    """Set the description the model reads for one parameter of a tool's prog."""
    value = " ".join(text).strip()
    catalogue, note = await load_checkable(ctx)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        tool = _tool(st, name)
        real = _parameter_name(tool, catalogue, parameter)
        descs = [(n, d) for n, d in tool.parameter_descriptions if n.casefold() != real.casefold()]
        position = next(
            (
                i
                for i, (n, _) in enumerate(tool.parameter_descriptions)
                if n.casefold() == real.casefold()
            ),
            len(descs),
        )
        descs.insert(position, (real, value))
        new = replace(tool, parameter_descriptions=tuple(descs))
        tail = _UNREACHABLE if catalogue is None else note
        return _swap(st, tool, new), (
            f"Parameter {real} of tool {tool.name} has a new description{tail}."
        )

    await apply_change(ctx, change)


@register(app, "prog")
@run_async
async def rebind_tool(
    ctx: typer.Context, name: ToolName, prog: ProgRef, unchecked: Unchecked = False
) -> None:
    """Bind a tool to another prog (checked as `add` checks it); descriptions are re-aligned to
    its parameters."""
    catalogue, note = await _progs_for(ctx, prog, unchecked)
    stored = stored_reference(catalogue, prog, hint=_TAKE_AS_TYPED)
    signature = find_prog(catalogue, stored)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        tool = _tool(st, name)
        new = replace(tool, prog=stored)
        if signature is not None:
            new = new.rebound(signature.parameter_names)
        return _swap(st, tool, new), (
            f"Tool {tool.name} of {st.name} now runs {describe_prog(catalogue, new.prog)}{note}."
        )

    await apply_change(ctx, change)


@register(app, "echo")
@run_async
async def toggle_echo(ctx: typer.Context, name: ToolName) -> None:
    """Toggle whether a tool is offered only on echo and speech triggers."""

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        tool = _tool(st, name)
        new = replace(tool, echo_only=not tool.echo_only)
        return _swap(st, tool, new), f"Tool {tool.name} of {st.name} is offered {_offered(new)}."

    await apply_change(ctx, change)
