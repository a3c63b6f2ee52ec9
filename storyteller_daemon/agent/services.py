"""What a turn may use besides the model, declared once: `TurnServices`.

The composition root fills one with the live world and repositories and hands it whole to the
turn runner; the run recorder wraps each of its services to tape what they answer
(`runs.tape.record_services`), a replay builds one whose services answer from the tape
(`runs.tape.replay_services`), and tools reach it as `ToolContext.services`. All three walk the
fields generically (`service_fields`): each field's declared protocol says which methods are
taped, an optional field left None is skipped. Adding a store to what turns may use is adding
one field here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.ports import (
    DigestStore,
    McpToolbox,
    MemoryStore,
    ProviderQueries,
    ReferenceStore,
    SceneClaimStore,
    SituationStore,
    SpeechHistory,
    StoryPlanStore,
    TurnJournal,
)
from world_adapter.protocol import WorldClient

UNTAPED = "untaped"
"""Field metadata key: the tape leaves this service alone (a replay gets None)."""


def untaped() -> Any:
    """An optional field the tape neither records nor replays (what a turn keeps for itself)."""
    return dataclasses.field(default=None, metadata={UNTAPED: True})


@dataclass(frozen=True)
class TurnServices:
    """The world and the stores a turn reads and writes.

    Attributes:
        world: the game, for characters, rooms and running progs.
        situations: the situation repository.
        memories: the character-memory repository.
        references: the reference-document repository.
        speech: what was said lately in watched rooms (None: prompts go without it).
        digests: the storytellers' digests (None: prompts go without one).
        mcp: the MCP servers granted tools call (None: none configured).
        plans: the story plans (None: plans cannot be kept).
        claims: the scene claims (None: scenes cannot be claimed).
        queries: context providers' read-only queries (None: query providers read nothing).
        journal: what running turns have done (None: a turn re-run after a crash starts over;
            its prog calls are still kept from running twice by their idempotency keys). Not
            taped: it is the turn's own bookkeeping, and a replay keeps none.
    """

    world: WorldClient
    situations: SituationStore
    memories: MemoryStore
    references: ReferenceStore
    speech: SpeechHistory | None = None
    digests: DigestStore | None = None
    mcp: McpToolbox | None = None
    plans: StoryPlanStore | None = None
    claims: SceneClaimStore | None = None
    queries: ProviderQueries | None = None
    journal: TurnJournal | None = untaped()


@dataclass(frozen=True)
class ServiceField:
    """One field of a `TurnServices` (or of a subclass).

    Attributes:
        name: the field's name, which is also the service's name on a tape.
        protocol: the declared type without ``None``: its awaited methods are what is taped.
        optional: whether None is allowed (then a turn goes without the service).
        taped: whether the tape records and replays it (see `untaped`).
    """

    name: str
    protocol: type[Any]
    optional: bool
    taped: bool


def service_fields(services: type[TurnServices]) -> tuple[ServiceField, ...]:
    """The fields of `services`, in declaration order, with their declared protocols.

    Raises:
        TypeError: a field's type is not one protocol (optionally ``| None``).
    """
    hints = typing.get_type_hints(services)
    found = []
    for item in dataclasses.fields(services):
        declared = hints[item.name]
        options = typing.get_args(declared) if _is_union(declared) else (declared,)
        kinds = [o for o in options if o is not type(None)]
        if len(kinds) != 1 or not isinstance(kinds[0], type):
            raise TypeError(f"service {item.name} must be declared as one protocol, not {declared}")
        optional = len(kinds) < len(options)
        taped = not item.metadata.get(UNTAPED, False)
        found.append(ServiceField(item.name, kinds[0], optional, taped))
    return tuple(found)


def _is_union(declared: Any) -> bool:
    return typing.get_origin(declared) in (typing.Union, types.UnionType)
