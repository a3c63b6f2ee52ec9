"""Kept eval results: how a storyteller's scenarios fared each time ``storyteller eval`` ran.

One `EvalResult` per scenario and evaluation; the evaluations of one storyteller over time are
its trend (`EvalRound`: how many of its scenarios passed each time), which the dashboard shows
beside the latest results.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class EvalResult:
    """One scenario of one evaluation.

    Attributes:
        pass_rate: the lowest pass rate of its expectations (1.0: every run held every one).
        passed: every expectation reached the evaluation's threshold (False when skipped).
        skipped: not run (it needs a language model and ran against the stand-in).
        tokens, usd, seconds: a run's mean.
    """

    storyteller: str
    pack: str
    scenario: str
    model: str
    evaluated_at: datetime
    runs: int
    threshold: float
    pass_rate: float
    passed: bool
    skipped: bool = False
    tokens: float = 0.0
    usd: float = 0.0
    seconds: float = 0.0


@dataclass(frozen=True)
class EvalRound:
    """One evaluation of a storyteller's scenarios: how many passed, failed and were skipped."""

    storyteller: str
    evaluated_at: datetime
    model: str
    passed: int
    failed: int
    skipped: int

    @property
    def share(self) -> float | None:
        """Passed of those run (None: none was run)."""
        ran = self.passed + self.failed
        return self.passed / ran if ran else None
