"""How ``ais show`` and ``ais set REF budget`` report a storyteller's daily budget."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from storyteller_daemon.cli.support import say
from storyteller_daemon.domain.storytellers import Storyteller

if TYPE_CHECKING:  # `storyteller --help` imports no heavy library: the config's come lazily
    from storyteller_daemon.config import BudgetsConfig


def _usd(cap: float) -> str:
    return f"${cap:.2f} a day" if cap else "no cap"


def _cap(cfg: BudgetsConfig, st: Storyteller) -> float:
    from storyteller_daemon.runtime.spending.budgets import daily_cap

    return daily_cap(cfg, st)


def budget_line(st: Storyteller, cfg: BudgetsConfig) -> str:
    """How the daily budget reads in ``ais show`` and in the confirmation of ``set budget``."""
    cap = _usd(_cap(cfg, st))
    if st.daily_budget_usd is None:
        return f"{cap} (from the configuration)"
    return f"{cap} (its own setting; 'ais set {st.id} budget default' returns to the configuration)"


def budget_json(st: Storyteller, cfg: BudgetsConfig) -> dict[str, Any]:
    """``ais show --json``'s ``budget``: the cap that applies and the stored setting."""
    return {"daily_usd": _cap(cfg, st), "setting": st.daily_budget_usd}


def show_budget(st: Storyteller, cfg: BudgetsConfig) -> None:
    """The ``Daily budget:`` line of ``ais show``."""
    say(f"Daily budget: {budget_line(st, cfg)}")
