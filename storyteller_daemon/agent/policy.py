"""The policy point: every prog call a turn would make is checked here before it reaches the game.

The model reads text players wrote, so assume it does what that text asks. The limits that hold
are the ones the daemon enforces whatever the model says; each is a named rule:

* ``kill_switch``: ``[policy] kill_switch`` or the ``kill_file`` flag stops every prog call of
  every storyteller at once (attention and read-only tools go on);
* ``scope``: rooms a call names must be watched by the storyteller and, on a turn started by a
  world event, be a room of its events (``event_turn_scope``); characters it names must be
  named by the turn's events, or be in one of those rooms (on heartbeat and direct turns: in a
  watched room);
* ``turn_cap``, ``cooldown``, ``hourly_cap``, ``storyteller_cap``: at most
  ``max_prog_calls_per_turn`` prog calls in a turn, the same tool on the same room or character
  once per ``target_cooldown_seconds`` (``tool_cooldown_seconds`` per tool),
  ``max_prog_calls_per_hour`` prog calls of all storytellers together, and per storyteller
  ``max_prog_calls_per_storyteller_per_hour`` and ``..._per_day``; the calls these count are
  stored (`PolicyAction`), so the caps and cooldowns hold across a restart;
* ``secret``: no argument of any tool may carry one of the daemon's secrets (API key, bridge
  token, webhook URL);
* ``text_cap``: text passed to a prog is at most ``max_text_chars`` long.

A refusal is returned to the model as a tool error naming the rule, recorded with the call in
the run record and counted. Storytellers in ``shadow`` run their turns as usual, but their prog
calls are recorded as "would call" and answered with a simulated success: nothing reaches the
game. Calls matched by ``approve`` pass every rule above, then wait for an admin
(`storyteller_daemon.domain.approvals`).
"""

from __future__ import annotations

import logging
import re
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from progs.scalars import ID_KEYS, integer_value
from progs.types import ProgParameter, ProgType
from storyteller_daemon.agent.ports import ApprovalQueue
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import Approval, ParkedCall, PolicyAction
from storyteller_daemon.domain.settings import Storyteller
from world_adapter.errors import WorldCommandError
from world_adapter.facts import DoorRule, PathRule
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

Journal = Callable[[PolicyAction], Awaitable[None]]
"""Stores a prog call that ran, so the caps hold across a restart."""
HOUR_SECONDS = 3600.0
DAY_SECONDS = 86_400.0

KILL_SWITCH = "kill_switch"
SCOPE = "scope"
TURN_CAP = "turn_cap"
COOLDOWN = "cooldown"
HOURLY_CAP = "hourly_cap"
STORYTELLER_CAP = "storyteller_cap"
APPROVAL = "approval"
SECRET = "secret"  # noqa: S105 - the name of a rule
TEXT_CAP = "text_cap"
SHADOW = "shadow"
PLAYER_CAP = "player_cap"
NOT_OFFERED = "not_offered"
"""A call to a tool the turn does not offer (unknown, another profile's, echo-only, invalid)."""
DESTRUCTIVE_RULE = "destructive_by_trigger"
INSTRUCTIONS = "instructions"
_PUNCTUATION = re.compile(r"[^\w\s]")
MIN_INSTRUCTION_LINE = 40
"""Lines of a storyteller's prompts at least this long may not be sent out in a prog's text."""
MIN_SECRET_CHARS = 8
"""Shorter secrets are not looked for in arguments: they would match ordinary words."""
PLAYER_STARTED = frozenset({TriggerKind.ROOM_ECHO, TriggerKind.SPEECH, TriggerKind.CRIME})
"""Turns a player's words or actions start."""
DESTRUCTIVE_TOOLS = frozenset(
    {"ForgetMemory", "UpdateMemory", "ResolveSituation", "UpdateSituation"}
)
"""Built-ins that undo the storyteller's own records; not offered on turns a player can
start by speaking or emoting, unless ``destructive_on_player_turns``."""


@dataclass(frozen=True)
class Effect:
    """What a prog call would touch in the game: its rooms, characters and text arguments."""

    rooms: frozenset[int] = frozenset()
    characters: frozenset[int] = frozenset()
    texts: tuple[str, ...] = ()


def _ids(value: Any) -> list[int | None]:
    """The ids an argument holds (a collection gives several); None for one that is no id."""
    values = value if isinstance(value, list) else [value]
    found: list[int | None] = []
    for each in values:
        if each is None:
            continue
        if isinstance(each, Mapping):
            key = next((k for k in ID_KEYS if k in each), None)
            each = each[key] if key is not None else None
        found.append(integer_value(each))
    return found


def named(
    *, characters: Sequence[str] = (), rooms: Sequence[str] = ()
) -> Callable[[Mapping[str, Any]], Effect]:
    """The effect of a built-in tool whose arguments `characters` and `rooms` name targets."""

    def effect(arguments: Mapping[str, Any]) -> Effect:
        def ids(keys: Sequence[str]) -> frozenset[int]:
            found = (i for key in keys for i in _ids(arguments.get(key)))
            return frozenset(-1 if i is None else i for i in found)

        return Effect(ids(rooms), ids(characters))

    return effect


def prog_effect(parameters: Sequence[ProgParameter], arguments: Mapping[str, Any]) -> Effect:
    """The effect of calling a prog with these parameters with `arguments` (by name).

    A location or character argument that is not an id is counted as id -1, which no scope
    holds, so it is refused rather than overlooked.
    """
    rooms: set[int] = set()
    characters: set[int] = set()
    texts: list[str] = []
    by_name = {k.lower(): v for k, v in arguments.items()}
    for parameter in parameters:
        value = by_name.get(parameter.name.lower())
        element = parameter.type.element
        if element is ProgType.LOCATION:
            rooms.update(-1 if i is None else i for i in _ids(value))
        elif element is ProgType.CHARACTER:
            characters.update(-1 if i is None else i for i in _ids(value))
        elif element is ProgType.TEXT:
            values = value if isinstance(value, list) else [value]
            texts += [v for v in values if isinstance(v, str)]
    return Effect(frozenset(rooms), frozenset(characters), tuple(texts))


def strings_in(value: Any) -> Iterable[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


@dataclass(frozen=True)
class Decision:
    """The policy's answer about one call: allowed, shadowed, or refused by a named rule."""

    rule: str | None = None
    reason: str = ""
    shadow: bool = False

    @property
    def allowed(self) -> bool:
        """Whether the call may run (or, shadowed, be simulated)."""
        return self.rule is None or self.shadow

    def message(self) -> str:
        """The tool error the model sees."""
        return f"Refused by the storyteller's policy (rule {self.rule}): {self.reason}"


def refuse(rule: str, reason: str) -> Decision:
    """A refusal by `rule`."""
    return Decision(rule, reason)


@dataclass
class PolicyStats:
    """Refusals by rule, and calls simulated in shadow mode, since start."""

    refused: Counter[str] = field(default_factory=Counter)
    shadowed: int = 0


class Policy:
    """The policy point of one daemon.

    Args:
        cfg: the ``[policy]`` section.
        clock: monotonic seconds.
        secrets: the daemon's secrets (API key, bridge token, webhook URL...); blank and short
            values are ignored.
        cells_of: the rooms a storyteller watches, by id (empty: not known, not checked).
        kill_file: while this file exists, prog calls are stopped (`kill_file_path`).
        now: UTC wall time, for the calls `journal` stores and `restore` reads back.
        journal: stores each prog call that ran (none: the caps start over on restart).
        approvals: where calls matched by ``approve`` are parked (none: they are refused).
    """

    def __init__(
        self,
        cfg: PolicyConfig,
        clock: Callable[[], float],
        *,
        secrets: Iterable[str] = (),
        cells_of: Callable[[int], frozenset[int]] | None = None,
        kill_file: Path | None = None,
        now: Callable[[], datetime] | None = None,
        journal: Journal | None = None,
        approvals: ApprovalQueue | None = None,
    ) -> None:
        self.cfg = cfg
        self.kill_file = kill_file
        self._clock = clock
        self._now = now or (lambda: datetime.now(UTC))
        self._journal = journal
        self._approvals = approvals
        self._secrets = tuple(s for s in {s.strip() for s in secrets} if len(s) >= MIN_SECRET_CHARS)
        self._cells_of = cells_of
        self._recent: dict[tuple[int, str, str, int], float] = {}
        self._hour: deque[float] = deque()
        self._by_player: dict[int, deque[float]] = {}
        self._by_storyteller: dict[int, deque[float]] = {}
        self.stats = PolicyStats()

    def restore(self, actions: Iterable[PolicyAction], now: datetime) -> None:
        """Count prog calls that ran before a restart (oldest first), as `ran` would have."""
        offset = self._clock() - now.timestamp()
        for action in actions:
            self._count(action, action.at.timestamp() + offset)

    # ------------------------------------------------------------------ switches

    @property
    def killed(self) -> bool:
        """Whether the kill switch (setting or file flag) stops prog calls now."""
        return kill_switch_on(self.cfg, self.kill_file)

    def shadowed(self, storyteller: Storyteller, tool: str = "") -> bool:
        """Whether the storyteller's calls of `tool` are simulated instead of run."""
        return self.cfg.shadows(storyteller.name, tool)

    def needs_approval(self, storyteller: Storyteller, tool: str) -> bool:
        """Whether the storyteller's calls of `tool` wait for an admin's approval."""
        return self.cfg.needs_approval(storyteller.name, tool)

    async def park(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        tool: str,
        arguments: str,
        *,
        key: str,
        turn_key: str,
        effect: Effect,
    ) -> Approval | Decision:
        """Park a call that needs approval; a refusal when there is nowhere to park it."""
        assert storyteller.id is not None
        if self._approvals is None:
            return self._refused(
                storyteller, tool, refuse(APPROVAL, "this tool needs approval; none can be given")
            )
        now = self._now()
        rooms = sorted(effect.rooms - {-1})
        call = ParkedCall(
            key=key,
            storyteller_id=storyteller.id,
            tool=tool,
            arguments=arguments,
            turn_key=turn_key,
            trigger=trigger.label,
            room_id=rooms[0] if rooms else trigger.room_id,
            created_at=now,
            expires_at=now + timedelta(seconds=self.cfg.approval_expiry_seconds),
        )
        approval = await self._approvals.park(call)
        log.warning(
            "storyteller %s: %s parked for approval as #%d (storyteller policy approve %d)",
            storyteller.name,
            tool,
            approval.id,
            approval.id,
        )
        return approval

    def offers_destructive(self, storyteller: Storyteller, trigger: Trigger) -> bool:
        """Whether memory-changing and situation-changing tools are offered for `trigger`."""
        spoken = trigger.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH)
        return not spoken or self.cfg.destructive_for(storyteller.name)

    # ------------------------------------------------------------------ checks

    async def check_call(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        effect: Effect | None,
        names: Effect | None,
        world: WorldClient,
        calls_this_turn: int,
    ) -> Decision:
        """The decision about one tool call of a turn: allowed, shadowed, or refused by a rule.

        Args:
            effect: what a prog call would touch (None for a built-in).
            names: the rooms and characters a built-in names; held to the turn's scope only on
                turns a player's words or actions start (heartbeat and direct turns may look
                anywhere).
            calls_this_turn: prog calls of the turn that ran before this one.
        """
        decision = self._secret(arguments)
        if decision is None and effect is not None:
            decision = await self._prog_rules(
                storyteller, trigger, tool, effect, world, calls_this_turn
            )
        elif decision is None and names is not None and trigger.kind in PLAYER_STARTED:
            decision = await self._scope(storyteller, trigger, names, world, tool)
        if decision is not None:
            return self._refused(storyteller, tool, decision)
        if effect is not None and self.shadowed(storyteller, tool):
            self.stats.shadowed += 1
            return Decision(SHADOW, "shadow mode: recorded, not run", shadow=True)
        return Decision()

    def _secret(self, arguments: Mapping[str, Any]) -> Decision | None:
        """A refusal when any string of the arguments carries a secret of the daemon."""
        for text in strings_in(dict(arguments)):
            if any(secret in text for secret in self._secrets):
                return refuse(SECRET, "an argument carries a secret of the daemon")
        return None

    def _refused(self, storyteller: Storyteller, tool: str, decision: Decision) -> Decision:
        """Count and log a refusal (the alert watches the count), and return it."""
        self.stats.refused[decision.rule or SCOPE] += 1
        log.warning(
            "storyteller %s: policy refused %s (rule %s): %s",
            storyteller.name,
            tool,
            decision.rule,
            decision.reason,
        )
        return decision

    async def ran(
        self, storyteller: Storyteller, tool: str, effect: Effect, trigger: Trigger | None = None
    ) -> None:
        """Count a prog call that ran, for the cooldowns and caps, and store it."""
        assert storyteller.id is not None
        action = PolicyAction(
            storyteller_id=storyteller.id,
            tool=tool,
            at=self._now(),
            player_id=_player(trigger) if trigger is not None else None,
            rooms=effect.rooms,
            characters=effect.characters,
        )
        self._count(action, self._clock())
        if self._journal is not None:
            try:
                await self._journal(action)
            except Exception:  # the call ran; counting it in memory is what matters now
                log.exception("storyteller %s: could not store a prog call", storyteller.name)

    def _count(self, action: PolicyAction, at: float) -> None:
        self._hour.append(at)
        self._by_storyteller.setdefault(action.storyteller_id, deque()).append(at)
        if action.player_id is not None:
            self._by_player.setdefault(action.player_id, deque()).append(at)
        for kind, targets in (("room", action.rooms), ("character", action.characters)):
            for target in targets:
                key = (action.storyteller_id, action.tool.casefold(), kind, target)
                self._recent[key] = max(at, self._recent.get(key, at))

    async def _prog_rules(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        tool: str,
        effect: Effect,
        world: WorldClient,
        calls_this_turn: int,
    ) -> Decision | None:
        cfg = self.cfg
        if self.killed:
            return refuse(KILL_SWITCH, "the kill switch stops every prog call")
        for text in effect.texts:
            if len(text) > cfg.max_text_chars:
                return refuse(TEXT_CAP, f"a text is over {cfg.max_text_chars} characters")
            if _quotes_instructions(storyteller, text):
                return refuse(INSTRUCTIONS, "a text repeats the storyteller's own instructions")
        scope = await self._scope(storyteller, trigger, effect, world, tool)
        if scope is not None:
            return scope
        if calls_this_turn >= cfg.max_prog_calls_per_turn:
            return refuse(TURN_CAP, f"this turn already made {calls_this_turn} prog calls")
        now = self._clock()
        assert storyteller.id is not None
        cooldown = cfg.cooldown_for(tool)
        for kind, targets in (("room", effect.rooms), ("character", effect.characters)):
            for target in sorted(targets):
                last = self._recent.get((storyteller.id, tool.casefold(), kind, target))
                if last is not None and now - last < cooldown:
                    return refuse(
                        COOLDOWN,
                        f"{tool} acted on {kind} #{target} {now - last:.0f} s ago; "
                        f"once per {cooldown:g} s",
                    )
        if (count := _within(self._hour, now, HOUR_SECONDS)) >= cfg.max_prog_calls_per_hour:
            return refuse(HOURLY_CAP, f"{count} prog calls in the last hour")
        mine = self._by_storyteller.setdefault(storyteller.id, deque())
        if (count := _within(mine, now, DAY_SECONDS)) >= cfg.max_prog_calls_per_storyteller_per_day:
            return refuse(
                STORYTELLER_CAP, f"this storyteller made {count} prog calls in the last day"
            )
        hour = sum(1 for at in mine if now - at < HOUR_SECONDS)
        if hour >= cfg.max_prog_calls_per_storyteller_per_hour:
            return refuse(
                STORYTELLER_CAP, f"this storyteller made {hour} prog calls in the last hour"
            )
        player = _player(trigger)
        if player is None:
            return None
        recent = self._by_player.setdefault(player, deque())
        if (count := _within(recent, now, HOUR_SECONDS)) >= cfg.max_prog_calls_per_player_per_hour:
            return refuse(
                PLAYER_CAP, f"character #{player} has set off {count} prog calls in the last hour"
            )
        return None

    async def _scope(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        effect: Effect,
        world: WorldClient,
        tool: str = "",
    ) -> Decision | None:
        assert storyteller.id is not None
        watched = self._cells_of(storyteller.id) if self._cells_of is not None else frozenset()
        event_rooms = frozenset(t.room_id for t in trigger.all if t.room_id is not None)
        wanted = self.cfg.scope_for(tool)
        by_event = bool(event_rooms) and wanted == "trigger_rooms"
        allowed_rooms = event_rooms if by_event else watched
        if watched and by_event:
            allowed_rooms = event_rooms & watched
        exits = self.cfg.event_turn_exits if by_event else 0
        for room in sorted(effect.rooms):
            if room == -1:
                return refuse(SCOPE, "a room argument is not a room id")
            if allowed_rooms and room not in allowed_rooms:
                if exits and (not watched or room in watched):
                    if await _near(world, event_rooms, room, exits):
                        continue
                area = (
                    ("this turn's events" + (f" or {exits} exits from them" if exits else ""))
                    if by_event
                    else "the rooms it watches"
                )
                return refuse(SCOPE, f"room #{room} is outside {area}")
        if not effect.characters:
            return None
        named = trigger.character_ids
        for character in sorted(effect.characters - named):
            if character == -1:
                return refuse(SCOPE, "a character argument is not a character id")
            location = await _location(world, character)
            inside = allowed_rooms if allowed_rooms else None
            if location is None or (inside is not None and location not in inside):
                return refuse(
                    SCOPE,
                    f"character #{character} is not named by this turn's events "
                    "and is not in a room it may act on",
                )
        return None


async def _near(world: WorldClient, rooms: Iterable[int], room: int, exits: int) -> bool:
    """Whether `room` is at most `exits` exits from one of `rooms` (through any door)."""
    for origin in sorted(rooms):
        try:
            path = await world.path(origin, room, PathRule(DoorRule.IGNORE), max_exits=exits)
        except WorldCommandError:
            continue
        if path.found and len(path.directions) <= exits:
            return True
    return False


async def _location(world: WorldClient, character_id: int) -> int | None:
    try:
        info = await world.character(character_id)
    except WorldCommandError:
        return None
    return info.location_id if info is not None else None


def kill_switch_on(cfg: PolicyConfig, kill_file: Path | None) -> bool:
    """Whether the kill switch stops prog calls: the setting, or the file flag's presence."""
    return cfg.kill_switch or (kill_file is not None and kill_file.exists())


def kill_file_path(cfg: PolicyConfig, database_url: str) -> Path | None:
    """The kill switch's file flag: ``[policy] kill_file``, else ``<database file>.kill`` for a
    SQLite database (None for PostgreSQL without a configured path)."""
    if cfg.kill_file:
        return Path(cfg.kill_file)
    prefix = "sqlite+aiosqlite:///"
    if database_url.startswith(prefix) and database_url != prefix:
        return Path(database_url.removeprefix(prefix)).with_suffix(".kill")
    return None


def _within(times: deque[float], now: float, window: float) -> int:
    """How many of `times` (oldest first) fall in the last `window` seconds; older ones go."""
    while times and now - times[0] >= window:
        times.popleft()
    return len(times)


def _player(trigger: Trigger) -> int | None:
    """The character whose words or actions started the turn (echo source, speaker, criminal)."""
    event = trigger.event
    if event is None:
        return None
    for name in ("source_character_id", "speaker_id", "criminal_id"):
        value = getattr(event, name, None)
        if isinstance(value, int):
            return value
    return None


def _quotes_instructions(storyteller: Storyteller, text: str) -> bool:
    """Whether `text` carries a long line of the storyteller's own prompts."""
    folded = _words(text)
    if len(folded) < MIN_INSTRUCTION_LINE:
        return False
    prompts = (
        storyteller.system_prompt,
        storyteller.attention_prompt,
        storyteller.time_system_prompt,
    )
    for prompt in prompts:
        for line in (prompt or "").splitlines():
            words = _words(line)
            if len(words) >= MIN_INSTRUCTION_LINE and words in folded:
                return True
    return False


def _words(text: str) -> str:
    """`text` as lower-case words separated by single spaces, punctuation dropped."""
    return " ".join(_PUNCTUATION.sub(" ", text).split()).casefold()
