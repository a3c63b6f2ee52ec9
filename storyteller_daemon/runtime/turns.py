"""The agent behind the pipeline: prompts, the attention gate, the tool loop, and accounting."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from storyteller_daemon.agent.attention import AttentionGate, AttentionVerdict
from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.model import Model
from storyteller_daemon.agent.ports import MemoryStore, ReferenceStore, SituationStore
from storyteller_daemon.agent.prompts import PromptBuilder
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.tools.base import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.runtime.clock import Clock
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.errors import WorldAdapterError
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

VIOLATION_ALERT_STREAK = 5
"""Consecutive attention contract violations before an error is raised to the admins."""


def turn_key(storyteller: Storyteller, trigger: Trigger) -> str:
    """A key that is the same every time the same trigger is handled for the same storyteller.

    Prog calls derive their idempotency keys from it, so re-running a turn after a crash or a
    redelivered event never acts twice.
    """
    if trigger.event is not None:
        return f"st{storyteller.id}:event:{trigger.event.cursor}"
    stamp = trigger.occurred_at.isoformat()
    if trigger.kind is TriggerKind.HEARTBEAT and trigger.heartbeat is not None:
        return f"st{storyteller.id}:heartbeat:{trigger.heartbeat.value}:{stamp}"
    digest = hashlib.sha256(trigger.text.encode()).hexdigest()[:16]
    return f"st{storyteller.id}:{trigger.kind.value}:{stamp}:{digest}"


class AgentTurnRunner:
    """Implements the pipeline's `TurnRunner` with the real agent."""

    def __init__(
        self,
        *,
        world: WorldClient,
        situations: SituationStore,
        memories: MemoryStore,
        references: ReferenceStore,
        model: Model,
        limits: LimitsConfig,
        clock: Clock,
        stats: RuntimeStats,
    ) -> None:
        self._world = world
        self._stats = stats
        self._prompts = PromptBuilder(world, situations, limits)
        self.gate = AttentionGate(model, limits)
        self._loop = ToolLoop(model, limits, clock.monotonic)
        self._tools = ToolContext(
            world=world, situations=situations, memories=memories, references=references
        )
        self.last_records: list[TurnRecord] = []

    async def judge(
        self, storyteller: Storyteller, triggers: Sequence[Trigger]
    ) -> list[AttentionVerdict]:
        """Verdicts for a batch of triggers (room echoes, speech, crimes)."""
        items = []
        for trigger in triggers:
            prompt = await self._prompts.build(storyteller, trigger)
            items.append(prompt.attention_input or prompt.text)
        verdicts = await self.gate.judge(storyteller, items)
        assert storyteller.id is not None
        streak = self.gate.consecutive_violations(storyteller.id)
        if any(v.violation for v in verdicts) and streak >= VIOLATION_ALERT_STREAK:
            # One bad verdict is noise; a run of them means a wrong model or prompt.
            if streak - sum(1 for v in verdicts if v.violation) < VIOLATION_ALERT_STREAK:
                log.error(
                    "storyteller %s: the attention model broke the verdict contract %d times in "
                    "a row (last: %s); check its attention model and prompt",
                    storyteller.name,
                    streak,
                    next(v.violation for v in reversed(verdicts) if v.violation),
                )
        return verdicts

    async def _status_text(self, storyteller: Storyteller, trigger: Trigger) -> str:
        """The heartbeat's status prog output ("" when none is set or it fails)."""
        if trigger.heartbeat is None:
            return ""
        prog = storyteller.status_prog(trigger.heartbeat)
        if not prog:
            return ""
        key = f"status:{turn_key(storyteller, trigger)}"
        try:
            outcome = await self._world.execute_prog(prog, {}, key)
        except WorldAdapterError as exc:
            log.warning("status prog %s of storyteller %s failed: %s", prog, storyteller.id, exc)
            return ""
        value = outcome.value
        return value if isinstance(value, str) else str(value) if value is not None else ""

    async def run_turn(self, storyteller: Storyteller, trigger: Trigger) -> TurnRecord:
        """Build the prompt and run the tool loop."""
        status = await self._status_text(storyteller, trigger)
        prompt = await self._prompts.build(storyteller, trigger, status_text=status)
        record = await self._loop.run(
            storyteller, trigger, prompt.text, self._tools, turn_key=turn_key(storyteller, trigger)
        )
        self._stats.tool_calls += len(record.calls)
        self.last_records.append(record)
        del self.last_records[:-50]
        return record
