"""Who is trying what: the policy's refusals of stored turns, by rule, tool, storyteller and the
character whose words or actions started the turn (``storyteller policy report``, the
dashboard's policy page).

Read from the run records, so it covers what the daemon kept (`[runs]` retention), across
restarts; a call parked for approval is counted apart from the refusals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storyteller_daemon.agent.policy_rules import player_of
from storyteller_daemon.runs.tape import decode_trigger
from storyteller_daemon.storage.runs import StoredRun

NO_CHARACTER = "none"
"""The character key of turns no character started (heartbeats, direct invocations, state)."""


@dataclass
class RefusalReport:
    """Refused calls counted four ways, and calls parked for approval.

    Attributes:
        since: the earliest run read (None: every run kept).
        turns: the turns read.
        by_character_rule: character → rule → refusals (who is trying what).
    """

    since: datetime | None = None
    turns: int = 0
    refused: int = 0
    parked: int = 0
    by_rule: Counter[str] = field(default_factory=Counter)
    by_tool: Counter[str] = field(default_factory=Counter)
    by_storyteller: Counter[str] = field(default_factory=Counter)
    by_character: Counter[str] = field(default_factory=Counter)
    by_character_rule: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, run: StoredRun) -> None:
        """Count the refused and parked calls of one stored turn."""
        self.turns += 1
        record = run.record
        calls = (record.get("turn") or {}).get("calls") or []
        character = _character(record)
        for call in calls:
            if call.get("parked"):
                self.parked += 1
            if not call.get("refused"):
                continue
            rule = str(call.get("rule") or "not_offered")
            self.refused += 1
            self.by_rule[rule] += 1
            self.by_tool[str(call.get("name"))] += 1
            self.by_storyteller[run.summary.storyteller_name] += 1
            self.by_character[character] += 1
            self.by_character_rule.setdefault(character, Counter())[rule] += 1

    def to_json(self) -> dict[str, Any]:
        """The report with stable keys, each count largest first."""
        return {
            "since": self.since.isoformat() if self.since is not None else None,
            "turns": self.turns,
            "refused": self.refused,
            "parked": self.parked,
            "by_rule": dict(self.by_rule.most_common()),
            "by_tool": dict(self.by_tool.most_common()),
            "by_storyteller": dict(self.by_storyteller.most_common()),
            "by_character": {
                name: {"refused": count, "rules": dict(self.by_character_rule[name].most_common())}
                for name, count in self.by_character.most_common()
            },
        }


def refusal_report(runs: Iterable[StoredRun], since: datetime | None = None) -> RefusalReport:
    """The report of these stored turns."""
    report = RefusalReport(since=since)
    for run in runs:
        report.add(run)
    return report


def _character(record: dict[str, Any]) -> str:
    """``#ID`` of the character whose words or actions started the turn, or `NO_CHARACTER`."""
    data = record.get("trigger")
    if not isinstance(data, dict) or "occurred_at" not in data:
        return NO_CHARACTER
    try:
        player = player_of(decode_trigger(data))
    except (KeyError, ValueError, TypeError):
        return NO_CHARACTER
    return f"#{player}" if player is not None else NO_CHARACTER
