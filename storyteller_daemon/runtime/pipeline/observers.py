"""Observers of the pipeline. The logging observer keeps player text out of logs by default."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.turn_runner import TurnOutcome, Verdict
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.stats import RuntimeStats

log = logging.getLogger("storyteller.activity")


def where(trigger: Trigger) -> str:
    """``room #101`` or the trigger label."""
    return f"room #{trigger.room_id}" if trigger.room_id is not None else trigger.label


SUMMARY_SECONDS = 60.0
"""How often each storyteller's activity is summed up in one INFO line."""
LOUD_STAGES = frozenset({"expired", "queue", "budget"})
"""Drop stages worth a line of their own at INFO (they are alerted too)."""


@dataclass
class _Tally:
    heard: int = 0
    judged: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    spent: float = 0.0

    def line(self, name: str, seconds: float) -> str:
        judged = sum(self.judged.values())
        parts = [f"{self.heard} event(s) in", f"{judged} judged"]
        if judged:
            parts[1] += " (" + ", ".join(f"{n} {k}" for k, n in sorted(self.judged.items())) + ")"
        if self.dropped:
            drops = ", ".join(f"{k} {n}" for k, n in sorted(self.dropped.items()))
            parts.append(f"settled without a turn: {drops}")
        parts.append(f"{self.turns} turn(s) started")
        parts.append(f"${self.spent:.4f} spent")
        return f"{name}, last {seconds:.0f} s: " + "; ".join(parts)


class LoggingObserver:
    """Decisions in the log without flooding it.

    Interested verdicts, violations, turns and loud drops get a line each at INFO; every ignore
    verdict and quiet drop is a DEBUG line, and at INFO each storyteller's minute is summed up in
    one line (events in, verdicts, drops by stage, turns, spend) by `run`, and by `flush` at the
    end. Reasons and texts appear only with `debug_payloads`.

    Args:
        debug_payloads: log the model's reasons too.
        clock: the runtime's clock, for the summary period.
        stats: the daemon's counters, for events heard and spend per storyteller.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        debug_payloads: bool = False,
        stats: RuntimeStats | None = None,
    ) -> None:
        self._debug = debug_payloads
        self._clock = clock
        self._stats = stats
        self._tallies: dict[str, _Tally] = {}
        self._since = clock.monotonic()
        self._heard: Counter[str] = Counter(stats.heard) if stats else Counter()
        self._spent: dict[str, float] = dict(stats.spent) if stats else {}

    def _tally(self, storyteller: Storyteller) -> _Tally:
        self._maybe_summarise()
        return self._tallies.setdefault(storyteller.name, _Tally())

    def _maybe_summarise(self) -> None:
        if self._clock.monotonic() - self._since >= SUMMARY_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Log each storyteller's summary of the period so far (those with anything to say)."""
        now = self._clock.monotonic()
        if self._stats is not None:
            for name, count in (self._stats.heard - self._heard).items():
                self._tallies.setdefault(name, _Tally()).heard = count
            for name, usd in self._stats.spent.items():
                if usd > self._spent.get(name, 0.0):
                    self._tallies.setdefault(name, _Tally()).spent = usd - self._spent.get(name, 0)
            self._heard = Counter(self._stats.heard)
            self._spent = dict(self._stats.spent)
        for name, tally in sorted(self._tallies.items()):
            log.info(tally.line(name, now - self._since))
        self._tallies.clear()
        self._since = now

    async def run(self) -> None:
        """Log the summaries every minute, quiet minutes included, until cancelled."""
        while True:
            await self._clock.sleep(SUMMARY_SECONDS)
            self._maybe_summarise()

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        """Drops at the attention stage may quote the model; log those only in debug."""
        shown = reason if (self._debug or stage != "attention") else reason.split(":")[0]
        self._tally(storyteller).dropped[stage] += 1
        level = logging.INFO if stage in LOUD_STAGES else logging.DEBUG
        log.log(
            level,
            "%s: %s in %s dropped at %s (%s)",
            storyteller.name,
            trigger.label,
            where(trigger),
            stage,
            shown,
        )

    def judged(self, storyteller: Storyteller, trigger: Trigger, verdict: Verdict) -> None:
        """The verdict, with the model's reason only in debug."""
        decision = (
            "violation" if verdict.violation else ("interested" if verdict.interested else "ignore")
        )
        self._tally(storyteller).judged[decision] += 1
        if self._debug:
            log.debug("%s: attention %s: %s", storyteller.name, decision, verdict.reason)
        log.log(
            logging.DEBUG if decision == "ignore" else logging.INFO,
            "%s: attention on %s in %s: %s",
            storyteller.name,
            trigger.label,
            where(trigger),
            decision,
        )

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        """A turn begins."""
        self._tally(storyteller).turns += 1
        log.info("%s: turn for %s in %s started", storyteller.name, trigger.label, where(trigger))

    def turn_finished(
        self, storyteller: Storyteller, trigger: Trigger, outcome: TurnOutcome | None
    ) -> None:
        """A turn ended."""
        if outcome is None:
            log.error(
                "%s: turn for %s crashed (see the traceback above)", storyteller.name, trigger.label
            )
            return
        log.info("%s: turn for %s ended: %s", storyteller.name, trigger.label, outcome.outcome)
