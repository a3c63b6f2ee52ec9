"""The attention gate's verdicts: their strict JSON schema, and reading a reply id by id.

`verdict_format` is the ``text.format`` a batch request asks for: the attended ids, each with a
short reason, and the ignored ids as one string of ids and ranges (`format_ids` writes them the
same way). `parse_batch` reads a reply against the ids that were asked about, settling each id
given exactly once and leaving the rest unresolved, with a problem line for everything wrong;
`parse_decision` reads the reference design's reply about one event.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

INTERESTED = "interested"
IGNORE = "ignore"
ATTEND_KEY = "attend"
IGNORE_KEY = "ignore"
NO_REASON = "No reason provided"

_REASONED = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "why": {"type": "string"}},
    "required": ["id", "why"],
    "additionalProperties": False,
}
_CODE_BLOCK = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_RANGE = re.compile(r"^(\d{1,9})\s*-\s*(\d{1,9})$")


def verdict_format(*, debug_reasons: bool = False) -> dict[str, Any]:
    """The strict ``text.format`` of a batch verdict: attended ids with reasons, and the ignored
    ids as one string of ids and ranges (or, with debug reasons, reasoned like the attended)."""
    ignored: dict[str, Any] = (
        {"type": "array", "items": _REASONED} if debug_reasons else {"type": "string"}
    )
    return {
        "type": "json_schema",
        "name": "attention_verdicts",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                ATTEND_KEY: {"type": "array", "items": _REASONED},
                IGNORE_KEY: ignored,
            },
            "required": [ATTEND_KEY, IGNORE_KEY],
            "additionalProperties": False,
        },
    }


@dataclass(frozen=True)
class AttentionVerdict:
    """The gate's answer about one event.

    Attributes:
        interested: whether the event deserves a storyteller turn.
        reason: why, in the model's words (empty for a bare ignore or a violation).
        violation: what was wrong with the reply, or None when it kept the contract.
    """

    interested: bool
    reason: str = ""
    violation: str | None = None

    @property
    def decision(self) -> str:
        """``interested`` or ``ignore``."""
        return INTERESTED if self.interested else IGNORE


@dataclass
class BatchReply:
    """A reply read id by id.

    Attributes:
        verdicts: the ids the reply settled.
        unresolved: ids missing from the reply or given more than once.
        problems: what was wrong, one line each (unknown ids, bad JSON, ...).
    """

    verdicts: dict[str, AttentionVerdict] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _strip_fence(text: str) -> str:
    match = _CODE_BLOCK.match(text)
    return match.group(1).strip() if match else text


def _id(value: Any) -> str | None:
    """An id as the batch names it: a number (or a number written as a string)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _entry(value: Any) -> tuple[str | None, str]:
    """(id, why) of one list element: a bare id or an ``{"id", "why"}`` object."""
    if isinstance(value, Mapping):
        why = value.get("why")
        return _id(value.get("id")), why.strip() if isinstance(why, str) else ""
    return _id(value), ""


def format_ids(ids: Sequence[int]) -> str:
    """Ids as the contract writes them: runs of consecutive ids as ranges (``"1-4,6,9-12"``)."""
    runs: list[list[int]] = []
    for number in sorted(set(ids)):
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _expand(listed: Any, key: str, size: int, problems: list[str]) -> list[Any] | None:
    """The elements of one verdict list: a JSON list as it is, or, for ignore, a string of ids
    and ranges ("1-4,6") as its ids; None (and a problem) for anything else."""
    if isinstance(listed, list):
        return listed
    if key != IGNORE_KEY or not isinstance(listed, str):
        problems.append(f"{key} must be a list" + (" or a string of ids" * (key == IGNORE_KEY)))
        return None
    elements: list[Any] = []
    for part in (p.strip() for p in listed.split(",")):
        if not part:
            continue
        match = _RANGE.match(part)
        if match is None:
            elements.append(part)
            continue
        low, high = int(match.group(1)), int(match.group(2))
        if high < low or high - low >= size:
            problems.append(f"the range {part!r} in {key} does not fit the batch")
            continue
        elements += [str(number) for number in range(low, high + 1)]
    return elements


def parse_batch(text: str, ids: Sequence[str]) -> BatchReply:
    """Read a batch verdict against the ids that were asked about; never raises."""
    reply = BatchReply()
    body = _strip_fence(text.strip())
    try:
        value = json.loads(body) if body else None
    except json.JSONDecodeError as exc:
        reply.problems.append(f"the reply was not valid JSON: {exc}")
        value = None
    if not isinstance(value, Mapping):
        if body and not reply.problems:
            reply.problems.append("the reply must be a JSON object with attend and ignore")
        elif not body:
            reply.problems.append("the reply was empty")
        reply.unresolved = list(ids)
        return reply
    asked = set(ids)
    seen: Counter[str] = Counter()
    found: dict[str, AttentionVerdict] = {}
    for key, interested in ((ATTEND_KEY, True), (IGNORE_KEY, False)):
        listed = value.get(key)
        if listed is None:
            continue
        elements = _expand(listed, key, len(ids), reply.problems)
        for element in elements or ():
            item_id, why = _entry(element)
            if item_id is None:
                reply.problems.append(f"an entry of {key} has no id")
                continue
            if item_id not in asked:
                reply.problems.append(f"unknown id {item_id!r} in {key}")
                continue
            seen[item_id] += 1
            reason = (why or NO_REASON) if interested else why
            found[item_id] = AttentionVerdict(interested=interested, reason=reason)
    for item_id in ids:
        if seen[item_id] == 1:
            reply.verdicts[item_id] = found[item_id]
        else:
            if seen[item_id] > 1:
                reply.problems.append(f"id {item_id!r} was judged {seen[item_id]} times")
            reply.unresolved.append(item_id)
    return reply


def parse_decision(text: str, item_id: str) -> BatchReply:
    """Read a reference-design reply (``{"Decision": ..., "Reason": ...}``) about one event."""
    reply = BatchReply()
    body = _strip_fence(text.strip())
    try:
        value = json.loads(body) if body else None
    except json.JSONDecodeError as exc:
        value = None
        reply.problems.append(f"the reply was not valid JSON: {exc}")
    decision = value.get("Decision") if isinstance(value, Mapping) else None
    choice = decision.strip().casefold() if isinstance(decision, str) else ""
    if choice in (INTERESTED, IGNORE):
        why = value.get("Reason") if isinstance(value, Mapping) else None
        reason = why.strip() if isinstance(why, str) else ""
        interested = choice == INTERESTED
        reply.verdicts[item_id] = AttentionVerdict(
            interested=interested, reason=(reason or NO_REASON) if interested else reason
        )
    else:
        if not reply.problems:
            reply.problems.append(f"Decision must be interested or ignore, not {decision!r}")
        reply.unresolved.append(item_id)
    return reply
