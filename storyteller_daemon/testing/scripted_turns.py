"""A scripted turn runner: the pipeline's `TurnRunner` with verdicts and outcomes given up front.

`ScriptedTurnRunner` answers the attention gate with `verdict` (or the verdict given for the
trigger's kind in `verdicts`) and ends turns with `outcome` (or the one in `outcomes`), and
records everything it was asked. Tests hold it still with events: `judge_gate` holds judging,
`release` holds turns (set at first), and `started` is set as soon as a turn begins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.agent.turn_runner import Finish
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ModelTransientError


@dataclass(frozen=True)
class ScriptedOutcome:
    """How a scripted turn ended (the part of an outcome the pipeline reads)."""

    outcome: str = "completed"


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass
class ScriptedTurnRunner:
    """Judges and runs turns as scripted, recording what it was asked.

    Attributes:
        verdict: the verdict on a trigger whose kind `verdicts` does not name.
        verdicts: trigger kind → the verdict on triggers of that kind.
        outcome: how a turn ends, unless `outcomes` names its trigger's kind.
        outcomes: trigger kind → how turns for triggers of that kind end.
        judge_error: raised by every judge call, when set (a spent budget, a gate that must
            not be asked).
        failures: judge calls still to fail with a transient model error.
        judge_gate: when set, judge calls wait for it (after being recorded in `asked`).
        release: turns wait for it (after being recorded in `begun`); set at first.
        on_judge: awaited with the triggers of each judge call before it answers.
        asked: every judge call's triggers as it arrives.
        judged: every answered judge call's triggers.
        begun: (trigger, turn key) of every turn as it begins.
        turns: (trigger, turn key) of every turn once released.
        interruptions: (turn key, attempt) of every turn run again after a stop or crash.
        started: set once a turn has begun.
    """

    verdict: AttentionVerdict = field(default_factory=lambda: AttentionVerdict(True, "matters"))
    verdicts: Mapping[TriggerKind, AttentionVerdict] = field(default_factory=dict)
    outcome: str = "completed"
    outcomes: Mapping[TriggerKind, str] = field(default_factory=dict)
    judge_error: Exception | None = None
    failures: int = 0
    judge_gate: asyncio.Event | None = None
    release: asyncio.Event = field(default_factory=_set_event)
    on_judge: Callable[[Sequence[Trigger]], Awaitable[None]] | None = None
    asked: list[list[Trigger]] = field(default_factory=list)
    judged: list[list[Trigger]] = field(default_factory=list)
    begun: list[tuple[Trigger, str]] = field(default_factory=list)
    turns: list[tuple[Trigger, str]] = field(default_factory=list)
    interruptions: list[tuple[str, int]] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    _progress: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def judge(
        self, storyteller: Storyteller, triggers: Sequence[Trigger]
    ) -> list[AttentionVerdict]:
        """The scripted verdict on each trigger, in order."""
        self.asked.append(list(triggers))
        if self.judge_gate is not None:
            await self.judge_gate.wait()
        if self.judge_error is not None:
            raise self.judge_error
        if self.failures:
            self.failures -= 1
            raise ModelTransientError("HTTP 503 (gave up after 1 retries)")
        if self.on_judge is not None:
            await self.on_judge(triggers)
        self.judged.append(list(triggers))
        return [self.verdicts.get(t.kind, self.verdict) for t in triggers]

    async def run_turn(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        *,
        finish: Finish | None = None,
    ) -> ScriptedOutcome:
        """Begin, wait for `release`, and end with the scripted outcome (the pipeline stores
        the end of the turn's items)."""
        self.begun.append((trigger, key))
        self.started.set()
        await self.release.wait()
        self.turns.append((trigger, key))
        async with self._progress:
            self._progress.notify_all()
        return ScriptedOutcome(self.outcomes.get(trigger.kind, self.outcome))

    async def interrupted(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        attempt: int,
        *,
        given_up: bool = False,
    ) -> int | None:
        """Record the interruption (no run record is stored)."""
        self.interruptions.append((key, attempt))
        return None

    @property
    def turn_triggers(self) -> list[Trigger]:
        """The triggers of the released turns, in order."""
        return [trigger for trigger, _ in self.turns]

    @property
    def judged_triggers(self) -> list[Trigger]:
        """Every answered trigger, in order."""
        return [trigger for batch in self.judged for trigger in batch]

    async def wait_until(self, done: Callable[[], bool]) -> None:
        """Return once `done()` holds, looking again after each turn that ran."""
        async with self._progress:
            await self._progress.wait_for(done)
