"""Where a replayed turn departs from its recording: requests, tool calls, tape use.

`replay.replay_turn` runs the turn again; these functions compare the two records and say, one
`Difference` per place, what came out otherwise, as short one-line excerpts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.tools.arguments import MalformedArguments, parse_arguments
from storyteller_daemon.runs.tape import Tape

EXCERPT = 160
SIDE_EFFECTS = frozenset(
    {
        "execute_prog",
        "create",
        "update",
        "set_scope",
        "forget",
        "step_done",
        "step_failed",
        "replan",
        "abandon",
        "claim",
        "release",
    }
)
"""Tape methods that act: a recorded one today's code no longer asks for is a difference."""


@dataclass(frozen=True)
class Difference:
    """One place where the replay departed from the recording."""

    where: str
    recorded: str
    replayed: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"where": self.where, "recorded": self.recorded, "replayed": self.replayed}


def excerpt(value: Any) -> str:
    """A value as short, one-line text for a report line."""
    text = excerpt_text(value)
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def excerpts(before: Any, after: Any) -> tuple[str, str]:
    """Both values as short text, starting shortly before the first place they differ."""
    a, b = excerpt_text(before), excerpt_text(after)
    same = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    cut = max(same - EXCERPT // 4, 0)
    if cut == 0:
        return excerpt(a), excerpt(b)
    return excerpt("…" + a[cut:]), excerpt("…" + b[cut:])


def excerpt_text(value: Any) -> str:
    """A value as one line of text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return " ".join(text.split())


def _without_call_ids(value: Any) -> Any:
    """Input items with call ids left out: made-up ids differ between runs by design."""
    if isinstance(value, list):
        return [_without_call_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_call_ids(v) for k, v in value.items() if k != "call_id"}
    return value


def request_differences(
    recorded: dict[str, Any], replayed: dict[str, Any], every: bool, live_name: str | None
) -> list[Difference]:
    """Request bodies that differ: all of them with `every`, else only the first (a live
    model's later requests follow its own answers); with `live_name` the model is not compared."""
    found: list[Difference] = []
    old, new = recorded["requests"], replayed["requests"]
    count = max(len(old), len(new)) if every else min(1, len(old), len(new))
    for index in range(count):
        where = f"request {index + 1}"
        if index >= len(new):
            found.append(Difference(where, "sent", "not sent by today's code"))
            continue
        if index >= len(old):
            found.append(Difference(where, "not in the recording", "sent by today's code"))
            continue
        before, after = old[index]["request"], new[index]["request"]
        for key in sorted(set(before) | set(after)):
            if key == "model" and live_name is not None:
                continue
            a, b = _without_call_ids(before.get(key)), _without_call_ids(after.get(key))
            if a == b:
                continue
            if key == "input" and isinstance(a, list) and isinstance(b, list):
                found.append(_first_item_difference(where, a, b))
            else:
                found.append(Difference(f"{where} {key}", *excerpts(a, b)))
    return found


def _first_item_difference(where: str, before: list[Any], after: list[Any]) -> Difference:
    for index in range(max(len(before), len(after))):
        a = before[index] if index < len(before) else None
        b = after[index] if index < len(after) else None
        if a != b:
            return Difference(f"{where} input item {index + 1}", *excerpts(a, b))
    return Difference(f"{where} input", excerpt(before), excerpt(after))


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(parse_arguments(arguments), sort_keys=True, ensure_ascii=False)
    except MalformedArguments:  # compared as sent: not an object, or past the bounds
        return arguments


def call_line(call: dict[str, Any]) -> str:
    """``Name {"arg": ...}`` for a recorded call."""
    return f"{call['name']} {call['arguments']}"


def _flags(call: dict[str, Any]) -> str:
    return (
        ",".join(
            k for k in ("skipped", "refused", "malformed", "shadowed", "parked") if call.get(k)
        )
        or "run"
    )


def call_differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Difference]:
    """Tool calls that differ in name, arguments, result or flags, position by position."""
    found: list[Difference] = []
    for index in range(max(len(old), len(new))):
        where = f"call {index + 1}"
        if index >= len(new):
            found.append(Difference(where, call_line(old[index]), "not made"))
            continue
        if index >= len(old):
            found.append(Difference(where, "not made", call_line(new[index])))
            continue
        a, b = old[index], new[index]
        if a["name"] != b["name"] or _canonical(a["arguments"]) != _canonical(b["arguments"]):
            found.append(Difference(where, call_line(a), call_line(b)))
        elif a["envelope"] != b["envelope"]:
            found.append(
                Difference(f"{where} {a['name']} result", *excerpts(a["envelope"], b["envelope"]))
            )
        if _flags(a) != _flags(b):
            found.append(Difference(f"{where} {a['name']}", _flags(a), _flags(b)))
    return found


def tape_differences(tape: Tape) -> list[Difference]:
    """Calls the tape could not answer, and recorded side effects today's code did not cause."""
    found = [
        Difference(
            f"{miss['service']}.{miss['method']}",
            "not in the recording",
            excerpt(miss["args"]),
        )
        for miss in tape.misses
    ]
    for entry in tape.unused():
        if entry["method"] in SIDE_EFFECTS:
            found.append(
                Difference(
                    f"{entry['service']}.{entry['method']}",
                    excerpt(entry["args"]),
                    "not asked by today's code",
                )
            )
    return found
