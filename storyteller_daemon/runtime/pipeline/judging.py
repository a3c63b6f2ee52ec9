"""One attention pass's judgement of a claimed batch: from rules, plans and memory, else asked.

`BatchJudge.judge` gives every event of a batch a decision: an attention rule, a due plan step
waiting for it, a room echo the world marks as ambience (ignored, rule ``ambience``), a repeat
of what was judged before (in memory, in the same batch, or kept by the
verdict memory), and the rest one model request. A request that fails raises `RequestFailed`
(its events stay pending); a budget spent during the batch filters it. Before asking, calm
pacing (`pacing`) may leave what the model would judge pending for a later request.

An event the gate could not judge at all (its batch, the re-ask and a request of its own all
broke the verdict contract) is a violation, counted; an urgent one (a crime, a state change, a
direct invocation, or a kind in ``urgent_kinds``) fails open instead: it gets a turn, recorded
with rule ``fail_open``, so no crime vanishes because a model slipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.agent.turn_runner import TurnRunner, Verdict
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.repeats import (
    HEARD_ELSEWHERE,
    REPEATED_IN_ROOM,
    Judged,
    repeat_key,
)
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.verdict_memory import RULE_PREFIX, settled_rule
from storyteller_daemon.domain.work import Decision, WorkItem, WorkState
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runtime.pipeline.lanes import Lane
from storyteller_daemon.runtime.pipeline.pacing import pace
from storyteller_daemon.runtime.pipeline.ports import Observer
from storyteller_daemon.runtime.pipeline.routing import Routing
from storyteller_daemon.runtime.pipeline.settled import SettledVerdicts
from storyteller_daemon.runtime.pipeline.speech import SpeechHistory
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.events import Crime, RoomEcho, Speech

FAIL_OPEN = "fail_open"
"""The rule of an urgent event that gets a turn because the gate could not judge it."""
AMBIENCE = "ambience"
"""The rule of a room echo the world marks as ambience (`WorldEvent.ambience`): ignored without
a model call."""
ALWAYS_URGENT = frozenset({TriggerKind.CRIME, TriggerKind.STATE, TriggerKind.DIRECT})
"""Kinds that fail open whatever ``urgent_kinds`` lists."""


class RequestFailed(Exception):
    """The model request of a batch failed (the cause is the runner's error)."""


@dataclass(frozen=True)
class _Inherited:
    """A verdict taken from an earlier judgement of the same text."""

    interested: bool
    reason: str
    violation: str | None = None


class BatchJudge:
    """Decides a claimed batch of one storyteller's pending events.

    Args:
        routing: admission and drops before the model is asked.
        runner: asks the attention model.
        clock: for repeat windows and the verdict memory's horizon.
        stats: the daemon's counters.
        observer: told of every verdict.
        attention: repeat windows and urgent kinds.
        settled: the verdict memory at work.
        speech: the speech-history writer (a batch holding speech waits for it).
    """

    def __init__(
        self,
        *,
        routing: Routing,
        runner: TurnRunner,
        clock: Clock,
        stats: RuntimeStats,
        observer: Observer,
        attention: AttentionConfig,
        settled: SettledVerdicts,
        speech: SpeechHistory,
    ) -> None:
        self._routing = routing
        self._runner = runner
        self._clock = clock
        self._stats = stats
        self._observer = observer
        self._cfg = attention
        self._settled = settled
        self._speech = speech

    async def judge(
        self,
        st: Storyteller,
        lane: Lane,
        items: Sequence[WorkItem],
        triggers: Sequence[Trigger],
        *,
        window: str,
    ) -> list[Decision]:
        """Repeats from memory, the rest from one model request; `window` says why the batch's
        window closed (with pacing's say, counted per request).

        Raises:
            RequestFailed: the model request failed (the events stay pending).
        """
        now = self._clock.monotonic()
        keys = [_repeat_key(t) for t in triggers]
        inherited: dict[int, tuple[str, int]] = {}  # index → (rule, index or -item id of first)
        ask: list[int] = []
        first_in_batch: dict[str, int] = {}
        remembered: dict[int, Judged] = {}
        ruled: dict[int, AttentionRule] = {}
        planned: dict[int, int] = {}  # index → the plan waiting for the event
        settled_ambience: set[int] = set()
        for index, (item, key) in enumerate(zip(items, keys, strict=True)):
            by_rule = lane.rules.decide(
                st.attention_rules, item.kind, item.room_id, _rule_text(triggers[index]), now
            )
            plan = lane.plan_waits.waiting(triggers[index]) if by_rule is None else None
            ambient = by_rule is None and plan is None and self._ambient(triggers[index])
            match = (
                lane.repeats.match(key, item.room_id, now)
                if by_rule is None and plan is None and not ambient
                else None
            )
            if by_rule is not None:
                ruled[index] = by_rule
            elif plan is not None:
                planned[index] = plan
            elif ambient:
                settled_ambience.add(index)
            elif match is not None:
                repeat, judged = match
                inherited[index] = (repeat.rule, -1)
                remembered[index] = judged
            elif key is not None and key in first_in_batch:
                first = first_in_batch[key]
                same_room = items[first].room_id == item.room_id
                span = self._cfg.room_repeat_seconds if same_room else self._cfg.repeat_seconds
                if span > 0:
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
        rate = self._cfg.calm_requests_per_hour
        paced = pace(
            [items[i] for i in ask],
            window=window,
            now=self._clock.now(),
            hot=lane.scenes.rooms(self._mono()),
            cfg=self._cfg,
            spare=lane.allowance.spare(self._mono(), rate),
            refill_in=lane.allowance.refill_in(self._mono(), rate),
        )
        waiting: set[int] = set()
        if not paced.ask and paced.due is not None:  # these and their repeats wait
            waiting = {items[i].id for i in ask}
            due = (paced.due - self._clock.now()).total_seconds()
            lane.calm_until(self._mono() + due)
            ask = []
        elif len(ask) > self._cfg.max_batch_events:  # a paced claim may hold more: next pass
            waiting = {items[i].id for i in ask[self._cfg.max_batch_events :]}
            ask = ask[: self._cfg.max_batch_events]
            lane.look_after_pass()
        if ask:
            asked = [triggers[i] for i in ask]
            refusal = await self._routing.admitted(st, asked[0])
            if refusal is not None:
                for i in range(len(items)):
                    self._routing.drop(st, triggers[i], *refusal)
                return [Decision(i.id, WorkState.FILTERED, refusal[1], refusal[0]) for i in items]
            if any(t.kind is TriggerKind.SPEECH for t in asked):
                await self._speech.caught_up()
            self._stats.batch_sizes.observe(len(asked))
            self._stats.attention_windows[paced.why] += 1
            lane.allowance.spend(self._mono(), rate)
            try:
                answers = await self._runner.judge(st, asked)
            except BudgetExceeded as exc:  # the cap was reached during this batch
                for i in range(len(items)):
                    self._routing.drop(st, triggers[i], "budget", str(exc))
                return [Decision(i.id, WorkState.FILTERED, str(exc), "budget") for i in items]
            except Exception as exc:
                raise RequestFailed from exc
            verdicts.update(zip(ask, answers, strict=True))
        ignored = [i for i in ask if not verdicts[i].interested and verdicts[i].violation is None]
        await self._settled.record(st, found, items, ignored)
        decisions: list[Decision] = []
        for index, item in enumerate(items):
            first_of = inherited[index][1] if index in inherited else -1
            if item.id in waiting or (first_of >= 0 and items[first_of].id in waiting):
                continue  # it waits, or the first of its text does
            trigger = triggers[index]
            rule: str | None = None
            if index in ruled:
                by = ruled[index]
                self._stats.filtered[f"rule:{by.name}"] += 1
                attend = by.action is RuleAction.ATTEND
                verdict: Verdict = _Inherited(attend, f"attention rule {by.name}")
                decisions.append(self._decision(st, item, trigger, verdict, f"rule:{by.name}"))
                continue
            if index in planned:
                self._stats.filtered["plan"] += 1
                verdict = _Inherited(True, f"story plan {planned[index]} waits for this")
                decisions.append(
                    self._decision(st, item, trigger, verdict, f"plan:{planned[index]}")
                )
                continue
            if index in settled_ambience:
                self._stats.filtered[AMBIENCE] += 1
                verdict = _Inherited(False, "the world marks it as ambience")
                decisions.append(self._decision(st, item, trigger, verdict, AMBIENCE))
                continue
            if index in found.settled:
                self._stats.filtered[RULE_PREFIX] += 1
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
                self._stats.filtered[rule] += 1
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
        self._heat(lane, items, decisions)
        return decisions

    def _heat(self, lane: Lane, items: Sequence[WorkItem], decisions: Sequence[Decision]) -> None:
        """The rooms of events the storyteller attends to become scenes for a while."""
        rooms = {i.id: i.room_id for i in items}
        for decision in decisions:
            room = rooms.get(decision.item_id)
            if decision.state is WorkState.INTERESTED and room is not None:
                lane.scenes.heat(room, self._mono() + self._cfg.scene_hold_seconds)

    def _mono(self) -> float:
        return self._clock.monotonic()

    def _decision(
        self, st: Storyteller, item: WorkItem, trigger: Trigger, verdict: Verdict, rule: str | None
    ) -> Decision:
        self._stats.events_judged += 1
        if verdict.violation and self._fails_open(item.kind):
            self._stats.verdicts[FAIL_OPEN] += 1
            reason = (
                "urgent, so it gets a turn although the attention model broke the verdict "
                "contract about it"
            )
            self._observer.judged(st, trigger, _Inherited(True, reason))
            return Decision(item.id, WorkState.INTERESTED, reason, FAIL_OPEN)
        self._observer.judged(st, trigger, verdict)
        if verdict.violation:
            self._stats.verdicts["violation"] += 1
            self._routing.drop(st, trigger, "attention", f"contract violation: {verdict.violation}")
            return Decision(item.id, WorkState.VIOLATION, verdict.violation, rule)
        if not verdict.interested:
            self._stats.verdicts["ignore"] += 1
            self._routing.drop(
                st,
                trigger,
                "attention",
                f"ignored: {verdict.reason}" if verdict.reason else "ignored",
            )
            return Decision(item.id, WorkState.IGNORED, verdict.reason or None, rule)
        self._stats.verdicts["interested"] += 1
        return Decision(item.id, WorkState.INTERESTED, verdict.reason, rule)

    def _ambient(self, trigger: Trigger) -> bool:
        """Whether the world marked the event as ambience and it may be settled so: room echoes
        only (never speech, crimes, state changes or direct invocations), and never in the
        reference design, which judges every event."""
        event = trigger.event
        return isinstance(event, RoomEcho) and event.ambience and not self._cfg.one_call_per_event

    def _fails_open(self, kind: str) -> bool:
        """Whether an event of `kind` gets a turn when the gate could not judge it."""
        return kind in ALWAYS_URGENT or kind in self._cfg.urgent_kinds


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
