"""Observers of the pipeline. The logging observer keeps player text out of logs by default."""

from __future__ import annotations

import logging

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.runtime.pipeline import TurnOutcome, Verdict

log = logging.getLogger("storyteller.activity")


def where(trigger: Trigger) -> str:
    """``room #101`` or the trigger label."""
    return f"room #{trigger.room_id}" if trigger.room_id is not None else trigger.label


class LoggingObserver:
    """One log line per decision; reasons and texts only with `debug_payloads`."""

    def __init__(self, *, debug_payloads: bool = False) -> None:
        self._debug = debug_payloads

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        """Drops at the attention stage may quote the model; log those only in debug."""
        shown = reason if (self._debug or stage != "attention") else reason.split(":")[0]
        # Without a key every trigger stops here; the start-up warning already said so once.
        level = logging.DEBUG if stage == "api_key" else logging.INFO
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
        if self._debug:
            log.debug("%s: attention %s: %s", storyteller.name, decision, verdict.reason)
        log.info(
            "%s: attention on %s in %s: %s",
            storyteller.name,
            trigger.label,
            where(trigger),
            decision,
        )

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        """A turn begins."""
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
