"""The attention lane: each storyteller's pending events judged in bursts.

A storyteller's attention task waits for a burst window (no new event for ``quiet_seconds``,
or ``routine_quiet_seconds`` while the window holds only ``routine_kinds``; or the oldest waiting
``max_wait_seconds``; urgent kinds, a full batch and a burst forming in one room go at once, a
new event in a scene after ``scene_wait_seconds``;
calm events an earlier pass left pending, `pacing`, are looked at again by their due time), then
claims the oldest pending events, up to ``max_batch_events``, and judges them in a pass of
their own (up to ``parallel_requests`` passes at once): attention rules, the waits of the
storyteller's story plans and repeats are settled from memory, then what the verdict memory
settles (`settled`: text the model ignored within hours, rule ``repeat_of:<item>``), the rest
in one model request, and every event gets a recorded decision.

An event meeting the condition a due plan step waits for (`plan_waits`) is interesting without a
model call, recorded with rule ``plan:<id>``, so its turn advances the plan. The storyteller's
attention rules come first: an admin's ``ignore`` rule keeps an event from the plan too. A failed
request leaves its events pending and delays the next pass (doubling, up to a minute); events
still unjudged after ``max_age_seconds`` are expired, counted and alerted.
How one batch is decided is `judging`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock, sleep_or_wake
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import Decision, WorkItem, WorkState
from storyteller_daemon.errors import LeaseLost
from storyteller_daemon.runs import decode_trigger
from storyteller_daemon.runtime.pipeline.judging import BatchJudge, RequestFailed
from storyteller_daemon.runtime.pipeline.lanes import Lane, Lanes, log
from storyteller_daemon.runtime.pipeline.pacing import paces
from storyteller_daemon.runtime.pipeline.ports import PlanReader
from storyteller_daemon.runtime.pipeline.routing import Routing
from storyteller_daemon.runtime.stats import RuntimeStats

RETRY_CAP_SECONDS = 60.0
EXPIRY_EVERY_SECONDS = 60.0
"""How often a storyteller's backlog is checked for events past the maximum age."""
PACED_CLAIM_BATCHES = 4
"""With calm pacing, a pass claims up to this many batches of pending events (those rules,
repeats and the verdict memory settle, and calm events waiting); it asks about one batch at
most."""
WINDOW_MAX_WAIT = "max_wait"
"""The window closed because its oldest event waited `max_wait_seconds`."""
WINDOW_QUIET = "quiet"
"""The window closed because no event came for the quiet gap."""
WINDOW_URGENT = "urgent"
"""An urgent kind closed the window at once."""
WINDOW_FULL = "full"
"""A full batch was waiting."""
WINDOW_BACKLOG = "backlog"
"""The backlog was looked at at once: the last batch was full, a request failed, a resume."""
WINDOW_SCENE = "scene"
"""New events came in a burst in one room (`pacing.Scenes.arrived`), or a new event in a scene
waited `scene_wait_seconds`."""
WINDOW_CALM = "calm"
"""Calm events an earlier pass left pending reached `calm_max_wait_seconds` (`pacing`)."""


class Attention:
    """Each storyteller's attention task: burst windows, judging passes, back-off, expiry.

    Args:
        lanes: the lanes and the backlog the events are claimed from.
        routing: pause, the model and drops.
        judge: decides each claimed batch.
        clock: for windows, delays and the maximum age.
        stats: the daemon's counters.
        attention: windows, batch sizes, delays and the maximum age.
        alerts: where failing requests and expiries are alerted (None: nowhere).
        plans: where planning storytellers' plans are read (None: no plan waits).
    """

    def __init__(
        self,
        *,
        lanes: Lanes,
        routing: Routing,
        judge: BatchJudge,
        clock: Clock,
        stats: RuntimeStats,
        attention: AttentionConfig,
        alerts: AlertSink | None,
        plans: PlanReader | None,
    ) -> None:
        self._lanes = lanes
        self._routing = routing
        self._judge = judge
        self._clock = clock
        self._stats = stats
        self._cfg = attention
        self._alerts = alerts
        self._plans = plans
        self._parallel = 1 if attention.one_call_per_event else attention.parallel_requests

    async def run(self, storyteller_id: int, lane: Lane) -> None:
        """The storyteller's attention task: judge its pending events in passes."""
        while True:
            closed_by = await self._window(lane)
            if self._lanes.stopping():
                return
            if lane.passes >= self._parallel:  # wait for an answer before asking again
                lane.wake.clear()
                await lane.wake.wait()
                continue
            lane.pass_started()
            try:
                started = await self._start_pass(storyteller_id, lane, closed_by)
            except LeaseLost as exc:  # another daemon of a cluster runs it now: its work too
                log.warning("attention stage of storyteller %s stopped: %s", storyteller_id, exc)
                started = False
                self._back_off(lane)
            except Exception:  # a bug in one pass must not stop the lane; its events stay
                log.exception("attention pass failed for storyteller %s", storyteller_id)
                started = False
                self._back_off(lane)
            if not started:
                lane.pass_ended()
                await self._lanes.changed()

    async def _window(self, lane: Lane) -> str:
        """Return when the storyteller's waiting events should be judged, with why: `WINDOW_*`
        (counted per request in `RuntimeStats.attention_windows`)."""
        while not self._lanes.stopping():
            now = self._clock.monotonic()
            if lane.retry_at is not None and now < lane.retry_at:
                lane.wake.clear()
                await sleep_or_wake(self._clock, lane.wake, lane.retry_at - now)
                continue
            calm_due = lane.calm_due if lane.calm_due is not None else float("inf")
            if now >= calm_due:
                return WINDOW_CALM
            if lane.pending <= 0 and not lane.more:
                lane.wake.clear()
                if calm_due == float("inf"):
                    await lane.wake.wait()
                else:
                    await sleep_or_wake(self._clock, lane.wake, calm_due - now)
                continue
            if lane.more or self._cfg.one_call_per_event:
                return WINDOW_BACKLOG
            if lane.urgent:
                return WINDOW_URGENT
            if lane.pending >= self._cfg.max_batch_events:
                return WINDOW_FULL
            scene_due = lane.scene_due if lane.scene_due is not None else float("inf")
            if lane.scene or now >= scene_due:
                return WINDOW_SCENE
            first = lane.first_at if lane.first_at is not None else now
            last = lane.last_at if lane.last_at is not None else now
            quiet = self._cfg.routine_quiet_seconds if lane.routine else self._cfg.quiet_seconds
            quiet_due = last + quiet
            wait_due = first + self._cfg.max_wait_seconds
            if now >= wait_due:
                return WINDOW_MAX_WAIT
            if now >= quiet_due:
                return WINDOW_QUIET
            lane.wake.clear()
            due = min(quiet_due, wait_due, calm_due, scene_due)
            await sleep_or_wake(self._clock, lane.wake, due - now)
        return WINDOW_BACKLOG

    async def _start_pass(self, storyteller_id: int, lane: Lane, closed_by: str) -> bool:
        """Claim the oldest pending events not already being judged, up to a batch, and judge
        them in a task of their own; False when there was nothing to judge."""
        limit = 1 if self._cfg.one_call_per_event else self._cfg.max_batch_events
        if paces(self._cfg):  # calm events wait in the backlog: look past them
            limit *= PACED_CLAIM_BATCHES
        # This pass takes what is waiting (up to `limit`); events arriving from here on count
        # towards the next window.
        lane.take_window()
        st = self._routing.router.storyteller(storyteller_id)
        if st is None:
            return False
        await self._expire(st, lane)
        await self._load_plan_waits(st, lane)
        items = await self._lanes.backlog.pending(
            storyteller_id, limit, exclude=lane.in_flight, first=self._cfg.urgent_kinds
        )
        lane.batch_was_full(len(items) >= limit)
        if not items:
            return False
        claimed = {item.id for item in items}
        lane.judging_now(claimed)
        self._lanes.spawn(lane, self._finish_pass(st, lane, items, claimed, closed_by))
        return True

    async def _load_plan_waits(self, st: Storyteller, lane: Lane) -> None:
        """Reload the plan waits of a planning storyteller when a turn or reload made them stale."""
        if self._plans is None or st.id is None or not st.direction.plans:
            lane.plan_waits.clear()
            return
        if not lane.plan_waits.stale:
            return
        try:
            plans = await self._plans.list(st.id, include_closed=False)
        except Exception as exc:  # judged without the waits; the next pass tries again
            log.warning("plan waits of storyteller %s could not be read: %s", st.name, exc)
            return
        lane.plan_waits.load(plans, self._clock.now())

    async def _finish_pass(
        self,
        st: Storyteller,
        lane: Lane,
        items: Sequence[WorkItem],
        claimed: set[int],
        closed_by: str,
    ) -> None:
        """Judge one claimed batch and record the decisions."""
        try:
            await self._judge_pass(st, lane, items, closed_by)
        except LeaseLost as exc:  # the new owner judges the batch again
            log.warning("attention stage of storyteller %s stopped: %s", st.name, exc)
            self._back_off(lane)
        except Exception:  # a bug in one pass must not stop the lane; its events stay
            log.exception("attention pass failed for storyteller %s", st.name)
            self._back_off(lane)
        finally:
            lane.pass_ended(claimed)
            self._lanes.touch(lane)
            lane.wake.set()
            await self._lanes.changed()

    async def _judge_pass(
        self, st: Storyteller, lane: Lane, items: Sequence[WorkItem], closed_by: str
    ) -> None:
        """Judge a batch of pending events of one storyteller in one request."""
        triggers = [decode_trigger(json.loads(item.payload)) for item in items]
        decisions = self._unjudgeable(st, items, triggers)
        if decisions is None:
            try:
                decisions = await self._judge.judge(st, lane, items, triggers, window=closed_by)
            except RequestFailed as failed:  # the events stay pending
                assert isinstance(failed.__cause__, Exception)
                await self._attention_failed(st, lane, items, failed.__cause__)
                return
        lane.judged_ok()
        await self._lanes.backlog.decide(decisions)
        now = self._clock.now()
        decided = {d.item_id for d in decisions}
        for item in items:
            if item.id in decided:  # the rest wait for a later request (`pacing`)
                self._stats.verdict_latency.observe((now - item.received_at).total_seconds())
        if any(d.state is WorkState.INTERESTED for d in decisions):
            lane.wake_turns()

    def _unjudgeable(
        self, st: Storyteller, items: Sequence[WorkItem], triggers: Sequence[Trigger]
    ) -> list[Decision] | None:
        """Decisions for a batch that must not reach the model now (pause, no key), or None."""
        held = self._routing.held(st)
        if held is None:
            return None
        stage, reason = held
        for trigger in triggers:
            self._routing.drop(st, trigger, stage, reason)
        return [Decision(i.id, WorkState.FILTERED, reason, stage) for i in items]

    async def _attention_failed(
        self, st: Storyteller, lane: Lane, items: Sequence[WorkItem], exc: Exception
    ) -> None:
        """A failed request: its events stay pending; wait before the next pass."""
        await self._lanes.backlog.count_attempt([i.id for i in items])
        self._stats.attention_failures += 1
        lane.request_failed()
        log.warning(
            "attention request of storyteller %s failed (%s: %s); its %d events stay pending",
            st.name,
            type(exc).__name__,
            exc,
            len(items),
        )
        if self._alerts is not None:
            self._alerts.alert(
                "attention_failed",
                f"{st.name}: attention requests are failing",
                f"{type(exc).__name__}: {exc}\n\nThe events stay in the storyteller's backlog "
                "and are judged once requests succeed again; events older than "
                "[attention] max_age_seconds are expired. Check the model endpoint and "
                "`storyteller doctor`.",
                severity="warning",
                key=f"attention_failed:{st.id}",
            )
        self._back_off(lane)

    def _back_off(self, lane: Lane) -> None:
        """Start no pass before a delay that doubles with each failure in a row.

        Requests in flight together that fail in the same outage count once: a failure while
        the lane is already waiting out a delay does not lengthen it.
        """
        lane.back_off(self._clock.monotonic(), self._cfg.retry_seconds, RETRY_CAP_SECONDS)

    async def _expire(self, st: Storyteller, lane: Lane) -> None:
        """The maximum-age policy: expire what waited too long, count it and alert."""
        if self._cfg.max_age_seconds <= 0 or st.id is None:
            return
        if not lane.expiry_due(self._clock.monotonic(), EXPIRY_EVERY_SECONDS):
            return
        cutoff = self._clock.now() - timedelta(seconds=self._cfg.max_age_seconds)
        reason = f"not judged within {self._cfg.max_age_seconds:g} s of arrival"
        expired = await self._lanes.backlog.expire(st.id, received_before=cutoff, reason=reason)
        if not expired:
            return
        self._stats.drop("expired", len(expired))
        log.warning(
            "storyteller %s: %d events expired unjudged (%s)", st.name, len(expired), reason
        )
        if self._alerts is not None:
            self._alerts.alert(
                "work_expired",
                f"{st.name}: {len(expired)} events expired before they were judged",
                "The attention model could not keep up, or kept failing, for longer than "
                "[attention] max_age_seconds. What helps: fix a failing endpoint (`storyteller "
                "doctor`), use a faster attention model, raise max_batch_events, or narrow the "
                "storyteller's surveillance and subscriptions.",
                severity="warning",
                key=f"work_expired:{st.id}",
            )
