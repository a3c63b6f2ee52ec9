"""Asking a recorded attention batch again, with a storyteller's changed settings.

`runs compare` asks whether a change of model, reasoning effort or system prompt (the remit the
attention instructions carry) would have judged a turn's events otherwise. The recorded batch's
own input (its context and fenced event lines, kept whole in the record) is sent once more under
today's attention instructions for the changed storyteller, and the reply is read event by event
against the recorded verdicts. An event the reply leaves unresolved counts as no verdict (the
daemon would re-ask; a comparison does not spend on that).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.attention import (
    OUTPUT_TOKENS_PER_EVENT,
    AttentionOptions,
    attention_instructions,
)
from storyteller_daemon.agent.models.interface import Model, ModelRequest, Usage
from storyteller_daemon.agent.prompts import user_message
from storyteller_daemon.agent.verdicts import IGNORE, INTERESTED, parse_batch, verdict_format
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import Scope, Storyteller

NO_VERDICT = "no verdict"


@dataclass(frozen=True)
class Flip:
    """One event of a batch whose verdict differs under the change.

    Attributes:
        run_id: the attention run.
        event: the event's place in the batch (1 for the first).
        label: what the event was (its trigger's label).
        before: the recorded decision (``interested``, ``ignore`` or ``no verdict``).
        after: the decision under the change.
    """

    run_id: int
    event: int
    label: str
    before: str
    after: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "run_id": self.run_id,
            "event": self.event,
            "label": self.label,
            "before": self.before,
            "after": self.after,
        }


@dataclass
class Rejudged:
    """A recorded batch asked again.

    Attributes:
        before: the recorded decisions, event by event.
        after: the decisions under the change, event by event.
        model: the model name the request was sent under.
        usage: the request's token counts.
    """

    run_id: int
    labels: list[str]
    before: list[str]
    after: list[str]
    model: str
    usage: Usage

    @property
    def flips(self) -> list[Flip]:
        """The events judged otherwise."""
        return [
            Flip(self.run_id, index + 1, label, a, b)
            for index, (label, a, b) in enumerate(
                zip(self.labels, self.before, self.after, strict=True)
            )
            if a != b
        ]


def recorded_decisions(record: dict[str, Any]) -> list[str]:
    """The recorded decision of each event of an attention record."""
    found = []
    for event in record.get("events") or []:
        verdict = event.get("verdict") or {}
        if verdict.get("violation"):
            found.append(NO_VERDICT)
        else:
            found.append(str(verdict.get("decision") or NO_VERDICT))
    return found


def attention_request(
    record: dict[str, Any],
    storyteller: Storyteller,
    limits: LimitsConfig,
    options: AttentionOptions,
) -> ModelRequest:
    """The recorded batch's request, with today's instructions for `storyteller`."""
    events = len(record.get("events") or [])
    debug = options.debug_reasons
    per_event = OUTPUT_TOKENS_PER_EVENT * (2 if debug else 1)
    return ModelRequest(
        model=storyteller.model_for(Scope.ATTENTION),
        input=[user_message(str(record.get("input") or ""))],
        instructions=attention_instructions(
            storyteller,
            debug_reasons=debug,
            remit_max_chars=options.remit_max_chars,
            cache_floor_tokens=options.cache_floor_tokens,
        ),
        reasoning_effort=storyteller.effort_for(Scope.ATTENTION).value,
        max_output_tokens=limits.attention_max_output_tokens + per_event * events,
        text_format=verdict_format(debug_reasons=debug),
        truncation="auto",
        prompt_cache_key=f"storyteller-{storyteller.id}-attention",
        timeout_seconds=options.timeout_seconds,
        max_retries=options.max_retries,
    )


async def rejudge(
    run_id: int,
    record: dict[str, Any],
    storyteller: Storyteller,
    model: Model,
    limits: LimitsConfig,
    options: AttentionOptions,
) -> Rejudged:
    """Ask `model` about the recorded batch again, for the (changed) `storyteller`.

    Raises:
        ModelError: the request failed (the comparison notes it for this turn).
    """
    request = attention_request(record, storyteller, limits, options)
    response = await model.respond(request)
    before = recorded_decisions(record)
    ids = [str(n) for n in range(1, len(before) + 1)]
    reply = parse_batch(response.output_text, ids)
    after = [
        (INTERESTED if reply.verdicts[i].interested else IGNORE)
        if i in reply.verdicts
        else NO_VERDICT
        for i in ids
    ]
    labels = [str((e.get("trigger") or {}).get("label", "")) for e in record.get("events") or []]
    return Rejudged(run_id, labels, before, after, request.model, response.usage)
