"""The tools the daemon's own MCP server offers: read-only searches of the storytellers' runs,
memories, situations, decisions and costs, and the admin tools (pause, resume, set a daily
budget) offered only to a session allowed them (`admin_refusal`).

Each tool is a `ToolDef`: its JSON schema and the handler that answers it over `Documents`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from storyteller_daemon.config import McpServeConfig
from storyteller_daemon.domain.storytellers import validate_daily_budget
from storyteller_daemon.mcp.documents import SCHEME, Documents, run_json

log = logging.getLogger("storyteller_daemon.mcp.server")  # the admin actions are the server's log

Handler = Callable[[Documents, dict[str, Any]], Awaitable[dict[str, Any]]]

_STORYTELLER = {"type": "string", "description": "Storyteller id or name."}
_QUERY = {"type": "string", "description": "Words that must all appear (any case); '' for all."}
_LIMIT = {"type": "integer", "minimum": 1, "description": "At most this many (capped)."}


@dataclass(frozen=True)
class ToolDef:
    """One tool of the server: its schema and what answers it."""

    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    handler: Handler
    admin: bool = False
    nullable: tuple[str, ...] = ()
    """Required arguments that may be null (they must still be given)."""

    def missing(self, arguments: dict[str, Any]) -> list[str]:
        """The required arguments not given (or blank, or null where null means nothing)."""
        return [
            k
            for k in self.required
            if k not in arguments
            or arguments[k] == ""
            or (arguments[k] is None and k not in self.nullable)
        ]


async def _list_runs(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    if ref := args.get("storyteller"):
        filters["storyteller_id"] = (await docs.storyteller(ref)).id
    for key in ("outcome", "kind"):
        if args.get(key):
            filters[key] = args[key]
    runs = await docs.recent_runs(args.get("limit"), **filters)
    return {"runs": [run_json(r) for r in runs]}


async def _search_memories(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    st = await docs.storyteller(args["storyteller"])
    return await docs.memories(st, args.get("query") or "", character_id=args.get("character_id"))


async def _search_situations(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    st = await docs.storyteller(args["storyteller"])
    resolved = bool(args.get("include_resolved", True))
    return await docs.situations(st, args.get("query") or "", include_resolved=resolved)


async def _recent_decisions(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    return await docs.events(await docs.storyteller(args["storyteller"]), args.get("limit"))


async def _costs(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    return await docs.costs(args.get("by") or "storyteller", int(args.get("days") or 30))


async def _read(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    return await docs.read(str(args["uri"]))


def _pausing(paused: bool) -> Handler:
    async def change(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
        st = await docs.storyteller(args["storyteller"])
        saved = await docs.save(replace(st, paused=paused))
        await docs.audit("pause" if paused else "resume", f"storyteller {saved.id}")
        log.warning(
            "MCP admin action: storyteller %s %s", saved.name, "paused" if paused else "resumed"
        )
        return {"storyteller": saved.name, "paused": saved.paused, "revision": saved.revision}

    return change


async def _set_budget(docs: Documents, args: dict[str, Any]) -> dict[str, Any]:
    usd = args["daily_usd"]
    value = None if usd is None else validate_daily_budget(usd)
    st = await docs.storyteller(args["storyteller"])
    saved = await docs.save(replace(st, daily_budget_usd=value))
    await docs.audit("set_budget", f"storyteller {saved.id}", {"daily_usd": value})
    shown = "the configuration's cap" if value is None else f"${value:.2f} a day (0: no cap)"
    log.warning("MCP admin action: storyteller %s daily budget set to %s", saved.name, shown)
    return {"storyteller": saved.name, "daily_usd": value, "revision": saved.revision}


TOOLS = (
    ToolDef(
        "list_runs",
        "The newest runs (turns and attention calls), optionally of one storyteller or outcome.",
        {
            "storyteller": _STORYTELLER,
            "outcome": {"type": "string", "description": "completed, noop, ignore, ..."},
            "kind": {"type": "string", "enum": ["turn", "attention"]},
            "limit": _LIMIT,
        },
        (),
        _list_runs,
    ),
    ToolDef(
        "search_memories",
        "A storyteller's character memories whose title or text holds every word of the query.",
        {"storyteller": _STORYTELLER, "query": _QUERY, "character_id": {"type": "integer"}},
        ("storyteller",),
        _search_memories,
    ),
    ToolDef(
        "search_situations",
        "A storyteller's situations whose title or text holds every word of the query.",
        {"storyteller": _STORYTELLER, "query": _QUERY, "include_resolved": {"type": "boolean"}},
        ("storyteller",),
        _search_situations,
    ),
    ToolDef(
        "recent_decisions",
        "A storyteller's newest events and what was decided about each (attended, ignored...).",
        {"storyteller": _STORYTELLER, "limit": _LIMIT},
        ("storyteller",),
        _recent_decisions,
    ),
    ToolDef(
        "costs",
        "Model spend: requests (and how many got no answer), tokens and USD of the last days, "
        "grouped.",
        {
            "by": {
                "type": "string",
                "enum": ["storyteller", "model", "day", "purpose", "status"],
            },
            "days": {"type": "integer", "minimum": 1, "maximum": 400},
        },
        (),
        _costs,
    ),
    ToolDef(
        "read",
        "Read one storyteller:// resource (for clients that do not read resources themselves).",
        {"uri": {"type": "string", "description": f"A resource URI, e.g. {SCHEME}runs/12."}},
        ("uri",),
        _read,
    ),
    ToolDef(
        "pause_storyteller",
        "Pause a storyteller: it stops judging events and taking turns until resumed.",
        {"storyteller": _STORYTELLER},
        ("storyteller",),
        _pausing(True),
        admin=True,
    ),
    ToolDef(
        "resume_storyteller",
        "Resume a paused storyteller.",
        {"storyteller": _STORYTELLER},
        ("storyteller",),
        _pausing(False),
        admin=True,
    ),
    ToolDef(
        "set_budget",
        "Set a storyteller's own daily budget in USD (0: no cap), which wins over the "
        "configuration's; null returns it to the configuration's cap. A running daemon applies "
        "it within seconds.",
        {
            "storyteller": _STORYTELLER,
            "daily_usd": {
                "type": ["number", "null"],
                "minimum": 0,
                "description": "USD a day, 0 for no cap, or null for the configuration's cap.",
            },
        },
        ("storyteller", "daily_usd"),
        _set_budget,
        admin=True,
        nullable=("daily_usd",),
    ),
)


def admin_refusal(cfg: McpServeConfig, token_held: bool) -> str | None:
    """Why admin tools are not offered to this session, or None when they are."""
    if not cfg.admin_actions:
        return "admin actions are disabled ([mcp.serve] admin_actions = false)"
    if not token_held:
        return f"admin actions need the token: set {cfg.token_env} in the server's environment"
    return None
