"""Custom tools: admin-defined functions that run one of the game's progs.

A custom tool's parameters are its prog's ordered named parameters, all required, described by
the storyteller's stored descriptions. A tool is offered only when it is valid:

* its name fits the API's pattern and does not collide with a built-in;
* the prog exists in the world's catalogue and compiles;
* there is exactly one description per prog parameter (names compared case-insensitively);
* every parameter type can be supplied by a tool call (`progs.schema`).

Invalid tools are never offered, and a call to one is refused with the reason. Echo-only tools
are offered on room-echo and speech triggers only.

Dispatch strips markup and chat mentions from text arguments, converts the arguments with
`progs.convert`, checks every character, room, item and exit they name against the world
(`world_ids`: a null or unknown id is refused and the game is not asked), then runs the prog
with an idempotency key derived from the turn key, the tool name and the converted arguments,
so that re-running a turn after a crash returns the stored outcome instead of acting twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from progs.convert import ArgumentError, convert_arguments
from progs.results import custom_tool_result
from progs.schema import UnsupportedParameterType, tool_parameters_schema
from progs.types import ProgSignature, ProgType, ValueType
from storyteller_daemon.agent.effects import Effect, prog_effect
from storyteller_daemon.agent.schema import strict_schema
from storyteller_daemon.agent.tools.arguments import MalformedArguments, parse_arguments
from storyteller_daemon.agent.tools.base import Envelope, Tool, error, idempotency_key, invoke
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.mcp import approved_mcp_tool
from storyteller_daemon.agent.tools.world_ids import check_world_ids
from storyteller_daemon.domain.approvals import Approval
from storyteller_daemon.domain.argument_limits import WORD_CHARS
from storyteller_daemon.domain.mcp import PREFIX as MCP_PREFIX
from storyteller_daemon.domain.storytellers import CustomTool, Storyteller, validate_tool_name
from storyteller_daemon.domain.text import outbound_text
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.errors import ToolError, ValidationError
from world_adapter.errors import WorldCommandError

log = logging.getLogger(__name__)
_TEXT = ValueType(ProgType.TEXT)


class InvalidCustomTool(Exception):
    """A custom tool cannot be offered; the message says why, for admins and the model."""


def find_prog(catalogue: Sequence[ProgSignature], ref: str) -> ProgSignature | None:
    """The prog that `ref` (an id or a case-insensitive name) names, if any."""
    return next((p for p in catalogue if p.matches(ref)), None)


async def catalogue(ctx: ToolContext) -> tuple[ProgSignature, ...]:
    """The turn's prog catalogue: the one in the context, or the world's (empty if it fails)."""
    if ctx.progs is not None:
        return ctx.progs
    try:
        return tuple(await ctx.services.world.progs())
    except WorldCommandError as exc:
        log.warning("the world's prog catalogue is unavailable, no custom tools offered: %s", exc)
        return ()


def build_custom_tool(custom: CustomTool, progs: Sequence[ProgSignature]) -> Tool:
    """The `Tool` for a valid custom tool.

    Raises:
        InvalidCustomTool: the tool is not valid (see the module docstring).
    """
    name = custom.name
    try:
        validate_tool_name(name, BUILTIN_TOOL_NAMES)
    except ValidationError as exc:
        raise InvalidCustomTool(str(exc)) from None
    signature = find_prog(progs, custom.prog)
    if signature is None:
        raise InvalidCustomTool(f"Custom tool '{name}' has no prog (no prog '{custom.prog}').")
    if signature.compile_error.strip():
        raise InvalidCustomTool(
            f"Custom tool '{name}' is invalid because its prog does not compile."
        )
    described = sorted(p.lower() for p, _ in custom.parameter_descriptions)
    if described != sorted(p.lower() for p in signature.parameter_names):
        raise InvalidCustomTool(
            f"Custom tool '{name}' is invalid because its parameter descriptions do not match "
            f"the parameters of prog {signature.name} "
            f"({', '.join(signature.parameter_names) or 'none'})."
        )
    try:
        authored = tool_parameters_schema(
            [(p, custom.description_for(p.name) or "") for p in signature.parameters]
        )
    except (UnsupportedParameterType, ValueError) as exc:
        raise InvalidCustomTool(f"Custom tool '{name}' is invalid: {exc}") from None
    parameters = signature.parameters
    return Tool(
        name,
        custom.description,
        strict_schema(authored),
        _ProgRunner(name, signature),
        effect=lambda arguments: prog_effect(parameters, arguments),
        # What a prog says reaches the game in the storyteller's voice: never players' words,
        # unless its pack says otherwise.
        dictation={"*": custom.dictated or "refuse"},
    )


def validate_custom_tool(custom: CustomTool, progs: Sequence[ProgSignature]) -> str | None:
    """Why a custom tool cannot be offered, or None when it is valid (for admin listings)."""
    try:
        build_custom_tool(custom, progs)
    except InvalidCustomTool as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class _ProgRunner:
    """The handler of one custom tool."""

    tool_name: str
    signature: ProgSignature

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        # Text the game shows players goes out without ANSI, MXP, colour or control codes, and
        # without chat mentions.
        texts = {p.name.lower() for p in self.signature.parameters if p.type == _TEXT}
        arguments = {
            k: outbound_text(v) if k.lower() in texts and isinstance(v, str) else v
            for k, v in arguments.items()
        }
        for parameter in self.signature.parameters:
            longest = _longest_text(arguments.get(parameter.name))
            if parameter.type.element is not ProgType.TEXT and longest > WORD_CHARS:
                raise ToolError(
                    f"Parameter '{parameter.name}' holds a text of {longest} characters; a "
                    f"{parameter.type.describe()} takes at most {WORD_CHARS}."
                )
        try:
            converted = convert_arguments(self.signature.parameters, arguments)
        except (ArgumentError, UnsupportedParameterType) as exc:
            raise ToolError(str(exc)) from None
        await check_world_ids(self.signature.parameters, converted, ctx.services.world)
        key = idempotency_key(ctx.turn_key, self.tool_name, converted)
        outcome = await ctx.services.world.execute_prog(str(self.signature.id), converted, key)
        return custom_tool_result(self.tool_name, self.signature.return_type, outcome.value)


def _longest_text(value: Any) -> int:
    """The length of the longest string in a JSON value (0 for none)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return max((_longest_text(v) for v in value), default=0)
    return 0


@dataclass(frozen=True)
class CustomToolset:
    """The custom tools of one turn.

    Attributes:
        offered: valid tools for this trigger, sorted by name case-insensitively.
        refusals: lower-cased name → why a call to that tool is refused in this turn.
    """

    offered: tuple[Tool, ...] = ()
    refusals: dict[str, str] = field(default_factory=dict)


def custom_toolset(
    storyteller: Storyteller, progs: Sequence[ProgSignature], *, include_echo_tools: bool
) -> CustomToolset:
    """The custom tools a turn offers, and the reasons the others are held back."""
    offered: list[Tool] = []
    refusals: dict[str, str] = {}
    for custom in sorted(storyteller.custom_tools, key=lambda t: t.name.casefold()):
        if custom.echo_only and not include_echo_tools:
            refusals[custom.name.lower()] = (
                f"Custom tool '{custom.name}' is offered only for room echoes and speech."
            )
            continue
        try:
            offered.append(build_custom_tool(custom, progs))
        except InvalidCustomTool as exc:
            log.info("storyteller %s: %s", storyteller.id, exc)
            refusals[custom.name.lower()] = str(exc)
    return CustomToolset(tuple(offered), refusals)


async def run_approved(
    storyteller: Storyteller, approval: Approval, ctx: ToolContext
) -> tuple[Envelope, Effect | None]:
    """Run a parked call an admin approved, under the call's own turn key (`Approval.run_key`).

    The tool is built again from the storyteller's current settings and the world's catalogue
    (an MCP tool: its grant and its server's listing), so a tool removed or broken since the
    call was parked fails here instead of running.

    Returns:
        The result envelope, and what the call touched (None when it did not run).
    """
    custom = storyteller.tool(approval.tool)
    try:
        if custom is not None:
            tool = build_custom_tool(custom, await catalogue(ctx))
        elif approval.tool.lower().startswith(MCP_PREFIX):
            tool = await approved_mcp_tool(storyteller, approval.tool, ctx)
        else:
            return error(f"storyteller {storyteller.name} has no custom tool {approval.tool}"), None
        arguments = parse_arguments(approval.arguments)
    except (InvalidCustomTool, MalformedArguments, ToolError, ValidationError) as exc:
        return error(str(exc)), None
    envelope = await invoke(tool, arguments, ctx.for_turn(storyteller, approval.run_key))
    effect = tool.effect(arguments) if tool.effect is not None else None
    return envelope, effect if envelope["ok"] else None
