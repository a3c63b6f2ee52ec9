"""The attention gate: a cheap model call that decides whether an event deserves a turn.

The request uses the storyteller's attention model, attention effort and attention prompt, and
asks for a strict JSON verdict through structured output (``text.format`` json_schema), which
FutureMUD's plain-text contract lacked. The parser is still tolerant, for endpoints that ignore
structured output: Markdown code fences are stripped, keys match case-insensitively, and
``result`` is read as ``decision``. A reply that breaks the contract never raises: it yields an
``ignore`` verdict carrying the violation, and the gate counts consecutive violations per
storyteller so the runtime can alert only when they persist.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.model import Model, ModelRequest
from storyteller_daemon.agent.ports import BeforeRequest
from storyteller_daemon.agent.prompts import user_message
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.settings import DEFAULT_ATTENTION_PROMPT, Scope, Storyteller

log = logging.getLogger(__name__)

INTERESTED = "interested"
IGNORE = "ignore"
NO_REASON = "No reason provided"
CONTRACT = (
    'Answer with JSON only, exactly of the form {"decision": "interested" or "ignore", '
    '"reason": "a short reason"}, and nothing else.'
)
VERDICT_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "name": "attention_verdict",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": [INTERESTED, IGNORE]},
            "reason": {"type": "string"},
        },
        "required": ["decision", "reason"],
        "additionalProperties": False,
    },
}

_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_DECISION_KEYS = ("decision", "result")


@dataclass(frozen=True)
class AttentionVerdict:
    """The gate's answer about one item.

    Attributes:
        interested: whether the event deserves a storyteller turn.
        reason: why, in the model's words (empty on a contract violation).
        violation: what was wrong with the reply, or None when it kept the contract.
    """

    interested: bool
    reason: str = ""
    violation: str | None = None

    @property
    def decision(self) -> str:
        """``interested`` or ``ignore``."""
        return INTERESTED if self.interested else IGNORE


def _violation(message: str) -> AttentionVerdict:
    return AttentionVerdict(interested=False, reason="", violation=message)


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text


def _field(obj: dict[str, Any], names: Sequence[str]) -> Any:
    """The value of the first of `names` present in `obj`, keys compared case-insensitively."""
    folded = {str(k).casefold(): v for k, v in obj.items()}
    for name in names:
        if name in folded:
            return folded[name]
    return None


def parse_verdict(text: str) -> AttentionVerdict:
    """Read the attention model's reply; never raises.

    Returns:
        The verdict; a reply that breaks the contract gives ``ignore`` with `violation` set.
    """
    body = _strip_fence(text.strip())
    if not body:
        return _violation("Attention classifier returned empty output.")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return _violation(f"Attention classifier output was not valid JSON: {exc}")
    if not isinstance(value, dict):
        return _violation("Attention classifier output must be a JSON object.")
    raw = _field(value, _DECISION_KEYS)
    if raw is None:
        return _violation("Attention classifier output is missing the required Decision property.")
    decision = (raw if isinstance(raw, str) else json.dumps(raw)).strip().lower()
    if decision not in (INTERESTED, IGNORE):
        return _violation(
            f"Attention classifier Decision must be interested or ignore, but was '{decision}'."
        )
    reason = _field(value, ("reason",))
    reason_text = (reason if isinstance(reason, str) else "").strip() or NO_REASON
    return AttentionVerdict(interested=decision == INTERESTED, reason=reason_text)


def attention_instructions(storyteller: Storyteller) -> str:
    """The attention prompt (a default if blank) followed by the JSON contract."""
    prompt = storyteller.attention_prompt.strip() or DEFAULT_ATTENTION_PROMPT
    return f"{prompt}\n\n{CONTRACT}"


class AttentionGate:
    """Asks a storyteller's attention model whether events matter.

    Args:
        model: the endpoint.
        limits: ``attention_max_output_tokens``.
        before_request: awaited with every request before it is sent; may raise
            `BudgetExceeded`, which propagates to the caller.
    """

    def __init__(
        self, model: Model, limits: LimitsConfig, *, before_request: BeforeRequest | None = None
    ) -> None:
        self._model = model
        self._limits = limits
        self._before_request = before_request
        self._violations: dict[int, int] = {}

    def request_for(self, storyteller: Storyteller, item: str) -> ModelRequest:
        """The attention request for one item."""
        return ModelRequest(
            model=storyteller.model_for(Scope.ATTENTION),
            input=[user_message(item)],
            instructions=attention_instructions(storyteller),
            reasoning_effort=storyteller.effort_for(Scope.ATTENTION).value,
            max_output_tokens=self._limits.attention_max_output_tokens,
            text_format=VERDICT_FORMAT,
            truncation="auto",
        )

    async def judge(self, storyteller: Storyteller, items: Sequence[str]) -> list[AttentionVerdict]:
        """One verdict per item, in order.

        Items are judged one request each; the list form lets a burst be judged together later
        without changing callers.

        Raises:
            ValueError: the storyteller has no id.
            ModelTransientError: the endpoint failed in a way worth retrying.
            ModelFatalError: the endpoint refused the request.
            BudgetExceeded: the `before_request` hook refused the request.
        """
        if storyteller.id is None:
            raise ValueError(f"storyteller '{storyteller.name}' has no id; save it first")
        verdicts: list[AttentionVerdict] = []
        for item in items:
            request = self.request_for(storyteller, item)
            if self._before_request is not None:
                await self._before_request(request)
            response = await self._model.respond(request)
            verdict = parse_verdict(response.output_text)
            if verdict.violation is not None and response.incomplete_reason:
                verdict = _violation(
                    f"{verdict.violation} (response incomplete: {response.incomplete_reason})"
                )
            self._count(storyteller.id, verdict)
            verdicts.append(verdict)
        return verdicts

    def consecutive_violations(self, storyteller_id: int) -> int:
        """How many replies in a row broke the contract for this storyteller."""
        return self._violations.get(storyteller_id, 0)

    def _count(self, storyteller_id: int, verdict: AttentionVerdict) -> None:
        if verdict.violation is None:
            self._violations.pop(storyteller_id, None)
            return
        count = self._violations.get(storyteller_id, 0) + 1
        self._violations[storyteller_id] = count
        log.warning(
            "storyteller %s: Attention classifier contract violation (%d in a row): %s",
            storyteller_id,
            count,
            verdict.violation,
        )
