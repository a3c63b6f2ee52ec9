"""Attention calls: the batch of events shown to the attention gate, recorded as one run.

`AttentionJudge` builds each event's line (from the same prompt builder as turns), asks the
gate for verdicts in one recorded request, counts it, and raises an alert to the admins when a
storyteller's attention model keeps breaking the verdict contract.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from storyteller_daemon.agent.attention import AttentionGate, BatchEntry, attention_input
from storyteller_daemon.agent.fencing import Fence
from storyteller_daemon.agent.prompts import PromptBuilder
from storyteller_daemon.agent.trigger import Trigger, turn_key
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.stats import RuntimeStats

log = logging.getLogger(__name__)

VIOLATION_ALERT_STREAK = 5
"""Consecutive attention contract violations before an error is raised to the admins."""


class AttentionJudge:
    """Judges batches of triggers through `gate`, naming things with `prompts`."""

    def __init__(
        self,
        gate: AttentionGate,
        prompts: PromptBuilder,
        recorder: RunRecorder,
        stats: RuntimeStats,
        alerts: AlertSink | None,
    ) -> None:
        self.gate = gate
        self._prompts = prompts
        self._recorder = recorder
        self._stats = stats
        self._alerts = alerts

    async def _attention_line(self, storyteller: Storyteller, trigger: Trigger) -> str:
        """One event as the gate shows it; the reference design shows its classifier what its
        turn would see (an echo's raw text, the whole prompt of speech and crimes)."""
        if not self.gate.options.reference:
            return await self._prompts.attention_line(trigger)
        prompt = await self._prompts.build(storyteller, trigger)
        return prompt.attention_input or await self._prompts.attention_line(trigger)

    async def judge(
        self, storyteller: Storyteller, triggers: Sequence[Trigger]
    ) -> list[AttentionVerdict]:
        """Verdicts for a batch of triggers (room echoes, speech, crimes), one request for all.

        The batch is recorded as one attention run; its events get the ids ``1``, ``2``...
        in order.
        """
        if not triggers:
            return []
        reference = self.gate.options.reference
        context = "" if reference else await self._prompts.attention_context(storyteller, triggers)
        entries = [
            BatchEntry(str(index), await self._attention_line(storyteller, trigger))
            for index, trigger in enumerate(triggers, start=1)
        ]
        fence = Fence.new()
        item = attention_input(context, entries, fence)
        # Named like the turn of the same events, so a burst's turn shows its attention call.
        extra = f"+{len(triggers) - 1}" if len(triggers) > 1 else ""
        key = f"{turn_key(storyteller, triggers[0])}{extra}"
        async with self._recorder.attention(storyteller, triggers, key, item) as run:
            judgement = await self.gate.judge(storyteller, context, entries, fence)
            run.verdicts = [judgement.verdicts[e.id] for e in entries]
        self._stats.attention_calls += judgement.requests
        self._stats.events_judged_alone += judgement.alone
        verdicts = run.verdicts
        assert storyteller.id is not None
        streak = self.gate.consecutive_violations(storyteller.id)
        if streak == VIOLATION_ALERT_STREAK:
            # One bad reply is noise; a run of them means a wrong model or prompt.
            last = "; ".join(judgement.problems[-2:]) or "unknown"
            log.error(
                "storyteller %s: the attention model broke the verdict contract in %d batches "
                "in a row (last: %s); check its attention model and prompt",
                storyteller.name,
                streak,
                last,
            )
            if self._alerts is not None:
                self._alerts.alert(
                    "attention_violations",
                    f"{storyteller.name}: its attention model keeps breaking the verdict contract",
                    f"{streak} batches in a row broke it (last: {last}). Events are asked "
                    "about again, then alone; those no reply judges get turns when urgent (rule "
                    "fail_open) and are recorded as violations otherwise. Check the "
                    "storyteller's attention model and prompt.",
                    severity="warning",
                    key=f"attention_violations:{storyteller.id}",
                )
        return verdicts
