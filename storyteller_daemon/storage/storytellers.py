"""Storyteller settings: load and save whole `Storyteller` objects, one transaction each."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.mcp import McpGrant, validate_grants
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.storytellers import (
    CustomTool,
    EventKind,
    Heartbeat,
    ReasoningEffort,
    Storyteller,
)
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.direction_codec import direction_from_json, direction_to_json
from storyteller_daemon.storage.models.base import Base
from storyteller_daemon.storage.models.storytellers import (
    CustomToolParameterRow,
    CustomToolRow,
    StorytellerRow,
    SurveillanceRow,
)


def as_utc(value: datetime) -> datetime:
    """SQLite returns naive datetimes; every stored time is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _effort(value: str | None) -> ReasoningEffort | None:
    return ReasoningEffort.parse_lenient(value)


def rules_to_json(rules: tuple[AttentionRule, ...]) -> str:
    """Attention rules as the JSON array stored on the storyteller row, in their order."""
    return json.dumps(
        [
            {
                "name": r.name,
                "action": r.action.value,
                "kinds": sorted(r.kinds),
                "rooms": sorted(r.rooms),
                "pattern": r.pattern,
                "cooldown_ms": round(r.cooldown / timedelta(milliseconds=1)),
            }
            for r in rules
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def rules_from_json(text: str | None) -> tuple[AttentionRule, ...]:
    """The stored attention rules.

    An entry that no longer reads as a valid rule (a hand-edited row, a kind since retired) is
    left out rather than failing every read of the storyteller: the events it would have
    settled go to the attention model, so no event is hidden by a rule nobody can see.
    """
    try:
        entries = json.loads(text or "[]")
    except ValueError:
        return ()
    rules: list[AttentionRule] = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            rules.append(
                AttentionRule(
                    name=entry["name"],
                    action=RuleAction(entry["action"]),
                    kinds=frozenset(entry.get("kinds", ())),
                    rooms=frozenset(int(room) for room in entry.get("rooms", ())),
                    pattern=entry.get("pattern", ""),
                    cooldown=timedelta(milliseconds=entry.get("cooldown_ms", 0)),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            continue
    return tuple(rules)


def grants_to_json(grants: tuple[McpGrant, ...]) -> str:
    """MCP grants as the JSON array stored on the storyteller row, in their order."""
    return json.dumps(
        [{"server": g.server, "tools": list(g.tools)} for g in grants],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def grants_from_json(text: str | None) -> tuple[McpGrant, ...]:
    """The stored MCP grants; an entry that no longer reads as a grant is left out (its tools
    are then not offered, which is the safe side of a hand-edited row)."""
    try:
        entries = json.loads(text or "[]")
    except ValueError:
        return ()
    grants: list[McpGrant] = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            grant = McpGrant(entry["server"], tuple(str(t) for t in entry.get("tools", ())))
        except (KeyError, TypeError, ValidationError, AttributeError):
            continue
        if all(g.server != grant.server for g in grants):
            grants.append(grant)
    return tuple(grants)


def to_domain(row: StorytellerRow | SimpleNamespace) -> Storyteller:
    """Translate a row (with its surveillance and tools loaded) to a `Storyteller`; `list`
    hands over plain rows with the same attributes (`_plain_rows`)."""
    subs = {
        EventKind.ROOM: row.subscribe_room,
        EventKind.SPEECH: row.subscribe_speech,
        EventKind.CRIME: row.subscribe_crime,
        EventKind.STATE: row.subscribe_state,
    }
    beats = {
        Heartbeat.FIVE_MINUTES: (row.heartbeat_5m, row.status_prog_5m),
        Heartbeat.TEN_MINUTES: (row.heartbeat_10m, row.status_prog_10m),
        Heartbeat.THIRTY_MINUTES: (row.heartbeat_30m, row.status_prog_30m),
        Heartbeat.HOUR: (row.heartbeat_1h, row.status_prog_1h),
    }
    by_kind: dict[str, set[int]] = {"zone": set(), "include": set(), "exclude": set()}
    for s in row.surveillance:
        by_kind[s.kind].add(s.target_id)
    tools = tuple(
        CustomTool(
            name=t.name,
            description=t.description,
            prog=t.prog,
            echo_only=t.echo_only,
            parameter_descriptions=tuple((p.name, p.description) for p in t.parameters),
            parameter_types=tuple((p.name, p.type_name) for p in t.parameters if p.type_name),
            return_type=t.return_type,
            dictated=t.dictated,
        )
        for t in sorted(row.tools, key=lambda t: t.name_key)
    )
    return Storyteller(
        id=row.id,
        name=row.name,
        description=row.description,
        model=row.model,
        time_model=row.time_model,
        attention_model=row.attention_model,
        reasoning_effort=_effort(row.reasoning_effort),
        time_reasoning_effort=_effort(row.time_reasoning_effort),
        attention_reasoning_effort=_effort(row.attention_reasoning_effort),
        system_prompt=row.system_prompt,
        time_system_prompt=row.time_system_prompt,
        attention_prompt=row.attention_prompt,
        subscriptions=frozenset(k for k, on in subs.items() if on),
        heartbeats=frozenset(h for h, (on, _) in beats.items() if on),
        status_progs=tuple((h, prog) for h, (_, prog) in beats.items() if prog),
        player_info_prog=row.player_info_prog,
        paused=row.paused,
        speech_context_count=row.speech_context_count,
        speech_context_window=timedelta(milliseconds=row.speech_context_window_ms),
        custom_tools=tools,
        surveillance=Surveillance(
            zones=frozenset(by_kind["zone"]),
            included=frozenset(by_kind["include"]),
            excluded=frozenset(by_kind["exclude"]),
        ),
        attention_rules=rules_from_json(row.attention_rules),
        mcp_grants=grants_from_json(row.mcp_grants),
        direction=direction_from_json(row.direction),
        daily_budget_usd=row.daily_budget_usd,
        written_for=row.written_for,
        revision=row.revision,
        created_on=as_utc(row.created_on),
    )


async def _plain_rows(session: AsyncSession) -> list[SimpleNamespace]:
    """Every storyteller row with its surveillance and tools (their parameters in order), as
    plain namespaces carrying the attributes `to_domain` reads."""

    async def table(model: type[Base], *order: InstrumentedAttribute[int]) -> list[SimpleNamespace]:
        query = select(model.__table__).order_by(*order)
        return [SimpleNamespace(**r._mapping) for r in await session.execute(query)]

    parameters: defaultdict[int, list[SimpleNamespace]] = defaultdict(list)
    for p in await table(CustomToolParameterRow, CustomToolParameterRow.position):
        parameters[p.tool_id].append(p)
    tools: defaultdict[int, list[SimpleNamespace]] = defaultdict(list)
    for t in await table(CustomToolRow, CustomToolRow.id):
        t.parameters = parameters[t.id]
        tools[t.storyteller_id].append(t)
    watched: defaultdict[int, list[SimpleNamespace]] = defaultdict(list)
    for w in await table(SurveillanceRow):
        watched[w.storyteller_id].append(w)
    rows = await table(StorytellerRow, StorytellerRow.id)
    for row in rows:
        row.surveillance, row.tools = watched[row.id], tools[row.id]
    return rows


def apply_to_row(row: StorytellerRow, st: Storyteller) -> None:
    """Copy every setting of `st` onto `row`, replacing surveillance, tools and rules."""
    row.name = st.name.strip()
    row.name_key = name_key(st.name)
    row.description = st.description
    row.model = st.model
    row.time_model = st.time_model
    row.attention_model = st.attention_model
    row.reasoning_effort = st.reasoning_effort.code if st.reasoning_effort else None
    row.time_reasoning_effort = st.time_reasoning_effort.code if st.time_reasoning_effort else None
    row.attention_reasoning_effort = (
        st.attention_reasoning_effort.code if st.attention_reasoning_effort else None
    )
    row.system_prompt = st.system_prompt
    row.time_system_prompt = st.time_system_prompt
    row.attention_prompt = st.attention_prompt
    row.subscribe_room = EventKind.ROOM in st.subscriptions
    row.subscribe_speech = EventKind.SPEECH in st.subscriptions
    row.subscribe_crime = EventKind.CRIME in st.subscriptions
    row.subscribe_state = EventKind.STATE in st.subscriptions
    row.heartbeat_5m = Heartbeat.FIVE_MINUTES in st.heartbeats
    row.heartbeat_10m = Heartbeat.TEN_MINUTES in st.heartbeats
    row.heartbeat_30m = Heartbeat.THIRTY_MINUTES in st.heartbeats
    row.heartbeat_1h = Heartbeat.HOUR in st.heartbeats
    row.status_prog_5m = st.status_prog(Heartbeat.FIVE_MINUTES)
    row.status_prog_10m = st.status_prog(Heartbeat.TEN_MINUTES)
    row.status_prog_30m = st.status_prog(Heartbeat.THIRTY_MINUTES)
    row.status_prog_1h = st.status_prog(Heartbeat.HOUR)
    row.player_info_prog = st.player_info_prog
    row.paused = st.paused
    row.speech_context_count = st.speech_context_count
    row.speech_context_window_ms = int(st.speech_context_window / timedelta(milliseconds=1))
    rule_names = [r.name for r in st.attention_rules]
    if len(set(rule_names)) != len(rule_names):
        raise ValidationError("Two attention rules share a name; rule names must be unique.")
    row.attention_rules = rules_to_json(st.attention_rules)
    row.mcp_grants = grants_to_json(validate_grants(st.mcp_grants))
    row.direction = direction_to_json(st.direction)
    row.daily_budget_usd = st.daily_budget_usd
    row.written_for = st.written_for

    wanted = (
        {("zone", z) for z in st.surveillance.zones}
        | {("include", c) for c in st.surveillance.included}
        | {("exclude", c) for c in st.surveillance.excluded}
    )
    row.surveillance = [s for s in row.surveillance if (s.kind, s.target_id) in wanted]
    have = {(s.kind, s.target_id) for s in row.surveillance}
    row.surveillance.extend(SurveillanceRow(kind=k, target_id=t) for k, t in sorted(wanted - have))

    existing = {t.name_key: t for t in row.tools}
    keys = [name_key(t.name) for t in st.custom_tools]
    if len(set(keys)) != len(keys):
        raise ValidationError("Two custom tools share a name; tool names must be unique.")
    new_tools: list[CustomToolRow] = []
    for tool in st.custom_tools:
        trow = existing.get(name_key(tool.name)) or CustomToolRow()
        trow.name, trow.name_key = tool.name, name_key(tool.name)
        trow.description, trow.prog, trow.echo_only = tool.description, tool.prog, tool.echo_only
        trow.return_type, trow.dictated = tool.return_type, tool.dictated
        types = dict(tool.parameter_types)
        params = {p.name: p for p in trow.parameters}
        trow.parameters = []
        for pos, (pname, pdesc) in enumerate(tool.parameter_descriptions):
            prow = params.get(pname) or CustomToolParameterRow(name=pname)
            prow.position, prow.description = pos, pdesc
            prow.type_name = types.get(pname)
            trow.parameters.append(prow)
        new_tools.append(trow)
    row.tools = new_tools


class StorytellerRepository:
    """Create, find, change, clone and delete storytellers."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    @staticmethod
    async def _find(session: AsyncSession, ref: str | int) -> StorytellerRow:
        text = str(ref).strip()
        row: StorytellerRow | None = None
        if text.isdigit():
            row = await session.get(StorytellerRow, int(text))
        if row is None:
            row = (
                await session.execute(
                    select(StorytellerRow).where(StorytellerRow.name_key == name_key(text))
                )
            ).scalar_one_or_none()
        if row is None:
            raise NotFoundError(f"No storyteller with id or name '{text}' exists.")
        return row

    @staticmethod
    async def _check_name_free(session: AsyncSession, name: str, own_id: int | None) -> None:
        if not name.strip():
            raise ValidationError("A storyteller needs a non-blank name.")
        clash = (
            await session.execute(
                select(StorytellerRow.id).where(StorytellerRow.name_key == name_key(name))
            )
        ).scalar_one_or_none()
        if clash is not None and clash != own_id:
            raise ConflictError(f"A storyteller named '{name.strip()}' already exists.")

    async def create(self, name: str, template: Storyteller | None = None) -> Storyteller:
        """Insert a new storyteller (paused, defaults unless `template` gives settings)."""
        st = replace(template, name=name) if template else Storyteller(name=name)
        async with self._db.session() as session:
            await self._check_name_free(session, name, None)
            now = self._clock.now()
            row = StorytellerRow(created_on=now, updated_on=now, revision=1)
            row.surveillance, row.tools = [], []
            apply_to_row(row, st)
            session.add(row)
            await session.flush()
            return to_domain(row)

    async def get(self, ref: str | int) -> Storyteller:
        """A storyteller by id or name (case-insensitive)."""
        async with self._db.session() as session:
            return to_domain(await self._find(session, ref))

    async def list(self) -> list[Storyteller]:
        """Every storyteller, by id (read as plain rows: a daemon of a thousand storytellers
        reads them at start-up without building some sixteen thousand ORM objects)."""
        async with self._db.session() as session:
            return [to_domain(row) for row in await _plain_rows(session)]

    async def save(self, st: Storyteller) -> Storyteller:
        """Write every setting of an existing storyteller and bump its revision.

        The write is refused when the row changed since `st` was read (its revision moved on),
        so two admins editing at once cannot silently undo each other's change.
        """
        if st.id is None:
            raise ValidationError("Cannot save a storyteller that was never created.")
        async with self._db.session() as session:
            row = await self._find(session, st.id)
            if st.revision and st.revision != row.revision:
                raise ConflictError(
                    f"Storyteller '{row.name}' was changed by someone else since it was read "
                    f"(revision {st.revision}, now {row.revision}); read it again and retry."
                )
            await self._check_name_free(session, st.name, row.id)
            apply_to_row(row, st)
            row.revision += 1
            row.updated_on = self._clock.now()
            await session.flush()
            return to_domain(row)

    async def delete(self, ref: str | int) -> Storyteller:
        """Delete a storyteller with its situations, memories and tools."""
        async with self._db.session() as session:
            row = await self._find(session, ref)
            gone = to_domain(row)
            await session.execute(delete(StorytellerRow).where(StorytellerRow.id == row.id))
            return gone

    async def clone(self, ref: str | int, new_name: str) -> Storyteller:
        """A paused copy of every setting (not situations or memories) under a new name."""
        source = await self.get(ref)
        return await self.create(new_name, template=replace(source, id=None, paused=True))

    async def revisions(self) -> dict[int, int]:
        """Id → revision of every storyteller, for noticing changes cheaply."""
        async with self._db.session() as session:
            rows = await session.execute(select(StorytellerRow.id, StorytellerRow.revision))
            return dict(rows.all())

    async def count(self) -> int:
        """How many storytellers exist."""
        async with self._db.session() as session:
            return int((await session.execute(select(func.count(StorytellerRow.id)))).scalar_one())
