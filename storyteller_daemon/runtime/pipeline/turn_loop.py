"""The turn lane: each storyteller's turns over its interested work.

A storyteller's turn task claims the oldest interested event and every other interested event
of the same turn class (up to ``max_turn_events``) and runs one turn for them all, under a turn
key that names the claimed set. A turn cut off by a stop or crash is claimed again and run
under its own key; a paused storyteller, or a trigger `Admission` refuses, ends the turn as
filtered without a model call.

A turn ends exactly once: its record and the end of its items are written in one transaction
(`TurnRunner.run_turn`'s `finish`) that a stop cannot cut in half, and the lane counts as
running until it is written, so the drain waits for it. A turn a stop cuts off earlier is
marked so (its next run is no retry); one a crash interrupted more than ``turn_retries`` times
is failed with an alert naming its run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.turn_runner import TurnOutcome, TurnRunner
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock, uncancelled
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import TurnClaim, WorkItem, WorkState
from storyteller_daemon.errors import LeaseLost
from storyteller_daemon.runs import decode_trigger
from storyteller_daemon.runtime.pipeline.lanes import Lane, Lanes, log
from storyteller_daemon.runtime.pipeline.ports import Observer
from storyteller_daemon.runtime.pipeline.routing import Routing
from storyteller_daemon.runtime.stats import RuntimeStats

FAILED_OUTCOMES = frozenset({"model_transient_error", "model_fatal_error", "crashed"})


class Turns:
    """Each storyteller's turn task: it claims, runs and ends the storyteller's turns.

    Args:
        lanes: the lanes and the backlog the turns are claimed from.
        routing: the pause, admission and drops before a turn's model call.
        runner: runs the turns.
        clock: for latencies and the retry delay.
        stats: the daemon's counters.
        observer: told of every turn's start and end.
        attention: the turn size, retries and delays.
        alerts: where failed and given-up turns are alerted (None: nowhere).
    """

    def __init__(
        self,
        *,
        lanes: Lanes,
        routing: Routing,
        runner: TurnRunner,
        clock: Clock,
        stats: RuntimeStats,
        observer: Observer,
        attention: AttentionConfig,
        alerts: AlertSink | None,
    ) -> None:
        self._lanes = lanes
        self._routing = routing
        self._runner = runner
        self._clock = clock
        self._stats = stats
        self._observer = observer
        self._cfg = attention
        self._alerts = alerts
        self.listeners: list[Callable[[str], None]] = []
        """Told the key of each turn once its end is stored (ran, failed, or refused by a last
        check); they must not block or raise (the daemon's invocation outcomes)."""

    def _turn_ended(self, turn_key: str) -> None:
        for listener in self.listeners:
            listener(turn_key)

    async def run(self, storyteller_id: int, lane: Lane) -> None:
        """The storyteller's turn task: claim and run turns whenever the lane is woken."""
        while True:
            await lane.turn_wake.wait()
            if self._lanes.stopping():
                return
            lane.begin_turns()
            failed = False
            try:
                while await self._next_turn(storyteller_id, lane):
                    pass
            except LeaseLost as exc:  # another daemon of a cluster runs it now: its work too
                log.warning("turn stage of storyteller %s stopped: %s", storyteller_id, exc)
                failed = True
            except Exception:  # a failing claim or a bug: the work stays in the backlog
                log.exception("turn stage failed for storyteller %s", storyteller_id)
                lane.wake_turns()
                failed = True
            finally:
                lane.end_turns()
                self._lanes.touch(lane)
                await self._lanes.changed()
            if failed:  # waiting to try again is no turn under way: a stop does not wait for it
                await self._clock.sleep(self._cfg.retry_seconds)

    async def _next_turn(self, storyteller_id: int, lane: Lane) -> bool:
        """Run the next turn of a storyteller; False when there is none (or shutdown began)."""
        st = self._routing.router.storyteller(storyteller_id)
        if st is None or self._lanes.stopping():
            return False
        limit = 1 if self._cfg.one_call_per_event else self._cfg.max_turn_events
        claim = await self._lanes.backlog.claim_turn(
            storyteller_id,
            turn_key_of(st),
            limit,
            retries=self._cfg.turn_retries,
            first=self._cfg.urgent_kinds,
        )
        if claim is None:
            return False
        trigger = _claimed_trigger(claim)
        if claim.resumed:
            log.warning(
                "storyteller %s: running turn %s again (attempt %d), cut off by a stop or crash",
                st.name,
                claim.turn_key,
                claim.attempt,
            )
            run_id = await self._runner.interrupted(
                st, trigger, claim.turn_key, claim.attempt, given_up=claim.given_up
            )
            if claim.given_up:
                self._alert_given_up(st, claim, run_id)
                self._turn_ended(claim.turn_key)
                return True
        if st.paused:  # pause is a master switch: waiting work does not run either
            await self._end_turn(claim, st, trigger, "pause", "storyteller was paused")
            return True
        refusal = await self._routing.admitted(st, trigger)
        if refusal is not None:
            await self._end_turn(claim, st, trigger, *refusal)
            return True
        now = self._clock.now()
        for item in claim.items:
            self._stats.turn_started(item.kind, (now - item.received_at).total_seconds())

        async def finish(outcome: str) -> bool:
            failed = outcome in FAILED_OUTCOMES
            state = WorkState.FAILED if failed else WorkState.DONE
            await self._lanes.backlog.finish_turn(claim.turn_key, state, outcome)
            return not failed

        lane.turn_started()
        self._observer.turn_started(st, trigger)
        outcome: TurnOutcome | None = None
        cut_off = False
        try:
            try:
                outcome = await self._runner.run_turn(st, trigger, claim.turn_key, finish=finish)
            except asyncio.CancelledError:
                cut_off = True
                if self._lanes.stopping():  # a clean stop: the next start runs it again uncounted
                    await uncancelled(self._lanes.backlog.stopped(claim.turn_key))
                raise
            except LeaseLost:  # the new owner runs the turn again under its key
                raise
            except Exception:
                self._stats.turns["crashed"] += 1
                log.exception("turn %s of storyteller %s crashed", claim.turn_key, st.name)
                await self._lanes.backlog.finish_turn(claim.turn_key, WorkState.FAILED, "crashed")
                self._alert_failed(st, claim, "crashed")
            else:
                self._stats.turns[outcome.outcome] += 1
                if outcome.outcome == "model_transient_error":
                    self._alert_transient(st, claim.turn_key)
                # A runner that stores no record leaves the items to this (no-op otherwise).
                await finish(outcome.outcome)
        finally:
            lane.turn_ended()
            lane.plans_changed()  # the turn may have made, advanced or ended plans
            if cut_off:
                log.warning(
                    "storyteller %s: turn %s cut off by %s; it runs again and resumes at the "
                    "next start (in a cluster, on the storyteller's next holder)",
                    st.name,
                    claim.turn_key,
                    "the stop" if self._lanes.stopping() else "cancellation",
                )
            else:
                self._observer.turn_finished(st, trigger, outcome)
            await self._lanes.changed()
        self._turn_ended(claim.turn_key)
        return True

    async def _end_turn(
        self, claim: TurnClaim, st: Storyteller, trigger: Trigger, stage: str, reason: str
    ) -> None:
        for each in trigger.all:
            self._routing.drop(st, each, stage, reason)
        # Refused before any model call (paused, over budget, idle): filtered, not failed.
        await self._lanes.backlog.finish_turn(
            claim.turn_key, WorkState.FILTERED, reason, rule=stage
        )
        self._turn_ended(claim.turn_key)

    def _alert_given_up(self, st: Storyteller, claim: TurnClaim, run_id: int | None) -> None:
        named = f"run {run_id}" if run_id is not None else f"turn {claim.turn_key}"
        log.error(
            "storyteller %s: turn %s was interrupted %d times; its %d events are marked failed "
            "(storyteller runs retry %s queues it again)",
            st.name,
            claim.turn_key,
            claim.attempt - 1,
            len(claim.items),
            run_id if run_id is not None else claim.turn_key,
        )
        if self._alerts is None:
            return
        self._alerts.alert(
            "turn_given_up",
            f"{st.name}: a turn was given up after {claim.attempt - 1} interruptions",
            f"The daemon stopped or crashed during {named} (turn {claim.turn_key}) "
            f"{claim.attempt - 1} times, more than `[attention] turn_retries` allows, so its "
            f"{len(claim.items)} events are marked failed. A turn that brings the daemon down "
            "is a bug to report with `storyteller runs show "
            f"{run_id if run_id is not None else '…'}`; once fixed, "
            f"`storyteller runs retry {run_id if run_id is not None else claim.turn_key}` "
            "queues it again (it resumes where it stopped; nothing it did runs twice).",
            severity="error",
            key=f"turn_given_up:{st.id}",
        )

    def _alert_failed(self, st: Storyteller, claim: TurnClaim, why: str) -> None:
        if self._alerts is None:
            return
        self._alerts.alert(
            "turn_crashed",
            f"{st.name}: a turn {why}",
            f"Turn {claim.turn_key} {why} (a bug: the log has the traceback); its "
            f"{len(claim.items)} events are marked failed. `storyteller runs retry "
            f"{claim.turn_key}` queues it again once fixed.",
            severity="error",
            key=f"turn_crashed:{st.id}",
        )

    def _alert_transient(self, st: Storyteller, key: str) -> None:
        if self._alerts is None:
            return
        self._alerts.alert(
            "turn_transient",
            f"{st.name}: a turn failed on a temporary model error",
            f"The endpoint kept failing (rate limit, server error or timeout) after retries, so "
            f"turn {key} ended early; its events are marked failed (`storyteller runs retry "
            f"{key}` queues it again). Repeats of this alert mean the endpoint is struggling: "
            "check its status and the [model] timeouts.",
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
