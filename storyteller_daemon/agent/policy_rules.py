"""The rules of the policy point, and the counts of prog calls the caps and cooldowns read.

Each rule has a name (`KILL_SWITCH`, `SCOPE`, `TURN_CAP`...) that a refusal carries to the model,
the run record and the metrics. `PolicyRules` checks a call against them: the secret rule for
every tool, the scope rule for built-ins on turns a player starts, and for prog calls the kill
switch (setting, file flag or its database twin), the lease (a daemon of a cluster sends no
call for a storyteller another daemon took over), the text rules, scope, the turn cap, the
cooldowns and the hourly and daily caps, which count the prog calls that ran. A check answers
with a `Decision` naming the first rule that refuses, or None when every rule passes.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import PolicyAction
from storyteller_daemon.domain.storytellers import Storyteller
from world_adapter.errors import WorldCommandError
from world_adapter.facts import DoorRule, PathRule
from world_adapter.protocol import WorldClient

HOUR_SECONDS = 3600.0
DAY_SECONDS = 86_400.0

KILL_SWITCH = "kill_switch"
LEASE_LOST = "lease_lost"
"""A daemon of a cluster no longer holds the storyteller's lease: its prog calls are not sent."""
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


class PolicyRules:
    """The rule checks of one daemon's policy point, and the counts the caps read.

    `Policy` builds on it; the arguments are the first five of `Policy`'s, which documents them.
    """

    def __init__(
        self,
        cfg: PolicyConfig,
        clock: Clock,
        *,
        secrets: Iterable[str] = (),
        cells_of: Callable[[int], frozenset[int]] | None = None,
        kill_file: Path | None = None,
        kill_flag: Callable[[], Awaitable[bool]] | None = None,
        holds: Callable[[int], Awaitable[bool]] | None = None,
    ) -> None:
        self.cfg = cfg
        self.kill_file = kill_file
        self._kill_flag = kill_flag
        self._holds = holds
        self._clock = clock
        self._secrets = tuple(s for s in {s.strip() for s in secrets} if len(s) >= MIN_SECRET_CHARS)
        self._cells_of = cells_of
        self._recent: dict[tuple[int, str, str, int], float] = {}
        self._hour: deque[float] = deque()
        self._by_player: dict[int, deque[float]] = {}
        self._by_storyteller: dict[int, deque[float]] = {}

    @property
    def killed(self) -> bool:
        """Whether the kill switch (setting or file flag) stops prog calls now."""
        return kill_switch_on(self.cfg, self.kill_file)

    async def killed_anywhere(self) -> bool:
        """Whether the kill switch (setting, file flag or its database twin) is on now."""
        return self.killed or (self._kill_flag is not None and await self._kill_flag())

    def _secret(self, arguments: Mapping[str, Any]) -> Decision | None:
        """A refusal when any string of the arguments carries a secret of the daemon."""
        for text in strings_in(dict(arguments)):
            if any(secret in text for secret in self._secrets):
                return refuse(SECRET, "an argument carries a secret of the daemon")
        return None

    def _count(self, action: PolicyAction, at: float) -> None:
        """Count a prog call that ran at `at` (monotonic seconds) for the cooldowns and caps."""
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
        if await self.killed_anywhere():
            return refuse(KILL_SWITCH, "the kill switch stops every prog call")
        if self._holds is not None and not await self._holds(storyteller.id or 0):
            return refuse(
                LEASE_LOST, "another daemon runs this storyteller now; the call was not sent"
            )
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
        now = self._clock.monotonic()
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
        player = player_of(trigger)
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


def _within(times: deque[float], now: float, window: float) -> int:
    """How many of `times` (oldest first) fall in the last `window` seconds; older ones go."""
    while times and now - times[0] >= window:
        times.popleft()
    return len(times)


def player_of(trigger: Trigger) -> int | None:
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
