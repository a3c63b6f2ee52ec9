"""A live, readable account of the daemon at work: event → verdict → tool calls → effect."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.turn_runner import TurnOutcome, Verdict
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.storytellers import Storyteller

QUIET_STAGES = {"prefilter"}
OUTCOME_WORDS = {
    "noop": "the model decided nothing needed doing (Noop)",
    "completed": "completed",
    "no_tool_call": "the model made no tool call",
}


def _short(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_trigger(trigger: Trigger) -> str:
    """One line naming what happened, with the world text."""
    event = trigger.event
    text = getattr(event, "text", "") if event is not None else trigger.text
    where = f"room #{trigger.room_id}" if trigger.room_id is not None else "—"
    body = f": {escape(_short(text, 90))}" if text else ""
    return f"[bold]{trigger.label}[/] in {where}{body}"


class ConsoleObserver:
    """Prints the account to a rich console; shows what players saw when the world can tell."""

    def __init__(
        self,
        console: Console,
        *,
        clock: Clock,
        players: Callable[[], list[tuple[int, str]]] | None = None,
        output_of: Callable[[int], list[str]] | None = None,
    ) -> None:
        self._console = console
        self._clock = clock
        self._players = players or list
        self._output_of = output_of
        self._seen: dict[int, int] = {}

    def _time_of_day(self) -> str:
        """The time of day, in local time for a person."""
        return self._clock.now().astimezone().strftime("%H:%M:%S")

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        """Attention drops are worth showing; routing drops are noise."""
        if stage in QUIET_STAGES:
            return
        self._console.print(
            f"[dim]{self._time_of_day()}[/] {describe_trigger(trigger)}\n"
            f"          [yellow]✗ {escape(storyteller.name)}[/]: {stage} — {escape(reason)}"
        )

    def judged(self, storyteller: Storyteller, trigger: Trigger, verdict: Verdict) -> None:
        """Only interested verdicts here; ignores are shown as drops."""
        if verdict.interested and not verdict.violation:
            self._console.print(
                f"[dim]{self._time_of_day()}[/] {describe_trigger(trigger)}\n"
                f"          [green]✓ {escape(storyteller.name)}[/]: interested — "
                f"{escape(_short(verdict.reason, 100))}"
            )

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        """Remember what every player had seen, to show the turn's effect afterwards."""
        if self._output_of is not None:
            for pid, _ in self._players():
                self._seen[pid] = len(self._output_of(pid))
        if not trigger.needs_attention:
            self._console.print(f"[dim]{self._time_of_day()}[/] {describe_trigger(trigger)}")

    def turn_finished(
        self, storyteller: Storyteller, trigger: Trigger, outcome: TurnOutcome | None
    ) -> None:
        """Tool calls with their results, then what players saw."""
        if outcome is None:
            self._console.print("          [red]turn crashed[/] (see the log)")
            return
        for call in getattr(outcome, "calls", []):
            envelope = call.envelope
            mark = "[green]ok[/]" if envelope.get("ok") else "[red]error[/]"
            shown = envelope.get("result") if envelope.get("ok") else envelope.get("error")
            flag = " (skipped)" if call.skipped else " (refused)" if call.refused else ""
            self._console.print(
                f"          → {escape(call.name)}({escape(_short(call.arguments, 80))}) "
                f"{mark}{flag}: {escape(_short(shown, 80))}"
            )
        rounds = getattr(outcome, "rounds", 0)
        ending = OUTCOME_WORDS.get(str(outcome.outcome), str(outcome.outcome))
        self._console.print(f"          [cyan]turn over: {ending}[/] ({rounds} model request(s))")
        if self._output_of is None:
            return
        for pid, who in self._players():
            for line in self._output_of(pid)[self._seen.get(pid, 0) :]:
                self._console.print(f"          [magenta]{escape(who)} sees:[/] {escape(line)}")
