"""What every tool shares: the `Tool` type, its `ToolContext`, result envelopes, argument readers.

A tool's handler takes the parsed arguments and the context and returns the ``result`` payload
(plain JSON values, FutureMUD's keys). A failure the model should see is raised as `ToolError`;
`invoke` turns both into the envelope sent back to the model:
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``.

Argument readers follow FutureMUD's rules for strict schemas, where every property is present
and an optional one arrives as ``null``: null means absent; ids may be numbers, numeric strings
or objects with an ``Id`` key.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from progs.scalars import ID_KEYS, MAX_ID, integer_value, is_id
from progs.types import ProgSignature
from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.models.interface import ToolSpec
from storyteller_daemon.agent.ports import (
    McpToolbox,
    MemoryStore,
    ReferenceStore,
    SceneClaimStore,
    SituationStore,
    StoryPlanStore,
    TurnJournal,
)
from storyteller_daemon.agent.schema import strict_schema
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.argument_limits import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_DEPTH,
    MalformedJson,
    json_object,
)
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.domain.situations import Provenance
from storyteller_daemon.errors import ConflictError, NotFoundError, ToolError, ValidationError
from world_adapter.errors import WorldCommandError
from world_adapter.facts import CharacterInfo, RoomInfo
from world_adapter.protocol import WorldClient

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


class Taint:
    """Whether players' text has reached a turn: through its trigger (their speech or echoes),
    its prompt (stored text that came from players) or what its tools read. Whatever the turn
    then writes is marked as coming from players (`Provenance.from_player`).

    It also keeps the texts themselves, so the policy can tell an argument that repeats them
    (`agent.dictation`): `heard` are players' words as they came (its trigger's, MCP answers),
    `noted` what it reads of them second hand (its prompt's recent speech and entries written
    from players' words, tool results marked ``FromPlayers``).
    """

    def __init__(
        self, seen: bool = False, *, heard: Iterable[str] = (), noted: Iterable[str] = ()
    ) -> None:
        self.heard: list[str] = []
        self.noted: list[str] = [t for t in noted if t.strip()]
        self.seen = seen or bool(self.noted)
        self.hear(heard)

    def saw(self, from_player: bool) -> None:
        """Note that the turn read text; `from_player` says whether players' text was in it."""
        self.seen = self.seen or from_player

    def hear(self, texts: Iterable[str]) -> None:
        """Note players' words the turn read (blank and repeated texts are skipped)."""
        _add(self.heard, texts, self)

    def note(self, texts: Iterable[str]) -> None:
        """Note stored text written from players' words that the turn read."""
        _add(self.noted, texts, self)


def _add(kept: list[str], texts: Iterable[str], taint: Taint) -> None:
    for text in texts:
        if text.strip() and text not in kept:
            kept.append(text)
            taint.seen = True


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler may use.

    The composition root builds one with the long-lived services; `ToolLoop.run` narrows it to
    a turn with `for_turn`.

    Attributes:
        world: the game, for characters, rooms and running progs.
        situations: the situation repository.
        memories: the character-memory repository.
        references: the reference-document repository.
        progs: the world's prog catalogue for this turn; None means "ask the world once".
        storyteller: whose turn it is (set by `for_turn`).
        turn_key: the turn's stable key; prog calls derive their idempotency keys from it.
        events: the cursors of the turn's trigger events (set by `for_turn`).
        taint: whether players' text has reached the turn (`for_turn` makes one per turn,
            seeded from the trigger and from this context's own).
        mcp: the MCP servers the storyteller's granted tools call (None: none configured).
        plans: the story plans (None: plans cannot be kept).
        claims: the scene claims (None: scenes cannot be claimed).
        plannable: the tools a plan of this storyteller may name (`registry.plannable_tools`,
            set by the tool loop for each turn).
        journal: what running turns have done (None: a turn re-run after a crash starts over;
            its prog calls are still kept from running twice by their idempotency keys).
    """

    world: WorldClient
    situations: SituationStore
    memories: MemoryStore
    references: ReferenceStore
    progs: tuple[ProgSignature, ...] | None = None
    storyteller: Storyteller | None = None
    turn_key: str = ""
    events: tuple[str, ...] = ()
    taint: Taint = field(default_factory=Taint)
    mcp: McpToolbox | None = None
    plans: StoryPlanStore | None = None
    claims: SceneClaimStore | None = None
    plannable: frozenset[str] = frozenset()
    journal: TurnJournal | None = None

    def for_turn(
        self, storyteller: Storyteller, turn_key: str, trigger: Trigger | None = None
    ) -> ToolContext:
        """This context bound to one storyteller's turn (and its trigger, for provenance).

        Raises:
            ValueError: the storyteller was never saved (it has no id) or the key is blank.
        """
        if storyteller.id is None:
            raise ValueError(f"storyteller '{storyteller.name}' has no id; save it first")
        if not turn_key.strip():
            raise ValueError("turn_key must not be blank")
        events: tuple[str, ...] = ()
        from_player = self.taint.seen
        heard = list(self.taint.heard)
        if trigger is not None:
            events = tuple(str(t.event.cursor) for t in trigger.all if t.event is not None)
            from_player = from_player or trigger.carries_player_text
            heard += trigger.player_words
        return replace(
            self,
            storyteller=storyteller,
            turn_key=turn_key,
            events=events,
            taint=Taint(from_player, heard=heard, noted=self.taint.noted),
        )

    @property
    def provenance(self) -> Provenance:
        """The provenance of what this turn writes now."""
        return Provenance(run=self.turn_key, events=self.events, from_player=self.taint.seen)

    @property
    def current(self) -> Storyteller:
        """The storyteller of this turn.

        Raises:
            RuntimeError: the context was not bound with `for_turn`.
        """
        if self.storyteller is None or self.storyteller.id is None:
            raise RuntimeError("ToolContext used outside a turn; call for_turn() first")
        return self.storyteller

    @property
    def storyteller_id(self) -> int:
        """The id of this turn's storyteller."""
        storyteller_id = self.current.id
        assert storyteller_id is not None  # guaranteed by `current`
        return storyteller_id


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


class MalformedArguments(Exception):
    """A call's argument text is not a JSON object within the bounds; the message says why."""


def parse_arguments(
    raw: str, *, max_chars: int = DEFAULT_MAX_CHARS, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """Parse a call's argument text, its size and nesting checked before it is parsed.

    Blank text is malformed: a call without arguments sends ``{}``.

    Raises:
        MalformedArguments: the text is too long or too deep, not JSON, or not a JSON object.
    """
    try:
        return json_object(raw, max_chars=max_chars, max_depth=max_depth)
    except MalformedJson as exc:
        raise MalformedArguments(str(exc)) from None


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


def _as_id(value: Any) -> int | None:
    """An integer id from a number, a numeric string or ``{"Id": ...}``; None if not an id."""
    if isinstance(value, dict):
        for key in ID_KEYS:
            if key in value:
                return _as_id(value[key])
        return None
    return integer_value(value)


def optional_id(arguments: Mapping[str, Any], key: str) -> int | None:
    """An optional id argument (null or absent gives None), within signed 64 bits.

    Zero and negative ids pass, as in FutureMUD, whose tools then report them as not found;
    `world_character` and `world_room` answer those without asking the world.

    Raises:
        ToolError: the value is present but not an id, or past what any store can hold.
    """
    value = arguments.get(key)
    if value is None:
        return None
    parsed = _as_id(value)
    if parsed is None:
        raise ToolError(f"Property '{key}' must contain an integer id.")
    if not -MAX_ID - 1 <= parsed <= MAX_ID:
        raise ToolError(f"Property '{key}' must be a positive id; {_shown(parsed)} is not one.")
    return parsed


async def world_character(ctx: ToolContext, character_id: int) -> CharacterInfo | None:
    """The character with this id, or None; an id no world holds is not asked of it."""
    return await ctx.world.character(character_id) if is_id(character_id) else None


async def world_room(ctx: ToolContext, room_id: int) -> RoomInfo | None:
    """The room with this id, or None; an id no world holds is not asked of it."""
    return await ctx.world.room(room_id) if is_id(room_id) else None


def required_id(arguments: Mapping[str, Any], key: str) -> int:
    """A required id argument.

    Raises:
        ToolError: absent or null (``Missing required property 'X'.``) or not an id.
    """
    parsed = optional_id(arguments, key)
    if parsed is None:
        raise ToolError(f"Missing required property '{key}'.")
    return parsed


def optional_int(arguments: Mapping[str, Any], key: str) -> int | None:
    """An optional integer argument (null or absent gives None), within signed 64 bits.

    Raises:
        ToolError: the value is present but not an integer, or too large to store.
    """
    value = arguments.get(key)
    if value is None:
        return None
    parsed = integer_value(value)
    if parsed is None:
        raise ToolError(f"Property '{key}' must be an integer.")
    if not -MAX_ID - 1 <= parsed <= MAX_ID:
        raise ToolError(f"Property '{key}' is out of range; {_shown(parsed)} is too large.")
    return parsed


def _shown(number: int) -> str:
    """A number for an error message: long ones cut short."""
    text = str(number)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"


def optional_text(arguments: Mapping[str, Any], key: str) -> str | None:
    """An optional text argument; non-string JSON values are used as their JSON text."""
    value = arguments.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def required_text(arguments: Mapping[str, Any], key: str) -> str:
    """A required text argument (null counts as missing, unlike FutureMUD which read "").

    Raises:
        ToolError: absent or null.
    """
    text = optional_text(arguments, key)
    if text is None:
        raise ToolError(f"Missing required property '{key}'.")
    return text


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
