"""The ``[policy]`` section: the limits every side-effecting tool call passes.

Besides its keys, `PolicyConfig` answers the questions the policy asks of them for one
storyteller and tool: whether its calls are shadowed or wait for approval, the cooldown and
scope of a tool (per-tool settings match tool names ignoring case), whether the destructive
built-ins are offered on player turns, and the limits ``ais show`` lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field

from storyteller_daemon.config.fields import (
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    _Section,
)

_RunLength = Annotated[int, Field(ge=2, le=100)]
DictatedMode = Literal["refuse", "quote", "allow"]
"""What a text argument that repeats players' words may do (`PolicyConfig.dictated`)."""
_MODES: dict[str, DictatedMode] = {"refuse": "refuse", "quote": "quote", "allow": "allow"}


class PolicyConfig(_Section):
    """Limits every side-effecting tool call passes, whatever the model says (docs/security.md)."""

    kill_switch: bool = False
    """Stop every storyteller's prog calls at once; attention and read-only tools go on."""
    kill_file: str = ""
    """While this file exists, prog calls are stopped as by `kill_switch` (``touch`` it)."""
    shadow: list[str] = Field(default_factory=list)
    """Whose prog calls are recorded, not run: a storyteller's name, ``NAME/TOOL`` for one of
    its tools, ``*/TOOL`` for a tool of every storyteller, or ``*`` for everything."""
    event_turn_scope: Literal["trigger_rooms", "surveillance"] = "trigger_rooms"
    """Where a turn started by a world event may act: the rooms of its events, or anywhere the
    storyteller watches. Heartbeat and direct turns may act anywhere it watches."""
    tool_scope: dict[str, Literal["trigger_rooms", "surveillance"]] = Field(default_factory=dict)
    """`event_turn_scope` for single tools by name (a town crier that speaks in every room)."""
    event_turn_exits: NonNegativeInt = 0
    """With ``trigger_rooms``: rooms this many exits or fewer from an event's room (through any
    door, inside the surveillance) are in scope too; 0 keeps the events' own rooms."""
    approve: list[str] = Field(default_factory=list)
    """Whose prog calls wait for an admin (``storyteller policy approve ID``), in the form of
    `shadow`: a storyteller's name, ``NAME/TOOL``, ``*/TOOL`` or ``*``."""
    approval_expiry_seconds: PositiveFloat = 3600.0
    """A parked call not approved within this many seconds expires and never runs."""
    max_prog_calls_per_turn: PositiveInt = 3
    target_cooldown_seconds: NonNegativeFloat = 600.0
    """The same prog tool on the same room or character at most once in this many seconds."""
    tool_cooldown_seconds: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    """`target_cooldown_seconds` for single tools by name (a summons: once per 10 minutes)."""
    max_prog_calls_per_hour: PositiveInt = 60
    """Prog calls of all storytellers together in any hour."""
    max_prog_calls_per_storyteller_per_hour: PositiveInt = 20
    """Prog calls of one storyteller in any hour."""
    max_prog_calls_per_storyteller_per_day: PositiveInt = 120
    """Prog calls of one storyteller in any 24 hours."""
    max_prog_calls_per_player_per_hour: PositiveInt = 6
    """Prog calls set off by one character's words or actions (echo, speech, crime) an hour."""
    max_text_chars: PositiveInt = 600
    """Longest text a prog argument may carry."""
    destructive_on_player_turns: bool | list[str] = False
    """Offer ForgetMemory, UpdateMemory, ResolveSituation and UpdateSituation on echo and speech
    turns too: ``true`` for every storyteller, or a list of storytellers' names."""
    dictated_words: _RunLength = 6
    """A text argument repeating this many consecutive words of players' words the turn read
    (case, punctuation, width, invisible characters and look-alike letters ignored) is
    dictated."""
    dictated_words_by_tool: dict[str, _RunLength] = Field(default_factory=dict)
    """`dictated_words` for single tools by name."""
    dictated_quoted_words: Annotated[int, Field(ge=1, le=100)] = 2
    """A span of at least this many words a player put in quotation marks makes a text
    argument that repeats it dictated, however short."""
    dictated: dict[str, DictatedMode] = Field(default_factory=dict)
    """What a dictated text argument may do, by ``TOOL`` or ``TOOL.Argument``: ``refuse``,
    ``quote`` (kept only inside quotation marks) or ``allow``. Unnamed: prog tools refuse,
    memory and situation titles refuse, their bodies quote, other tools allow."""
    prescribed_values: list[str] = Field(default_factory=list)
    """Tools whose number and one-word arguments may not take a value players' words put
    right next to the tool's purpose ("strength 6", "a hostile patrol")."""

    def shadows(self, storyteller: str, tool: str = "") -> bool:
        """Whether `storyteller`'s calls of `tool` are simulated instead of run."""
        return _covers(self.shadow, storyteller, tool)

    def needs_approval(self, storyteller: str, tool: str) -> bool:
        """Whether `storyteller`'s calls of `tool` wait for an admin's approval."""
        return _covers(self.approve, storyteller, tool)

    def cooldown_for(self, tool: str) -> float:
        """Seconds between calls of `tool` on the same room or character."""
        return _by_tool(self.tool_cooldown_seconds, tool, self.target_cooldown_seconds)

    def scope_for(self, tool: str) -> Literal["trigger_rooms", "surveillance"]:
        """Where a call of `tool` on a turn started by world events may act."""
        return _by_tool(self.tool_scope, tool, self.event_turn_scope)

    def dictated_words_for(self, tool: str) -> int:
        """How many consecutive words copied from players make an argument of `tool` dictated."""
        return _by_tool(self.dictated_words_by_tool, tool, self.dictated_words)

    def dictated_mode(self, tool: str, argument: str, default: DictatedMode) -> DictatedMode:
        """What a dictated `argument` of `tool` may do: ``TOOL.Argument``, else ``TOOL``, else
        the tool's own `default`."""
        wanted = (f"{tool}.{argument}".casefold(), tool.strip().casefold())
        for key in wanted:
            for name, mode in self.dictated.items():
                if name.strip().casefold() == key:
                    return mode
        return default

    def prescribes(self, tool: str) -> bool:
        """Whether `tool`'s number and one-word arguments are checked for prescribed values."""
        return tool.strip().casefold() in {n.strip().casefold() for n in self.prescribed_values}

    def destructive_for(self, storyteller: str) -> bool:
        """Whether `storyteller` is offered the destructive built-ins on echo and speech turns."""
        setting = self.destructive_on_player_turns
        if isinstance(setting, bool):
            return setting
        return storyteller.strip().casefold() in {n.strip().casefold() for n in setting}

    def for_storyteller(
        self,
        storyteller: str,
        tools: Sequence[str],
        dictated: Mapping[str, str | None] | None = None,
    ) -> dict[str, Any]:
        """The limits one storyteller's prog tools run under (``ais show``); `dictated` gives
        each tool's own mode for players' words (its pack's; unnamed: refuse)."""
        return {
            "kill_switch": self.kill_switch,
            "max_prog_calls_per_turn": self.max_prog_calls_per_turn,
            "max_prog_calls_per_hour": self.max_prog_calls_per_storyteller_per_hour,
            "max_prog_calls_per_day": self.max_prog_calls_per_storyteller_per_day,
            "max_prog_calls_per_hour_all_storytellers": self.max_prog_calls_per_hour,
            "max_prog_calls_per_player_per_hour": self.max_prog_calls_per_player_per_hour,
            "max_text_chars": self.max_text_chars,
            "destructive_on_player_turns": self.destructive_for(storyteller),
            "tools": {
                tool: {
                    "scope": self.scope_for(tool),
                    "cooldown_seconds": self.cooldown_for(tool),
                    "shadow": self.shadows(storyteller, tool),
                    "approve": self.needs_approval(storyteller, tool),
                    "dictated": self.dictated_mode(
                        tool, "*", _MODES.get((dictated or {}).get(tool) or "", "refuse")
                    ),
                    "dictated_words": self.dictated_words_for(tool),
                    "prescribed_values": self.prescribes(tool),
                }
                for tool in tools
            },
        }


_V = TypeVar("_V")


def _by_tool(settings: Mapping[str, _V], tool: str, default: _V) -> _V:
    """A per-tool setting by tool name, ignoring case; `default` for a tool it does not name."""
    wanted = tool.strip().casefold()
    return next((v for k, v in settings.items() if k.strip().casefold() == wanted), default)


def _covers(entries: Sequence[str], storyteller: str, tool: str) -> bool:
    """Whether ``NAME``, ``NAME/TOOL``, ``*/TOOL`` or ``*`` entries cover a storyteller's tool."""
    folded = {n.strip().casefold() for n in entries}
    name, tool = storyteller.strip().casefold(), tool.strip().casefold()
    return bool(folded & {"*", name, f"{name}/{tool}", f"*/{tool}"})
