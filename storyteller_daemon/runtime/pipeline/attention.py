"""The attention lane: each storyteller's pending events judged in bursts.

A storyteller's attention task waits for a burst window (no new event for ``quiet_seconds``,
or the oldest waiting ``max_wait_seconds``; urgent kinds and a full batch go at once), then
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

An event the gate could not judge at all (its batch, the re-ask and a request of its own all
broke the verdict contract) is a violation, counted; an urgent one (a crime, a state change, a
direct invocation, or a kind in ``urgent_kinds``) fails open instead: it gets a turn, recorded
with rule ``fail_open``, so no crime vanishes because a model slipped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.agent.turn_runner import Verdict
from storyteller_daemon.clock import sleep_or_wake
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.repeats import (
    HEARD_ELSEWHERE,
    REPEATED_IN_ROOM,
    Judged,
    repeat_key,
)
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.domain.verdict_memory import RULE_PREFIX, settled_rule
from storyteller_daemon.domain.work import Decision, WorkItem, WorkState
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import decode_trigger
from storyteller_daemon.runtime.pipeline.state import PipelineState, _Lane, log
from world_adapter.events import Crime, RoomEcho, Speech

FAIL_OPEN = "fail_open"
"""The rule of an urgent event that gets a turn because the gate could not judge it."""
ALWAYS_URGENT = frozenset({TriggerKind.CRIME, TriggerKind.STATE, TriggerKind.DIRECT})
"""Kinds that fail open whatever ``urgent_kinds`` lists."""
RETRY_CAP_SECONDS = 60.0
EXPIRY_EVERY_SECONDS = 60.0
"""How often a storyteller's backlog is checked for events past the maximum age."""


@dataclass(frozen=True)
class _Inherited:
    """A verdict taken from an earlier judgement of the same text."""

    interested: bool
    reason: str
    violation: str | None = None


class AttentionStage(PipelineState):
    """Each storyteller's attention task: burst windows, judging passes, back-off, expiry."""

    async def _attention_loop(self, storyteller_id: int, lane: _Lane) -> None:
        while True:
            await self._window(lane)
            if self._stopping:
                return
            if lane.passes >= self._parallel:  # wait for an answer before asking again
                lane.wake.clear()
                await lane.wake.wait()
                continue
            lane.passes += 1
            try:
                started = await self._start_pass(storyteller_id, lane)
            except Exception:  # a bug in one pass must not stop the lane; its events stay
                log.exception("attention pass failed for storyteller %s", storyteller_id)
                started = False
                self._back_off(lane)
            if not started:
                lane.passes -= 1
                await self._changed()

    async def _window(self, lane: _Lane) -> None:
        """Return when the storyteller's waiting events should be judged."""
        while not self._stopping:
            now = self._clock.monotonic()
            if lane.retry_at is not None and now < lane.retry_at:
                lane.wake.clear()
                await sleep_or_wake(self._clock, lane.wake, lane.retry_at - now)
                continue
            if lane.pending <= 0 and not lane.more:
                lane.wake.clear()
                await lane.wake.wait()
                continue
            if lane.more or lane.urgent or self._cfg.one_call_per_event:
                return
            if lane.pending >= self._cfg.max_batch_events:
                return
            first = lane.first_at if lane.first_at is not None else now
            last = lane.last_at if lane.last_at is not None else now
            due = min(last + self._cfg.quiet_seconds, first + self._cfg.max_wait_seconds)
            if now >= due:
                return
            lane.wake.clear()
            await sleep_or_wake(self._clock, lane.wake, due - now)

    async def _start_pass(self, storyteller_id: int, lane: _Lane) -> bool:
        """Claim the oldest pending events not already being judged, up to a batch, and judge
        them in a task of their own; False when there was nothing to judge."""
        limit = 1 if self._cfg.one_call_per_event else self._cfg.max_batch_events
        # This pass takes what is waiting (up to `limit`); events arriving from here on count
        # towards the next window.
        lane.first_at = lane.last_at = None
        lane.urgent = False
        lane.pending = 0
        lane.more = False
        st = self.router.storyteller(storyteller_id)
        if st is None:
            return False
        await self._expire(st, lane)
        await self._load_plan_waits(st, lane)
        items = await self._backlog.pending(storyteller_id, limit, exclude=lane.in_flight)
        lane.more = len(items) >= limit
        if not items:
            return False
        claimed = {item.id for item in items}
        lane.in_flight |= claimed
        assert self._group is not None  # lanes run only inside the pipeline's task group
        task = self._group.create_task(self._finish_pass(st, lane, items, claimed))
        lane.tasks.append(task)
        task.add_done_callback(lane.tasks.remove)
        return True

    async def _load_plan_waits(self, st: Storyteller, lane: _Lane) -> None:
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
        self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem], claimed: set[int]
    ) -> None:
        """Judge one claimed batch and record the decisions."""
        try:
            await self._judge_pass(st, lane, items)
        except Exception:  # a bug in one pass must not stop the lane; its events stay
            log.exception("attention pass failed for storyteller %s", st.name)
            self._back_off(lane)
        finally:
            lane.in_flight -= claimed
            lane.passes -= 1
            self._touch(lane)
            lane.wake.set()
            await self._changed()

    async def _judge_pass(self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem]) -> None:
        """Judge a batch of pending events of one storyteller in one request."""
        triggers = [decode_trigger(json.loads(item.payload)) for item in items]
        decisions = self._unjudgeable(st, items, triggers)
        if decisions is None:
            decisions = await self._judge(st, lane, items, triggers)
            if decisions is None:  # the request failed: the events stay pending
                return
        lane.failures = 0
        lane.retry_at = None
        await self._backlog.decide(decisions)
        now = self._clock.now()
        for item in items:
            self.stats.verdict_latency.observe((now - item.received_at).total_seconds())
        if any(d.state is WorkState.INTERESTED for d in decisions):
            lane.turn_wake.set()

    def _unjudgeable(
        self, st: Storyteller, items: Sequence[WorkItem], triggers: Sequence[Trigger]
    ) -> list[Decision] | None:
        """Decisions for a batch that must not reach the model now (pause, no key), or None."""
        reason = self._pause_stage(st, triggers[0]) or self._api_key_stage(st, triggers[0])
        if reason is None:
            return None
        stage = "pause" if st.paused else "api_key"
        for trigger in triggers:
            self._drop(st, trigger, stage, reason)
        return [Decision(i.id, WorkState.FILTERED, reason, stage) for i in items]

    async def _judge(
        self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem], triggers: Sequence[Trigger]
    ) -> list[Decision] | None:
        """Repeats from memory, the rest from one model request; None if the request failed."""
        now = self._clock.monotonic()
        keys = [_repeat_key(t) for t in triggers]
        inherited: dict[int, tuple[str, int]] = {}  # index → (rule, index or -item id of first)
        ask: list[int] = []
        first_in_batch: dict[str, int] = {}
        remembered: dict[int, Judged] = {}
        ruled: dict[int, AttentionRule] = {}
        planned: dict[int, int] = {}  # index → the plan waiting for the event
        for index, (item, key) in enumerate(zip(items, keys, strict=True)):
            by_rule = lane.rules.decide(
                st.attention_rules, item.kind, item.room_id, _rule_text(triggers[index]), now
            )
            plan = lane.plan_waits.waiting(triggers[index]) if by_rule is None else None
            match = (
                lane.repeats.match(key, item.room_id, now)
                if by_rule is None and plan is None
                else None
            )
            if by_rule is not None:
                ruled[index] = by_rule
            elif plan is not None:
                planned[index] = plan
            elif match is not None:
                repeat, judged = match
                inherited[index] = (repeat.rule, -1)
                remembered[index] = judged
            elif key is not None and key in first_in_batch:
                first = first_in_batch[key]
                same_room = items[first].room_id == item.room_id
                window = self._cfg.room_repeat_seconds if same_room else self._cfg.repeat_seconds
                if window > 0:
                    inherited[index] = (REPEATED_IN_ROOM if same_room else HEARD_ELSEWHERE, first)
                else:
                    ask.append(index)
            else:
                if key is not None:
                    first_in_batch.setdefault(key, index)
                ask.append(index)
        verdicts: dict[int, Verdict] = {}
        found = await self._settled.recall(st, lane.memory, triggers, ask, self._clock.now())
        for index, entry in found.settled.items():
            when = entry.ignored_at.strftime("%H:%M")
            verdicts[index] = _Inherited(
                False, f"the same text was ignored as work item {entry.item_id} at {when} UTC"
            )
        ask = [index for index in ask if index not in found.settled]
        if ask:
            asked = [triggers[i] for i in ask]
            refusal = await self._admitted(st, asked[0])
            if refusal is not None:
                for i in range(len(items)):
                    self._drop(st, triggers[i], *refusal)
                return [Decision(i.id, WorkState.FILTERED, refusal[1], refusal[0]) for i in items]
            if any(t.kind is TriggerKind.SPEECH for t in asked):
                await self._speech_caught_up()
            self.stats.batch_sizes.observe(len(asked))
            try:
                answers = await self._runner.judge(st, asked)
            except BudgetExceeded as exc:  # the cap was reached during this batch
                for i in range(len(items)):
                    self._drop(st, triggers[i], "budget", str(exc))
                return [Decision(i.id, WorkState.FILTERED, str(exc), "budget") for i in items]
            except Exception as exc:
                await self._attention_failed(st, lane, items, exc)
                return None
            verdicts.update(zip(ask, answers, strict=True))
        ignored = [i for i in ask if not verdicts[i].interested and verdicts[i].violation is None]
        await self._settled.record(st, found, items, ignored)
        decisions: list[Decision] = []
        for index, item in enumerate(items):
            trigger = triggers[index]
            rule: str | None = None
            if index in ruled:
                by = ruled[index]
                self.stats.filtered[f"rule:{by.name}"] += 1
                attend = by.action is RuleAction.ATTEND
                verdict: Verdict = _Inherited(attend, f"attention rule {by.name}")
                decisions.append(self._decision(st, item, trigger, verdict, f"rule:{by.name}"))
                continue
            if index in planned:
                self.stats.filtered["plan"] += 1
                verdict = _Inherited(True, f"story plan {planned[index]} waits for this")
                decisions.append(
                    self._decision(st, item, trigger, verdict, f"plan:{planned[index]}")
                )
                continue
            if index in found.settled:
                self.stats.filtered[RULE_PREFIX] += 1
                rule = settled_rule(found.settled[index].item_id)
                decisions.append(self._decision(st, item, trigger, verdicts[index], rule))
                continue
            if index in inherited:
                rule, first = inherited[index]
                if first >= 0:
                    base = verdicts[first]
                    verdict = _Inherited(base.interested, base.reason, base.violation)
                    source = items[first].id
                else:
                    judged = remembered[index]
                    verdict = _Inherited(judged.interested, judged.reason)
                    source = judged.item_id
                self.stats.filtered[rule] += 1
                reason = f"same text as work item {source}"
                verdict = _Inherited(
                    verdict.interested, verdict.reason or reason, verdict.violation
                )
            else:
                verdict = verdicts[index]
                if verdict.violation is None:
                    lane.repeats.remember(
                        keys[index],
                        Judged(item.id, item.room_id, now, verdict.interested, verdict.reason),
                    )
            decisions.append(self._decision(st, item, trigger, verdict, rule))
        return decisions

    def _decision(
        self, st: Storyteller, item: WorkItem, trigger: Trigger, verdict: Verdict, rule: str | None
    ) -> Decision:
        self.stats.events_judged += 1
        if verdict.violation and self._fails_open(item.kind):
            self.stats.verdicts[FAIL_OPEN] += 1
            reason = (
                "urgent, so it gets a turn although the attention model broke the verdict "
                "contract about it"
            )
            self._observer.judged(st, trigger, _Inherited(True, reason))
            return Decision(item.id, WorkState.INTERESTED, reason, FAIL_OPEN)
        self._observer.judged(st, trigger, verdict)
        if verdict.violation:
            self.stats.verdicts["violation"] += 1
            self._drop(st, trigger, "attention", f"contract violation: {verdict.violation}")
            return Decision(item.id, WorkState.VIOLATION, verdict.violation, rule)
        if not verdict.interested:
            self.stats.verdicts["ignore"] += 1
            self._drop(
                st,
                trigger,
                "attention",
                f"ignored: {verdict.reason}" if verdict.reason else "ignored",
            )
            return Decision(item.id, WorkState.IGNORED, verdict.reason or None, rule)
        self.stats.verdicts["interested"] += 1
        return Decision(item.id, WorkState.INTERESTED, verdict.reason, rule)

    def _fails_open(self, kind: str) -> bool:
        """Whether an event of `kind` gets a turn when the gate could not judge it."""
        return kind in ALWAYS_URGENT or kind in self._cfg.urgent_kinds

    async def _attention_failed(
        self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem], exc: Exception
    ) -> None:
        """A failed request: its events stay pending; wait before the next pass."""
        await self._backlog.count_attempt([i.id for i in items])
        self.stats.attention_failures += 1
        lane.more = True
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

    def _back_off(self, lane: _Lane) -> None:
        """Start no pass before a delay that doubles with each failure in a row.

        Requests in flight together that fail in the same outage count once: a failure while
        the lane is already waiting out a delay does not lengthen it.
        """
        if lane.retry_at is not None and lane.retry_at > self._clock.monotonic():
            return
        lane.failures += 1
        delay = min(RETRY_CAP_SECONDS, self._cfg.retry_seconds * 2 ** (lane.failures - 1))
        lane.retry_at = self._clock.monotonic() + delay

    async def _expire(self, st: Storyteller, lane: _Lane) -> None:
        """The maximum-age policy: expire what waited too long, count it and alert."""
        if self._cfg.max_age_seconds <= 0 or st.id is None:
            return
        now = self._clock.monotonic()
        if lane.expired_at is not None and now - lane.expired_at < EXPIRY_EVERY_SECONDS:
            return
        lane.expired_at = now
        cutoff = self._clock.now() - timedelta(seconds=self._cfg.max_age_seconds)
        reason = f"not judged within {self._cfg.max_age_seconds:g} s of arrival"
        expired = await self._backlog.expire(st.id, received_before=cutoff, reason=reason)
        if not expired:
            return
        self.stats.drop("expired", len(expired))
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


def _rule_text(trigger: Trigger) -> str:
    """What an attention rule's pattern is searched in: the text, or a crime's type."""
    event = trigger.event
    if isinstance(event, RoomEcho | Speech):
        return event.text
    if isinstance(event, Crime):
        return event.crime_type
    return trigger.text


def _repeat_key(trigger: Trigger) -> str | None:
    """Echoes and speech can be repeats; crimes and the rest are always judged."""
    event = trigger.event
    if isinstance(event, RoomEcho):
        return repeat_key("echo", event.text)
    if isinstance(event, Speech):
        return repeat_key(f"speech:{event.speaker_id}", event.text)
    if isinstance(event, Crime):
        return None
    return None
