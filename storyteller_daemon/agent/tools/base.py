"""What every tool shares: the `Tool` type, result envelopes, text limits and prog keys.

A tool's handler takes the parsed arguments (`tools.arguments` reads them) and the context
(`tools.context.ToolContext`) and returns the ``result`` payload (plain JSON values,
FutureMUD's keys). A failure the model should see is raised as `ToolError`; `invoke` turns both
into the envelope sent back to the model:
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.models.interface import ToolSpec
from storyteller_daemon.agent.schema import strict_schema
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.errors import ConflictError, NotFoundError, ToolError, ValidationError
from world_adapter.errors import WorldCommandError

log = logging.getLogger(__name__)

Envelope = dict[str, Any]
MAX_ERROR_CHARS = 500
"""The longest error message a tool call gets back."""
MALFORMED_PREFIX = "Malformed tool-call JSON: "

# Errors whose message is written for the model (ids and rules, never secrets or player text
# beyond what the model itself sent).
_MODEL_VISIBLE_ERRORS = (
    ToolError,
    NotFoundError,
    ValidationError,
    ConflictError,
    WorldCommandError,
)

Handler = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    Attributes:
        name: the function name the model uses.
        description: what the tool does, for the model.
        parameters: the strict JSON schema of the arguments.
        handler: does the work and returns the ``result`` payload, or raises `ToolError`.
        effect: what a call would touch in the game (tools that run progs).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    effect: Callable[[Mapping[str, Any]], Effect] | None = None
    """For a tool that acts on the game (a prog): what a call's arguments would touch, so the
    policy can check it first. None for tools that only read or keep the storyteller's notes."""
    names: Callable[[Mapping[str, Any]], Effect] | None = None
    """For a built-in: the rooms and characters a call names, which the policy holds to the
    turn's scope on turns a player's words or actions start."""
    writes: bool = False
    """A built-in that creates or changes the storyteller's notes (situations, memories,
    story plans, scene claims): its writes and its result are kept in one transaction in the
    turn journal, so a turn re-run after a crash writes nothing twice."""
    text_limits: Mapping[str, int] = field(default_factory=dict)
    """Argument path (``Title``, ``Steps[].Intent``) → the most characters its text may have
    (`domain.argument_limits`); stated in the schema's descriptions, checked by `invoke`."""
    outside: bool = False
    """Its results are outside text the daemon cannot vouch for (an MCP server's): every string
    in them counts as players' words for the dictation rules."""
    own_words: bool = False
    """Its results show only what the storyteller wrote with checks of its own (a story plan:
    its texts may not copy players' words when written), so reading them back gives a turn no
    players' words, whatever the entry's mark; the director acts on its plans' words."""
    dictation: Mapping[str, str] = field(default_factory=dict)
    """Text argument (``*``: every one) → what it may do when it repeats players' words:
    ``refuse``, ``quote`` (only inside quotation marks) or ``allow`` (the default for arguments
    not named); ``[policy] dictated`` overrides it (`agent.dictation`)."""

    @classmethod
    def define(
        cls,
        name: str,
        description: str,
        handler: Handler,
        properties: Mapping[str, Mapping[str, Any]] | None = None,
        required: Sequence[str] = (),
        names: Callable[[Mapping[str, Any]], Effect] | None = None,
        writes: bool = False,
        limits: Mapping[str, int] | None = None,
        dictation: Mapping[str, str] | None = None,
        own_words: bool = False,
    ) -> Tool:
        """A tool from its authored schema, normalised for strict mode.

        Args:
            name: the function name.
            description: what it does.
            handler: the implementation.
            properties: JSON-schema properties of the arguments, in order.
            required: the properties the model must supply; the others become nullable.
            names: the rooms and characters a call names (see `Tool.names`).
            writes: whether it writes the storyteller's notes (see `Tool.writes`).
            limits: the longest text each text argument may have, by path (see
                `Tool.text_limits`); each path must lead to a property of `properties`.
            dictation: what each text argument may do with players' words (see
                `Tool.dictation`).
            own_words: whether its results are the storyteller's own words (see
                `Tool.own_words`).
        """
        authored = {
            "type": "object",
            "properties": copy.deepcopy({k: dict(v) for k, v in (properties or {}).items()}),
            "required": list(required),
        }
        for path, limit in (limits or {}).items():
            prop = _property_at(authored, path)
            # Stated in words, not as `maxLength`: strict function tools may refuse that keyword
            # (the whole request fails), and the check below holds the limit either way.
            if "enum" not in prop:  # a choice of words needs no length, only the check
                said = f"{prop.get('description', '')} At most {limit} characters."
                prop["description"] = said.strip()
        return cls(
            name,
            description,
            strict_schema(authored),
            handler,
            names=names,
            text_limits=dict(limits or {}),
            writes=writes,
            dictation=dict(dictation or {}),
            own_words=own_words,
        )

    def spec(self) -> ToolSpec:
        """How the tool is offered in a request."""
        return ToolSpec(self.name, self.description, self.parameters)


def ok(result: Any) -> Envelope:
    """The success envelope."""
    return {"ok": True, "result": result}


def error(message: str) -> Envelope:
    """The failure envelope."""
    return {"ok": False, "error": message}


def dump_envelope(envelope: Envelope) -> str:
    """The envelope as the compact JSON text sent back as a ``function_call_output``."""
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


def check_text_limits(tool: Tool, arguments: Mapping[str, Any]) -> None:
    """Refuse a text argument longer than its limit (`Tool.text_limits`).

    A value that is not a string is measured as the JSON text a handler would keep of it.

    Raises:
        ToolError: one line naming the argument, its length and the limit.
    """
    for path, limit in tool.text_limits.items():
        for where, value in _values_at(arguments, path.split("."), ""):
            if value is None:
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if len(text) > limit:
                raise ToolError(
                    f"Property '{where}' is {len(text)} characters long; at most {limit} are "
                    "allowed."
                )


def _values_at(value: Any, steps: list[str], where: str) -> list[tuple[str, Any]]:
    """The values at a path like ``Steps[].WaitFor.Words``, each with its concrete path."""
    if not steps:
        return [(where, value)]
    if not isinstance(value, Mapping):
        return []
    key, many = steps[0].removesuffix("[]"), steps[0].endswith("[]")
    here = f"{where}.{key}" if where else key
    child = value.get(key)
    if not many:
        return _values_at(child, steps[1:], here)
    if not isinstance(child, list):
        return _values_at(child, steps[1:], here)
    found: list[tuple[str, Any]] = []
    for index, item in enumerate(child):
        found.extend(_values_at(item, steps[1:], f"{here}[{index}]"))
    return found


def _property_at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The property schema a limit path names (``Steps[].Intent``: an array's items' one)."""
    node = schema
    for step in path.split("."):
        node = node["properties"][step.removesuffix("[]")]
        if step.endswith("[]"):
            node = node["items"]
    return node


def canonical_arguments(arguments: Mapping[str, Any]) -> str:
    """Arguments as canonical JSON text (sorted keys, no spaces), for recognising repeats."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def idempotency_key(turn_key: str, tool_name: str, arguments: Mapping[str, Any]) -> str:
    """The key under which the world remembers a prog run, so a re-run turn never acts twice.

    Stable across processes: a SHA-256 of the turn key, the tool name and the canonical
    arguments.
    """
    material = "\x1f".join((turn_key, tool_name, canonical_arguments(arguments)))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


async def invoke(tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> Envelope:
    """Run a tool's handler and wrap the outcome in an envelope; never raises for tool failures.

    An unexpected exception is logged with its traceback and shown to the model only by type,
    because its message may hold internals.
    """
    try:
        check_text_limits(tool, arguments)
        return ok(await tool.handler(arguments, ctx))
    except _MODEL_VISIBLE_ERRORS as exc:
        return error(one_line(str(exc)))
    except Exception as exc:
        log.exception("tool %s failed for storyteller %s", tool.name, ctx.storyteller_id)
        return error(f"Tool handler error: {type(exc).__name__}.")


def one_line(message: str) -> str:
    """An error message as one line of at most `MAX_ERROR_CHARS` characters: a game or a
    check may quote the model's own (possibly huge) argument back."""
    line = " ".join(message.split())
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 3] + "..."


def from_players(entry: dict[str, Any], from_player: bool) -> dict[str, Any]:
    """`entry`, marked ``FromPlayers: true`` when its text was written from players' words."""
    return {**entry, "FromPlayers": True} if from_player else entry


def texts_from_players(value: Any, marked: bool = False) -> Iterable[str]:
    """The strings of a tool result that came from players: those inside an entry marked
    ``FromPlayers: true`` (`from_players`), or every string when `marked`."""
    if isinstance(value, str):
        if marked:
            yield value
    elif isinstance(value, Mapping):
        marked = marked or value.get("FromPlayers") is True
        for item in value.values():
            yield from texts_from_players(item, marked)
    elif isinstance(value, list):
        for item in value:
            yield from texts_from_players(item, marked)


def iso(moment: datetime) -> str:
    """A datetime as ISO-8601 text."""
    return moment.isoformat()
