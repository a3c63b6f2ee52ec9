"""A storyteller's direction settings as the JSON object stored on its row (``direction``)."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from storyteller_daemon.domain.direction import (
    ContextProvider,
    Direction,
    Pacing,
    ProviderKind,
)
from storyteller_daemon.errors import ValidationError


def direction_to_json(direction: Direction) -> str:
    """The settings as compact JSON (the pacing at its full width, providers in order)."""
    return json.dumps(
        {
            "plans": direction.plans,
            "cooperates": direction.cooperates,
            "pacing": asdict(direction.pacing),
            "providers": [
                {
                    "name": p.name,
                    "kind": p.kind.value,
                    "budget_tokens": p.budget_tokens,
                    "source": p.source,
                }
                for p in direction.providers
            ],
        },  # fmt: skip
        ensure_ascii=False,
        separators=(",", ":"),
    )


def direction_from_json(text: str | None) -> Direction:
    """The stored settings.

    What no longer reads as a setting (a hand-edited row, a retired key) is left out rather
    than failing every read of the storyteller: an unreadable pacing falls back to no limits
    beyond the policy's, an unreadable provider is not offered.
    """
    try:
        data = json.loads(text or "{}")
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    pacing = Pacing()
    raw = data.get("pacing")
    if isinstance(raw, dict):
        known = {f.name for f in fields(Pacing)}
        try:
            pacing = Pacing(**{k: v for k, v in raw.items() if k in known})
        except (TypeError, ValidationError):
            pacing = Pacing()
    providers: list[ContextProvider] = []
    for entry in data.get("providers") or ():
        provider = _provider(entry)
        if provider is not None and all(p.name != provider.name for p in providers):
            providers.append(provider)
    try:
        return Direction(
            plans=bool(data.get("plans", False)),
            cooperates=bool(data.get("cooperates", False)),
            pacing=pacing,
            providers=tuple(providers),
        )
    except ValidationError:
        return Direction(
            bool(data.get("plans", False)), bool(data.get("cooperates", False)), pacing
        )


def _provider(entry: Any) -> ContextProvider | None:
    try:
        return ContextProvider(
            name=str(entry["name"]),
            kind=ProviderKind.parse(str(entry["kind"])),
            budget_tokens=int(entry.get("budget_tokens", 300)),
            source=str(entry.get("source", "")),
        )
    except (KeyError, TypeError, ValueError, AttributeError, ValidationError):
        return None
