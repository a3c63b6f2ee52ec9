"""The report of `runs compare`: the change, each compared turn's two sides, and the totals.

`compare.Comparer` fills it in; ``to_dict`` is the ``--json`` shape (docs/json.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from storyteller_daemon.agent.models.interface import Model, Usage
from storyteller_daemon.agent.records import usage_dict
from storyteller_daemon.domain.storytellers import ReasoningEffort, Storyteller
from storyteller_daemon.runs.rejudge import Flip


@dataclass(frozen=True)
class Change:
    """What is changed: the model asked, the reasoning effort sent, the system prompt.

    Attributes:
        model: every request is sent under this model name (None: each as recorded today).
        effort: every request is sent with this reasoning effort (None: the storyteller's).
        prompt: the system prompt of every compared turn (None: the storyteller's own);
            heartbeats use it too, instead of a separate time system prompt.
        prompt_file: where `prompt` was read from, for the report.
    """

    model: str | None = None
    effort: ReasoningEffort | None = None
    prompt: str | None = None
    prompt_file: str | None = None

    def apply(self, storyteller: Storyteller) -> Storyteller:
        """The storyteller's settings with the change: one model and one effort for turns,
        heartbeats and attention alike, and the changed prompt."""
        changed = storyteller
        if self.model is not None:
            model = self.model
            changed = replace(changed, model=model, time_model=model, attention_model=model)
        if self.effort is not None:
            effort = self.effort
            changed = replace(
                changed,
                reasoning_effort=effort,
                time_reasoning_effort=effort,
                attention_reasoning_effort=effort,
            )
        if self.prompt is not None:
            changed = replace(changed, system_prompt=self.prompt, time_system_prompt=None)
        return changed

    def asking(self, model: Model) -> str:
        """What is asked: `model`'s name, with the changed model and effort."""
        parts = [model.name]
        parts += [f"as {self.model}"] if self.model else []
        parts += [f"at {self.effort.value} effort"] if self.effort else []
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "model": self.model,
            "effort": self.effort.value if self.effort is not None else None,
            "prompt_file": self.prompt_file,
        }


@dataclass
class Side:
    """One side of a turn's comparison: the recording, or the run under the change."""

    calls: list[str] = field(default_factory=list)
    refused: int = 0
    outcome: str = ""
    usage: Usage = field(default_factory=Usage)
    usd: float = 0.0

    @property
    def tokens(self) -> int:
        """Input and output tokens."""
        return self.usage.input_tokens + self.usage.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "outcome": self.outcome,
            "calls": list(self.calls),
            "refused": self.refused,
            "usage": usage_dict(self.usage),
            "tokens": self.tokens,
            "usd": self.usd,
        }


@dataclass
class TurnComparison:
    """One recorded turn before and after the change.

    Attributes:
        note: why the after side is empty or partial (the replay failed; a request failed).
    """

    run_id: int
    kind: str
    storyteller: str
    trigger: str
    before: Side
    after: Side
    flips: list[Flip] = field(default_factory=list)
    note: str = ""

    @property
    def added(self) -> Counter[str]:
        """Calls the change makes that the recording did not, by tool."""
        return Counter(self.after.calls) - Counter(self.before.calls)

    @property
    def removed(self) -> Counter[str]:
        """Calls the recording made that the change does not, by tool."""
        return Counter(self.before.calls) - Counter(self.after.calls)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "storyteller": self.storyteller,
            "trigger": self.trigger,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "added": dict(sorted(self.added.items())),
            "removed": dict(sorted(self.removed.items())),
            "flips": [f.to_dict() for f in self.flips],
            "note": self.note,
        }


@dataclass
class Comparison:
    """Every compared turn and the totals.

    Attributes:
        unpriced: models asked or recorded that the price table does not list (their requests
            count $0, so the USD columns understate them).
    """

    change: Change
    model: str
    likely_cost_usd: float
    turns: list[TurnComparison] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)

    def total(self, side: str) -> Side:
        """The sum of one side (``before`` or ``after``) over every turn."""
        total = Side()
        for turn in self.turns:
            part: Side = getattr(turn, side)
            total.calls += part.calls
            total.refused += part.refused
            total.usage = total.usage + part.usage
            total.usd += part.usd
        return total

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with stable keys."""
        added: Counter[str] = sum((t.added for t in self.turns), Counter())
        removed: Counter[str] = sum((t.removed for t in self.turns), Counter())
        before, after = self.total("before"), self.total("after")
        return {
            "change": self.change.to_dict(),
            "model": self.model,
            "likely_cost_usd": self.likely_cost_usd,
            "turns": [t.to_dict() for t in self.turns],
            "total": {
                "turns": len(self.turns),
                "added": dict(sorted(added.items())),
                "removed": dict(sorted(removed.items())),
                "flips": sum(len(t.flips) for t in self.turns),
                "refused": {"before": before.refused, "after": after.refused},
                "tokens": {"before": before.tokens, "after": after.tokens},
                "usd": {"before": before.usd, "after": after.usd},
            },
            "unpriced": list(self.unpriced),
        }
