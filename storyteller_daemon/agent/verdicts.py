"""The attention gate's verdicts: their strict JSON schema, and reading a reply id by id.

`verdict_format` is the ``text.format`` a batch request asks for: the attended ids, each with a
short reason, and the ignored ids as one string of ids and ranges (`format_ids` writes them the
same way). `parse_batch` reads a reply against the ids that were asked about, settling each id
given exactly once and leaving the rest unresolved, with a problem line for everything wrong:
an unknown id or junk in one field spoils only itself, and a reply cut off mid-way keeps the
verdicts it completed. `decision_format` is the simplest contract (one event, one decision),
and `parse_decision` reads it as well as the reference design's reply about one event.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

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
_WRAPPED_ID = re.compile(r"^\[?\s*(?:#|id\s*)?(\d{1,9})\s*\]?$", re.IGNORECASE)
DECISION_KEY = "decision"
WHY_KEY = "why"


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


def decision_format() -> dict[str, Any]:
    """The strict ``text.format`` of the simplest contract: one event, one decision."""
    return {
        "type": "json_schema",
        "name": "attention_decision",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                DECISION_KEY: {"type": "string", "enum": [ATTEND_KEY, IGNORE]},
                WHY_KEY: {"type": "string"},
            },
            "required": [DECISION_KEY, WHY_KEY],
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
    """An id as the batch names it: a number, or a number written as a string (also as the
    request shows it, ``"[3]"``, or ``"#3"``); other text is returned as it is, to be named."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        match = _WRAPPED_ID.match(value.strip())
        return str(int(match.group(1))) if match else value.strip()
    return None


def _entry(value: Any, *, cut: bool = False) -> tuple[str | None, str]:
    """(id, why) of one list element: a bare id or an ``{"id", "why"}`` object.

    In a reply that was cut off (`cut`), an object counts only once its reason is there: an id
    just before the cut may itself have been cut ("1" of "12")."""
    if isinstance(value, Mapping):
        why = value.get(WHY_KEY)
        if cut and not isinstance(why, str):
            return None, ""
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


def _read_cut(body: str) -> Any:
    """What a reply cut off mid-way (at the output limit, or by a broken connection) still
    holds: complete values only (an unfinished string is left out), or None."""
    try:
        return from_json(body, allow_partial=True)
    except ValueError:
        return None


def parse_batch(text: str, ids: Sequence[str]) -> BatchReply:
    """Read a batch verdict against the ids that were asked about; never raises.

    Each id given exactly once is settled, whatever else is wrong with the reply; a reply that
    is cut off keeps the verdicts it completed (the last, possibly cut, bare id of a list is
    left out).
    """
    reply = BatchReply()
    body = _strip_fence(text.strip())
    cut = False
    try:
        value = json.loads(body) if body else None
    except json.JSONDecodeError as exc:
        reply.problems.append(f"the reply was not valid JSON: {exc}")
        value = _read_cut(body) if body.startswith("{") else None
        cut = isinstance(value, Mapping) and bool(value)
        if not cut:
            value = None
    if cut:
        reply.problems.append("the reply was cut off; the verdicts it completed are kept")
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
    named: list[str] = []
    for key, interested in ((ATTEND_KEY, True), (IGNORE_KEY, False)):
        listed = value.get(key)
        if listed is None:
            continue
        elements = list(_expand(listed, key, len(ids), reply.problems) or ())
        if cut and isinstance(listed, list) and elements and not isinstance(elements[-1], Mapping):
            elements.pop()
        for element in elements:
            item_id, why = _entry(element, cut=cut)
            if item_id is None:
                if not cut:
                    reply.problems.append(f"an entry of {key} has no id")
                continue
            named.append(item_id)
            if item_id not in asked:
                reply.problems.append(f"unknown id {item_id!r} in {key}")
                continue
            seen[item_id] += 1
            reason = (why or NO_REASON) if interested else why
            found[item_id] = AttentionVerdict(interested=interested, reason=reason)
    shift = _shift(named, ids)
    if shift:
        # Every id named once, all moved by the same amount: the reply numbered the events
        # from another start, so the ids it shares with the batch name other events.
        reply.problems.append(
            f"the reply numbered the events from {shift + 1}, not from 1; none of it is taken"
        )
        reply.unresolved = list(ids)
        return reply
    for item_id in ids:
        if seen[item_id] == 1:
            reply.verdicts[item_id] = found[item_id]
        else:
            if seen[item_id] > 1:
                reply.problems.append(f"id {item_id!r} was judged {seen[item_id]} times")
            reply.unresolved.append(item_id)
    return reply


def _shift(named: Sequence[str], ids: Sequence[str]) -> int:
    """How far a reply's ids are moved from a batch numbered 1 to n: k > 0 when they are
    exactly k+1 to k+n, each once; else 0."""
    if not named or list(ids) != [str(n) for n in range(1, len(ids) + 1)]:
        return 0
    if not all(n.isdigit() for n in named):
        return 0
    numbers = sorted(int(n) for n in named)
    shift = numbers[0] - 1
    return shift if shift > 0 and numbers == list(range(shift + 1, shift + len(ids) + 1)) else 0


def _field(value: Any, *names: str) -> Any:
    """The first of `names` an object has, in any case; None if none."""
    if not isinstance(value, Mapping):
        return None
    folded = {str(k).casefold(): v for k, v in value.items()}
    return next((folded[n] for n in names if n in folded), None)


def parse_decision(text: str, item_id: str) -> BatchReply:
    """Read a reply about one event: the simplest contract (``{"decision": "attend" |
    "ignore", "why": ...}``) or the reference design's (``{"Decision": "interested", "Reason":
    ...}``)."""
    reply = BatchReply()
    body = _strip_fence(text.strip())
    try:
        value = json.loads(body) if body else None
    except json.JSONDecodeError as exc:
        value = None
        reply.problems.append(f"the reply was not valid JSON: {exc}")
    decision = _field(value, DECISION_KEY)
    choice = decision.strip().casefold() if isinstance(decision, str) else ""
    choice = INTERESTED if choice == ATTEND_KEY else choice
    if choice in (INTERESTED, IGNORE):
        why = _field(value, "reason", WHY_KEY)
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
