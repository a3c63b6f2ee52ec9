"""The policy point of a replay: today's rules where the turn alone decides, the recording's
decisions where the daemon's state at the time did.

A turn the daemon ran passed its policy point (`agent.policy.Policy`): the destructive built-ins
are not offered on turns a player's words start, the dictation rules refuse calls that repeat
players' words, and the rest of the rules read what the daemon knew then. A replay passes a
`RecordedPolicy` so it offers and decides as the recorded turn did:

* rules the turn alone decides are checked again with today's ``[policy]``: the tools offered,
  the text rules (``text_cap``, ``instructions``), the dictation rules (the players' words they
  compare with come from the taped trigger, the taped prompt reads and the taped tool results),
  the turn cap, shadow mode and which tools wait for approval;
* rules that read the daemon's state at the time (`RECORDED_RULES`: the kill switch, the
  rooms the storyteller watched, the caps and cooldowns that count earlier calls, secrets,
  scene claims, pacing) are not checked again: a call the recording refused by one of them is
  refused again, with the recorded reason, when the replay makes the same call (same tool, same
  arguments); any other call passes them;
* a call that waits for approval is parked nowhere: it gets the recorded approval's id and state
  (or a pending approval #0), so the model reads what it read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from storyteller_daemon.agent.dictation import CallVoice
from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.pacing import DAILY_ALLOWANCE, INTENSITY, QUIET_HOURS, ROOM_GAP
from storyteller_daemon.agent.policy import SCENE_CLAIM, Policy
from storyteller_daemon.agent.policy_rules import (
    APPROVAL,
    COOLDOWN,
    HOURLY_CAP,
    KILL_SWITCH,
    PLAYER_CAP,
    SCOPE,
    SECRET,
    STORYTELLER_CAP,
    Decision,
)
from storyteller_daemon.agent.tools.arguments import MalformedArguments, parse_arguments
from storyteller_daemon.agent.tools.base import canonical_arguments
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import Approval, ApprovalState
from storyteller_daemon.domain.storytellers import Storyteller
from world_adapter.protocol import WorldClient

RECORDED_RULES = frozenset(
    {
        KILL_SWITCH,
        SCOPE,
        COOLDOWN,
        HOURLY_CAP,
        STORYTELLER_CAP,
        PLAYER_CAP,
        SECRET,
        SCENE_CLAIM,
        APPROVAL,
        QUIET_HOURS,
        ROOM_GAP,
        DAILY_ALLOWANCE,
        INTENSITY,
    }
)
"""Rules whose refusals a replay takes from the recording instead of checking them again."""

_REFUSAL = re.compile(r"\(rule [^)]*\): (?P<reason>.*)\Z", re.DOTALL)
_EXPIRY = re.compile(r"before (\d{2}):(\d{2}) UTC")
Key = tuple[str, str]


def _key(tool: str, arguments: Mapping[str, Any]) -> Key:
    return tool, canonical_arguments(arguments)


class RecordedPolicy(Policy):
    """A policy point for replaying one recorded turn (see the module docstring).

    Args:
        cfg: today's ``[policy]``; its kill switch is the recording's business.
        calls: the recorded turn's calls (``TurnRecord.to_dict`` form).
        secrets: today's secrets, if known (a recorded ``secret`` refusal stands regardless).
    """

    def __init__(
        self,
        cfg: PolicyConfig,
        clock: Clock,
        calls: Sequence[Mapping[str, Any]],
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(cfg.model_copy(update={"kill_switch": False}), clock, secrets=secrets)
        self._refusals: dict[Key, list[Decision]] = {}
        self._parked: dict[Key, list[Mapping[str, Any]]] = {}
        for call in calls:
            try:
                key = _key(str(call["name"]), parse_arguments(str(call["arguments"])))
            except MalformedArguments:
                continue
            envelope = call.get("envelope") or {}
            if call.get("refused") and call.get("rule") in RECORDED_RULES:
                found = _REFUSAL.search(str(envelope.get("error", "")))
                reason = found["reason"] if found else ""
                self._refusals.setdefault(key, []).append(Decision(str(call["rule"]), reason))
            elif call.get("parked"):
                self._parked.setdefault(key, []).append(envelope.get("result") or {})

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
        """Today's decision on the rules the turn decides; else the recorded refusal of the
        same call by a rule of its time, if there was one."""
        decision = await super().check_call(
            storyteller,
            trigger,
            tool,
            arguments,
            effect=effect,
            names=names,
            world=world,
            calls_this_turn=calls_this_turn,
            voice=voice,
        )
        recorded = self._refusals.get(_key(tool, arguments))
        if decision.allowed and recorded:
            return recorded.pop(0)
        return decision

    def _refused(self, storyteller: Storyteller, tool: str, decision: Decision) -> Decision:
        """A replay's refusals are in its report: none is counted or logged as the daemon's."""
        return decision

    async def _direction_rules(self, storyteller: Storyteller, effect: Effect) -> Decision | None:
        """Scene claims and pacing read the state of their time: the recording decides."""
        return None

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
        """The recorded approval of the same call (or a pending #0); nothing is stored."""
        waiting = self._parked.get((tool, arguments)) or []
        result = waiting.pop(0) if waiting else {}
        now = self._now()
        expires = now + timedelta(seconds=self.cfg.approval_expiry_seconds)
        shown = _EXPIRY.search(str(result.get("message", "")))
        if shown is not None:
            expires = expires.replace(hour=int(shown[1]), minute=int(shown[2]))
        rooms = sorted(effect.rooms - {-1})
        return Approval(
            key=key,
            storyteller_id=storyteller.id or 0,
            tool=tool,
            arguments=arguments,
            turn_key=turn_key,
            trigger=trigger.label,
            room_id=rooms[0] if rooms else trigger.room_id,
            created_at=now,
            expires_at=expires,
            id=int(result.get("approval", 0)),
            state=ApprovalState(str(result.get("state", ApprovalState.PENDING.value))),
        )
