"""How ``ais show`` prints a storyteller's direction: plans, co-operation, pacing, providers."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from storyteller_daemon.cli.support import say, yes_no

if TYPE_CHECKING:
    from storyteller_daemon.domain.storytellers import Storyteller


def direction_json(st: Storyteller) -> dict[str, Any]:
    """Plans, co-operation, pacing and context providers (``ais show --json``)."""
    d = st.direction
    return {
        "plans": d.plans,
        "cooperates": d.cooperates,
        "pacing": asdict(d.pacing),
        "providers": [
            {
                "name": p.name,
                "kind": p.kind.value,
                "budget_tokens": p.budget_tokens,
                "source": p.source,
            }
            for p in d.providers
        ],  # fmt: skip
    }


def show_direction(st: Storyteller) -> None:
    """How the storyteller directs: plans, co-operation, pacing, context providers."""
    d = st.direction
    say(f"Plans: {yes_no(d.plans)}; co-operates with scene claims: {yes_no(d.cooperates)}")
    limits = [f"{k} {v}" for k, v in asdict(d.pacing).items() if v not in (0, 0.0, "")]
    say("Pacing: " + (", ".join(limits) if d.pacing.limited else "no limits of its own"))
    if not d.providers:
        say("Context providers: none (the digest takes its default share)")
        return
    say("Context providers (in order):")
    for number, p in enumerate(d.providers, 1):
        source = f": {p.source}" if p.source else ""
        say(f"  {number}. {p.name} ({p.kind.value}, {p.budget_tokens} tokens){source}")
