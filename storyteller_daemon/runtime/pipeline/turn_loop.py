"""The turn lane: each storyteller's turns over its interested work.

A storyteller's turn task claims the oldest interested event and every other interested event
of the same turn class (up to ``max_turn_events``) and runs one turn for them all, under a turn
key that names the claimed set. A turn cut off by a stop or crash is claimed again and run
under its own key; a paused storyteller, or a trigger `Admission` refuses, ends the turn as
filtered without a model call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.domain.work import TurnClaim, WorkItem, WorkState
from storyteller_daemon.runs import decode_trigger
from storyteller_daemon.runtime.pipeline.ports import TurnOutcome
from storyteller_daemon.runtime.pipeline.state import PipelineState, _Lane, log

FAILED_OUTCOMES = frozenset({"model_transient_error", "model_fatal_error", "crashed"})


class TurnStage(PipelineState):
    """Each storyteller's turn task: it claims, runs and ends the storyteller's turns."""

    async def _turn_loop(self, storyteller_id: int, lane: _Lane) -> None:
        while True:
            await lane.turn_wake.wait()
            if self._stopping:
                return
            lane.turn_wake.clear()
            lane.turn_active = True
            try:
                while await self._next_turn(storyteller_id, lane):
                    pass
            except Exception:  # a failing claim or a bug: the work stays in the backlog
                log.exception("turn stage failed for storyteller %s", storyteller_id)
                lane.turn_wake.set()
                await self._clock.sleep(self._cfg.retry_seconds)
            finally:
                lane.turn_active = False
                self._touch(lane)
                await self._changed()

    async def _next_turn(self, storyteller_id: int, lane: _Lane) -> bool:
        """Run the next turn of a storyteller; False when there is none (or shutdown began)."""
        st = self.router.storyteller(storyteller_id)
        if st is None or self._stopping:
            return False
        limit = 1 if self._cfg.one_call_per_event else self._cfg.max_turn_events
        claim = await self._backlog.claim_turn(storyteller_id, turn_key_of(st), limit)
        if claim is None:
            return False
        trigger = _claimed_trigger(claim)
        if claim.attempt > 1:
            log.warning(
                "storyteller %s: re-running turn %s, interrupted by a stop or crash",
                st.name,
                claim.turn_key,
            )
            await self._runner.interrupted(st, trigger, claim.turn_key, claim.attempt)
        if st.paused:  # pause is a master switch: waiting work does not run either
            await self._end_turn(claim, st, trigger, "pause", "storyteller was paused")
            return True
        refusal = await self._admitted(st, trigger)
        if refusal is not None:
            await self._end_turn(claim, st, trigger, *refusal)
            return True
        now = self._clock.now()
        for item in claim.items:
            self.stats.turn_latency.observe((now - item.received_at).total_seconds())
        lane.running_turn = True
        self._observer.turn_started(st, trigger)
        outcome: TurnOutcome | None = None
        state, reason = WorkState.FAILED, "crashed"
        cut_off = False
        try:
            outcome = await self._runner.run_turn(st, trigger, claim.turn_key)
            self.stats.turns[outcome.outcome] += 1
            failed = outcome.outcome in FAILED_OUTCOMES
            state = WorkState.FAILED if failed else WorkState.DONE
            reason = outcome.outcome
            if outcome.outcome == "model_transient_error":
                self._alert_transient(st)
        except asyncio.CancelledError:
            cut_off = True
            raise  # left running: the next start runs the turn again under the same key
        except Exception:
            self.stats.turns["crashed"] += 1
            log.exception("turn %s of storyteller %s crashed", claim.turn_key, st.name)
        finally:
            lane.running_turn = False
            lane.plan_waits.stale = True  # the turn may have made, advanced or ended plans
            if cut_off:
                log.warning(
                    "storyteller %s: turn %s cut off by the stop; the next start runs it again",
                    st.name,
                    claim.turn_key,
                )
            else:
                self._observer.turn_finished(st, trigger, outcome)
            await self._changed()
        await self._backlog.finish_turn(claim.turn_key, state, reason)
        self._turn_ended(claim.turn_key)
        return True

    async def _end_turn(
        self, claim: TurnClaim, st: Storyteller, trigger: Trigger, stage: str, reason: str
    ) -> None:
        for each in trigger.all:
            self._drop(st, each, stage, reason)
        # Refused before any model call (paused, over budget, idle): filtered, not failed.
        await self._backlog.finish_turn(claim.turn_key, WorkState.FILTERED, reason, rule=stage)
        self._turn_ended(claim.turn_key)

    def _alert_transient(self, st: Storyteller) -> None:
        if self._alerts is None:
            return
        self._alerts.alert(
            "turn_transient",
            f"{st.name}: a turn failed on a temporary model error",
            "The endpoint kept failing (rate limit, server error or timeout) after retries, so "
            "the turn ended early; its events are marked failed. Repeats of this alert mean "
            "the endpoint is struggling: check its status and the [model] timeouts.",
            severity="warning",
            key=f"turn_transient:{st.id}",
        )


def turn_key_of(st: Storyteller) -> Callable[[Sequence[WorkItem]], str]:
    """How a claimed set of items is named: the same set always gets the same key.

    One event gets ``st<id>:event:<cursor>`` (what `turns.turn_key` gives it); a burst adds
    ``+<n>`` for the n further events, as the attention run of the same burst does.
    """

    def make(items: Sequence[WorkItem]) -> str:
        first = items[0].source
        if first.startswith(("direct:", "heartbeat:")):
            return f"st{st.id}:{first}"
        cursor = first.split(":", 1)[1]  # the source is "<world>:<epoch>:<seq>"
        extra = f"+{len(items) - 1}" if len(items) > 1 else ""
        return f"st{st.id}:event:{cursor}{extra}"

    return make


def _claimed_trigger(claim: TurnClaim) -> Trigger:
    """The trigger of a claimed turn: the oldest item, the rest coalesced into it."""
    triggers = []
    for item in claim.items:
        trigger = decode_trigger(json.loads(item.payload))
        if item.kind in ("room_echo", "speech", "crime"):
            trigger = replace(trigger, attention_reason=item.reason or "")
        triggers.append(trigger)
    return replace(triggers[0], coalesced=tuple(triggers[1:]))
