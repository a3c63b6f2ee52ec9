"""The tape: what the world and the repositories answered during one turn, for exact replay.

While a turn runs, its services (`agent.services.TurnServices`: the world, situations,
memories, reference documents, speech history, the digest, the MCP servers, story plans, scene
claims, context providers' queries...) are wrapped in recording proxies, each by the protocol
its field declares (`record_services`). Each awaited call appends one entry to the turn's
`Tape`: the service, the method, the arguments by name and the result, or the error it raised,
all as JSON. A replay hands the same code proxies that answer from the tape instead
(`replay_services`), so the replayed turn reads the same world and writes nothing:
no prog runs, no situation is created, no MCP tool is called.

A replayed call is matched to the first unused entry with the same service, method and
arguments; a call the tape does not hold is a *miss*: it is listed, and it raises an error the
tool turns into a model-visible failure (``replay: not in the recording``).

Values are converted with the world's codec (`world_adapter.codec`, the bridge protocol's
own), which follows the type hints of the service protocols: dataclasses become objects, enums
their values, datetimes ISO text, durations seconds, sets sorted lists. Triggers, whose event
may be any of the world's event classes, have their own pair (`encode_trigger`,
`decode_trigger`).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, TypeVar, cast

from storyteller_daemon.agent.services import TurnServices, service_fields
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import Heartbeat
from storyteller_daemon.errors import ConflictError, NotFoundError, ToolError, ValidationError

# One codec for world values, the bridge protocol's: tapes, bridge frames and stored triggers
# write the same JSON for the same value (re-exported for the tape's tests).
from world_adapter.codec import decode, decode_event, encode, encode_event
from world_adapter.errors import WorldCommandError

T = TypeVar("T")
S = TypeVar("S", bound=TurnServices)
Entry = dict[str, Any]

MISS_MESSAGE = "replay: this call is not in the recording, so nothing was run"

_REPLAYABLE_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (WorldCommandError, NotFoundError, ValidationError, ConflictError, ToolError)
}


class RecordedFailure(RuntimeError):
    """Stands in, on replay, for an exception type the tape cannot rebuild."""


# ---------------------------------------------------------------------- calls


def _bound_arguments(
    protocol: type[Any], method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name, defaults filled in, as the protocol declares them."""
    function = getattr(protocol, method)
    bound = inspect.signature(function).bind(None, *args, **kwargs)
    bound.apply_defaults()
    hints = typing.get_type_hints(function)
    return {k: encode(v, hints.get(k)) for k, v in list(bound.arguments.items())[1:]}


def _async_methods(protocol: type[Any]) -> frozenset[str]:
    return frozenset(
        name
        for name, member in vars(protocol).items()
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    )


class Tape:
    """The entries of one turn, in the order the calls finished."""

    def __init__(self, entries: list[Entry] | None = None) -> None:
        self.entries: list[Entry] = list(entries or [])
        self._used: set[int] = set()
        self.misses: list[Entry] = []

    def record(self, service: str, protocol: type[Any], target: T) -> T:
        """`target`, with every awaited method of `protocol` recorded on this tape."""
        return cast(T, _Recording(self, service, protocol, target))

    def replay(self, service: str, protocol: type[Any]) -> Any:
        """A stand-in for a service of type `protocol` that answers every call from this tape."""
        return _Replaying(self, service, protocol)

    def answer(self, service: str, method: str, arguments: dict[str, Any]) -> Entry | None:
        """The first unused entry for this call, now used; None (and a miss noted) if none."""
        for index, entry in enumerate(self.entries):
            if index in self._used:
                continue
            if (entry["service"], entry["method"], entry["args"]) == (service, method, arguments):
                self._used.add(index)
                return entry
        self.misses.append({"service": service, "method": method, "args": arguments})
        return None

    def unused(self) -> list[Entry]:
        """Entries no replayed call asked for."""
        return [e for i, e in enumerate(self.entries) if i not in self._used]

    def touched_situations(self) -> list[int]:
        """Situation ids that tools created, read or changed, in order, without repeats."""
        seen: list[int] = []
        for entry in self.entries:
            if entry["service"] != "situations" or "error" in entry:
                continue
            if entry["method"] == "create" and isinstance(entry.get("result"), dict):
                found = entry["result"].get("id")
            else:
                found = entry["args"].get("situation_id")
            if isinstance(found, int) and found not in seen:
                seen.append(found)
        return seen


class _Recording:
    """Forwards every call to the real service and writes it on the tape."""

    def __init__(self, tape: Tape, service: str, protocol: type[Any], target: Any) -> None:
        self._tape = tape
        self._service = service
        self._protocol = protocol
        self._target = target
        self._methods = _async_methods(protocol)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if name not in self._methods:
            return attribute
        return self._wrap(name, attribute)

    def _returns(self, name: str) -> Any:
        return typing.get_type_hints(getattr(self._protocol, name)).get("return", Any)

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            # Recording must never change what the call does: what cannot be written down is
            # left off the tape (a replay then misses it), and the call goes ahead regardless.
            try:
                arguments = _bound_arguments(self._protocol, name, args, kwargs)
            except (TypeError, ValueError):
                return await method(*args, **kwargs)
            entry: Entry = {"service": self._service, "method": name, "args": arguments}
            try:
                result = await method(*args, **kwargs)
            except Exception as exc:
                entry["error"] = {"type": type(exc).__name__, "message": str(exc)}
                self._tape.entries.append(entry)
                raise
            try:
                entry["result"] = encode(result, self._returns(name))
            except (TypeError, ValueError):
                entry["unrecorded"] = type(result).__name__
            self._tape.entries.append(entry)
            return result

        return call


class _Replaying:
    """Answers every call from the tape; acts on nothing."""

    def __init__(self, tape: Tape, service: str, protocol: type[Any]) -> None:
        self._tape = tape
        self._service = service
        self._protocol = protocol
        self._methods = _async_methods(protocol)

    def __getattr__(self, name: str) -> Any:
        if name not in self._methods:
            raise AttributeError(f"a replayed {self._service} has no {name}")
        returns = typing.get_type_hints(getattr(self._protocol, name)).get("return", Any)

        async def call(*args: Any, **kwargs: Any) -> Any:
            arguments = _bound_arguments(self._protocol, name, args, kwargs)
            entry = self._tape.answer(self._service, name, arguments)
            if entry is None:
                raise _miss_error(self._service)
            if "error" in entry:
                error = entry["error"]
                raise _REPLAYABLE_ERRORS.get(error["type"], RecordedFailure)(error["message"])
            if "unrecorded" in entry:
                raise RecordedFailure(f"replay: the recorded {entry['unrecorded']} was not kept")
            try:
                return decode(entry.get("result"), returns)
            except (TypeError, ValueError, KeyError) as exc:
                raise RecordedFailure(f"replay: the recorded answer no longer fits: {exc}") from exc

        return call


def _miss_error(service: str) -> Exception:
    """The error a call the tape does not hold raises: one its callers already handle."""
    if service == "world":
        return WorldCommandError(MISS_MESSAGE)
    return ToolError(MISS_MESSAGE)


# ---------------------------------------------------------------------- triggers


def encode_trigger(trigger: Trigger) -> dict[str, Any]:
    """A trigger as JSON, event included, so a replay can rebuild it exactly."""
    return {
        "kind": trigger.kind.value,
        "label": trigger.label,
        "occurred_at": trigger.occurred_at.isoformat(),
        "event": encode_event(trigger.event) if trigger.event is not None else None,
        "heartbeat": trigger.heartbeat.value if trigger.heartbeat is not None else None,
        "text": trigger.text,
        **({"room": trigger.room} if trigger.room is not None else {}),  # older tapes: none
        "attention_reason": trigger.attention_reason,
        "involved": sorted(trigger.involved),
        "coalesced": [encode_trigger(t) for t in trigger.coalesced],
    }


def decode_trigger(data: dict[str, Any]) -> Trigger:
    """The trigger `encode_trigger` wrote."""
    event = None
    if data.get("event") is not None:
        event = decode_event(data["event"])
    return Trigger(
        kind=TriggerKind(data["kind"]),
        occurred_at=datetime.fromisoformat(data["occurred_at"]),
        event=event,
        heartbeat=Heartbeat(data["heartbeat"]) if data.get("heartbeat") else None,
        text=data.get("text", ""),
        room=data.get("room"),
        attention_reason=data.get("attention_reason"),
        involved=frozenset(data.get("involved", ())),
        coalesced=tuple(decode_trigger(t) for t in data.get("coalesced", ())),
    )


# ---------------------------------------------------------------------- services


def record_services(services: S, tape: Tape) -> S:
    """`services`, with every call of each taped service written on `tape` (a service left
    None stays None; untaped ones are kept as they are)."""
    wrapped = {
        f.name: tape.record(f.name, f.protocol, value)
        for f in service_fields(type(services))
        if f.taped and (value := getattr(services, f.name)) is not None
    }
    return dataclasses.replace(services, **wrapped)


def taped_names(services: TurnServices) -> list[str]:
    """The names of the services `record_services` wraps, for the run record (a replay gives
    exactly these stand-ins)."""
    return [
        f.name
        for f in service_fields(type(services))
        if f.taped and getattr(services, f.name) is not None
    ]


def replay_services(kind: type[S], tape: Tape, held: Collection[str]) -> S:
    """A `kind` whose services answer every call from `tape` and act on nothing.

    `held` names the services the tape was recorded with (`taped_names`): a turn that had
    none of an optional service (or was recorded before it was taped) replays without it, as
    the recorded prompt went without it. A required service is always replayed; untaped ones
    are left None.
    """
    stand_ins: dict[str, Any] = {}
    for item in service_fields(kind):
        if item.taped and (item.name in held or not item.optional):
            stand_ins[item.name] = tape.replay(item.name, item.protocol)
    return kind(**stand_ins)
