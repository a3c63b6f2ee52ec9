"""Reading the dashboard's query strings and forms: bad input is one clear 400 line."""

from __future__ import annotations

from aiohttp import web

from storyteller_daemon.errors import ValidationError
from storyteller_daemon.storage.dashboard_queries import RunFilter

RUN_KINDS = ("attention", "turn")


def optional_int(request: web.Request, name: str) -> int | None:
    """The query parameter `name` as a whole number, None when absent or empty.

    Raises:
        ValidationError: it is not a whole number.
    """
    text = request.query.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"'{name}' must be a whole number, not {text!r}.") from None


def bounded_int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    """The query parameter `name` within [low, high], `default` when absent.

    Raises:
        ValidationError: it is not a whole number in range.
    """
    value = optional_int(request, name)
    if value is None:
        return default
    if not low <= value <= high:
        raise ValidationError(f"'{name}' must be between {low} and {high}, not {value}.")
    return value


def text(request: web.Request, name: str, *, limit: int = 200) -> str:
    """The query parameter `name` trimmed ("" when absent).

    Raises:
        ValidationError: it is longer than `limit`.
    """
    value = request.query.get(name, "").strip()
    if len(value) > limit:
        raise ValidationError(f"'{name}' is longer than {limit} characters.")
    return value


def run_filter(request: web.Request) -> RunFilter:
    """The run filters of a timeline or run list: storyteller, room, kind, outcome, run.

    Raises:
        ValidationError: a number is not one, or ``run`` is not a run kind.
    """
    run_kind = text(request, "run") or None
    if run_kind is not None and run_kind not in RUN_KINDS:
        raise ValidationError(f"'run' must be one of {', '.join(RUN_KINDS)}, not {run_kind!r}.")
    return RunFilter(
        storyteller_id=optional_int(request, "storyteller"),
        room_id=optional_int(request, "room"),
        trigger_kind=text(request, "kind", limit=40) or None,
        outcome=text(request, "outcome", limit=40) or None,
        kind=run_kind,
    )


def filter_query(where: RunFilter) -> dict[str, str]:
    """The query string that gives `where` back (for links and the live stream)."""
    pairs = {
        "storyteller": where.storyteller_id,
        "room": where.room_id,
        "kind": where.trigger_kind,
        "outcome": where.outcome,
        "run": where.kind,
    }
    return {k: str(v) for k, v in pairs.items() if v is not None}
