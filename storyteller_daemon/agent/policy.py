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
* ``text_cap``: text passed to a prog is at most ``max_text_chars`` long;
* ``scene_claim``: no prog call in a room another storyteller has claimed (`domain.scenes`),
  unless the caller's remit co-operates;
* ``dictated``, ``prescribed``, ``instruction_like``: a call's text may not repeat players'
  words the turn read, take a value a player prescribed, or keep an order to the storyteller
  as a note (`dictation`); a prog call they flag that needs approval is parked instead;
* ``quiet_hours``, ``room_gap``, ``daily_allowance``, ``intensity``: the storyteller's own
  pacing (`pacing`), checked after every rule above.

A refusal is returned to the model as a tool error naming the rule, recorded with the call in
the run record and counted. Storytellers in ``shadow`` run their turns as usual, but their prog
calls are recorded as "would call" and answered with a simulated success: nothing reaches the
game. Calls matched by ``approve`` pass every rule above, then wait for an admin
(`storyteller_daemon.domain.approvals`).

The rules and the counts they read are `policy_rules`; what a call touches is `effects`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from storyteller_daemon.agent.dictation import CallVoice, check_voice
from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.pacing import PacingState
from storyteller_daemon.agent.policy_rules import (
    APPROVAL,
    PLAYER_STARTED,
    SCOPE,
    SHADOW,
    Decision,
    PolicyRules,
    player_of,
    refuse,
)
from storyteller_daemon.agent.ports import ApprovalQueue, SceneClaimStore
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import Approval, ParkedCall, PolicyAction
from storyteller_daemon.domain.storytellers import Storyteller
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

SCENE_CLAIM = "scene_claim"

Journal = Callable[[PolicyAction], Awaitable[None]]
"""Stores a prog call that ran, so the caps hold across a restart."""


@dataclass
class PolicyStats:
    """Refusals by rule, and calls simulated in shadow mode, since start."""

    refused: Counter[str] = field(default_factory=Counter)
    shadowed: int = 0


class Policy(PolicyRules):
    """The policy point of one daemon.

    Args:
        cfg: the ``[policy]`` section.
        clock: monotonic seconds for the caps and cooldowns; UTC wall time for the calls
            `journal` stores and `restore` reads back.
        secrets: the daemon's secrets (API key, bridge token, webhook URL...); blank and short
            values are ignored.
        cells_of: the rooms a storyteller watches, by id (empty: not known, not checked).
        kill_file: while this file exists, prog calls are stopped (`kill_file_path`).
        journal: stores each prog call that ran (none: the caps start over on restart).
        approvals: where calls matched by ``approve`` are parked (none: they are refused).
        claims: the scene claims (none: claims are not enforced).
        kill_flag: the kill switch's database twin, shared by every daemon of the database
            (none: only the setting and the file flag).
        holds: whether this daemon of a cluster still holds a storyteller's lease, asked of
            the database before each prog call (none: not clustered).
    """

    def __init__(
        self,
        cfg: PolicyConfig,
        clock: Clock,
        *,
        secrets: Iterable[str] = (),
        cells_of: Callable[[int], frozenset[int]] | None = None,
        kill_file: Path | None = None,
        journal: Journal | None = None,
        approvals: ApprovalQueue | None = None,
        claims: SceneClaimStore | None = None,
        kill_flag: Callable[[], Awaitable[bool]] | None = None,
        holds: Callable[[int], Awaitable[bool]] | None = None,
    ) -> None:
        self.pacing = PacingState(clock)
        super().__init__(
            cfg,
            clock,
            secrets=secrets,
            cells_of=cells_of,
            kill_file=kill_file,
            kill_flag=kill_flag,
            holds=holds,
        )
        self._now = clock.now
        self._journal = journal
        self._approvals = approvals
        self._claims = claims
        self.stats = PolicyStats()

    def _count(self, action: PolicyAction, at: float) -> None:
        super()._count(action, at)
        self.pacing.acted(action.storyteller_id, action.rooms, at)

    def note_events(self, storyteller: Storyteller, count: int) -> None:
        """Count the events of a turn that starts now toward the storyteller's intensity."""
        if storyteller.id is not None:
            self.pacing.events(storyteller.id, count)

    def pacing_report(self, storyteller: Storyteller) -> dict[str, Any]:
        """The storyteller's pacing state now (for its run record)."""
        assert storyteller.id is not None
        return self.pacing.report(storyteller.id, storyteller.direction.pacing, self._now())

    def restore(self, actions: Iterable[PolicyAction], now: datetime) -> None:
        """Count prog calls that ran before a restart (oldest first), as `ran` would have."""
        offset = self._clock.monotonic() - now.timestamp()
        for action in actions:
            self._count(action, action.at.timestamp() + offset)

    # ------------------------------------------------------------------ switches

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
        voice: CallVoice | None = None,
    ) -> Decision:
        """The decision about one tool call of a turn: allowed, shadowed, or refused by a rule.

        Args:
            effect: what a prog call would touch (None for a built-in).
            names: the rooms and characters a built-in names; held to the turn's scope only on
                turns a player's words or actions start (heartbeat and direct turns may look
                anywhere).
            calls_this_turn: prog calls of the turn that ran before this one.
            voice: the players' words the turn read and the tool's data on them, for the
                dictation rules (`dictation`); None: not checked.
        """
        decision = self._secret(arguments)
        if decision is None and effect is not None:
            decision = await self._prog_rules(
                storyteller, trigger, tool, effect, world, calls_this_turn
            )
            if decision is None:
                decision = self._voice(storyteller, tool, arguments, voice, effect)
            if decision is None:
                decision = await self._direction_rules(storyteller, effect)
        elif decision is None and names is not None and trigger.kind in PLAYER_STARTED:
            decision = await self._scope(storyteller, trigger, names, world, tool)
        if decision is None and effect is None:
            decision = self._voice(storyteller, tool, arguments, voice, None)
        if decision is not None:
            return self._refused(storyteller, tool, decision)
        if effect is not None and self.shadowed(storyteller, tool):
            self.stats.shadowed += 1
            return Decision(SHADOW, "shadow mode: recorded, not run", shadow=True)
        return Decision()

    def _voice(
        self,
        storyteller: Storyteller,
        tool: str,
        arguments: Mapping[str, Any],
        voice: CallVoice | None,
        effect: Effect | None,
    ) -> Decision | None:
        """The dictation rules; a prog call they flag that waits for approval anyway is let
        through to be parked, so an admin decides."""
        if voice is None:
            return None
        decision = check_voice(self.cfg, tool, arguments, voice, effect)
        if decision is not None and effect is not None and self.needs_approval(storyteller, tool):
            log.warning(
                "storyteller %s: %s flagged by rule %s, parked for approval instead",
                storyteller.name,
                tool,
                decision.rule,
            )
            return None
        return decision

    async def _direction_rules(self, storyteller: Storyteller, effect: Effect) -> Decision | None:
        """Scene claims of other storytellers, then the storyteller's own pacing."""
        assert storyteller.id is not None
        rooms = frozenset(r for r in effect.rooms if r != -1)
        if rooms and self._claims is not None and not storyteller.direction.cooperates:
            for claim in await self._claims.active(sorted(rooms)):
                if claim.storyteller_id != storyteller.id:
                    return refuse(
                        SCENE_CLAIM,
                        f"room #{claim.room_id} is claimed by storyteller "
                        f"{claim.storyteller_name} until {claim.expires_at:%H:%M} UTC",
                    )
        pacing = storyteller.direction.pacing
        if not pacing.limited:
            return None
        found = self.pacing.check(storyteller.id, pacing, rooms, self._now())
        return refuse(*found) if found is not None else None

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
            player_id=player_of(trigger) if trigger is not None else None,
            rooms=effect.rooms,
            characters=effect.characters,
        )
        self._count(action, self._clock.monotonic())
        if self._journal is not None:
            try:
                await self._journal(action)
            except Exception:  # the call ran; counting it in memory is what matters now
                log.exception("storyteller %s: could not store a prog call", storyteller.name)
