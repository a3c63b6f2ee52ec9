"""Conformance checks of the request methods: answers, errors, documented meaning, idempotency.

Every method of the protocol is called with plausible parameters and its result decoded, and
the ones that look up a single id answer null for an unknown one; an unknown method, mistyped
params and an unknown prog get the error codes due; the semantics the document settles beyond
the types hold; and a prog run twice with one idempotency key runs once and is replayed, on a
new connection too.
"""

from __future__ import annotations

import secrets
from typing import Any

from world_adapter.bridge.checks.context import CheckContext, CheckSkipped
from world_adapter.bridge.messages import Error, ErrorCode
from world_adapter.bridge.methods import Method, world_methods
from world_adapter.bridge.probe import CheckFailed, Probe, looks_up_one_id, sample_value
from world_adapter.codec import encode
from world_adapter.facts import ProgOutcome

NO_SUCH_ID = 2_147_483_647
"""An id no game is expected to use, for "unknown ids answer null"."""

OPTIONAL_METHODS = frozenset({"entity"})
"""Methods a game may answer ``unknown_method`` (docs/bridge-protocol.md, "A minimal profile")."""


class QueryChecks(CheckContext):
    """The checks of the request methods."""

    async def methods(self) -> str:
        probe = await self._session_probe()
        try:
            zones = await self._call(probe, "zones", {})
            self._cells = sorted({cell for cells in zones.values() for cell in cells})
            players = await self._call(probe, "online_players", {})
            self._sample_ids = {
                "room": self._cells[0] if self._cells else 1,
                "character": players[0].id if players else 1,
            }
            answered = 2
            for spec in world_methods().values():
                if spec.name in ("zones", "online_players", "execute_prog"):
                    continue
                params = self._sample_params(spec)
                if spec.name in OPTIONAL_METHODS:
                    answer = await probe.request(spec.name, params)
                    if isinstance(answer, Error) and answer.code is ErrorCode.UNKNOWN_METHOD:
                        continue  # the game leaves it out; the daemon then does without
                await self._call(probe, spec.name, params, refusal_ok=True)
                answered += 1
                if looks_up_one_id(spec):
                    missing = await self._call(probe, spec.name, {spec.params[0].name: NO_SUCH_ID})
                    if missing is not None:
                        raise CheckFailed(f"{spec.name} of an unknown id answered {missing!r}")
        finally:
            await probe.ws.close()
        return f"{answered} methods answered; unknown ids give null"

    def _sample_params(self, spec: Method) -> dict[str, Any]:
        return {
            p.name: encode(sample_value(p.hint, p.name, self._sample_ids), p.hint)
            for p in spec.params
            if p.required
        }

    async def errors(self) -> str:
        probe = await self._session_probe()
        try:
            await self._expect_error(probe, "no_such_method", {}, ErrorCode.UNKNOWN_METHOD)
            await self._expect_error(
                probe, "character", {"character_id": "not a number"}, ErrorCode.BAD_PARAMS
            )
            params = {
                "prog": "conformance-no-such-prog-" + secrets.token_hex(4),
                "arguments": {},
                "idempotency_key": "conformance-" + secrets.token_hex(8),
            }
            await self._expect_error(probe, "execute_prog", params, ErrorCode.COMMAND_FAILED)
        finally:
            await probe.ws.close()
        return "unknown_method, bad_params and command_failed where due"

    async def semantics(self) -> str:
        """What the document settles beyond the types: online players are players, unknown
        rooms and calendars are left out or null (not errors), a path from a room to itself is
        found and empty, and a path no exit budget allows is not found (not an error)."""
        probe = await self._session_probe()
        try:
            players = await self._call(probe, "online_players", {})
            if any(not p.is_player for p in players):
                raise CheckFailed("online_players listed a character that is not a player")
            times = await self._call(probe, "room_times", {"room_ids": [NO_SUCH_ID]})
            if times:
                raise CheckFailed(f"room_times of an unknown room answered {times!r}, not {{}}")
            calendar = await self._call(probe, "calendar", {"ref": "conformance-no-such-calendar"})
            if calendar is not None:
                raise CheckFailed("calendar of an unknown name did not answer null")
            rooms = await self._cells_or_skip()
            rule = {"doors": "ignore"}
            here = {"origin_room_id": rooms[0], "destination_room_id": rooms[0], "rule": rule}
            same = await self._call(probe, "path", here)
            if not same.found or same.directions:
                raise CheckFailed(f"a path from room {rooms[0]} to itself was {same!r}")
            if len(rooms) > 1:
                apart = {**here, "destination_room_id": rooms[-1], "max_exits": 0}
                none = await self._call(probe, "path", apart)
                if none.found:
                    raise CheckFailed("a path with max_exits 0 between two rooms was found")
        finally:
            await probe.ws.close()
        return (
            f"{len(players)} online players; unknown room and calendar left out; "
            "paths to the same room and past the exit budget as documented"
        )

    async def _expect_error(
        self, probe: Probe, name: str, params: dict[str, Any], code: ErrorCode
    ) -> None:
        answer = await probe.request(name, params)
        if not isinstance(answer, Error) or answer.code != code:
            got = answer.code if isinstance(answer, Error) else "a result"
            raise CheckFailed(f"{name} with {params} answered {got}, expected {code}")

    async def idempotency(self) -> str:
        if self._prog is None:
            raise CheckSkipped("give --prog (a harmless prog) to check idempotent execution")
        probe = await self._session_probe()
        params = {
            "prog": self._prog,
            "arguments": self._prog_arguments,
            "idempotency_key": "conformance-" + secrets.token_hex(8),
        }
        try:
            first: ProgOutcome = await self._call(probe, "execute_prog", params)
            second: ProgOutcome = await self._call(probe, "execute_prog", params)
        finally:
            await probe.ws.close()
        # A key outlives its connection: the daemon retries on a new one after a reconnect.
        other = await self._session_probe()
        try:
            third: ProgOutcome = await self._call(other, "execute_prog", params)
        finally:
            await other.ws.close()
        replays = (first.replayed, second.replayed, third.replayed)
        if replays != (False, True, True):
            raise CheckFailed(
                f"replayed was {replays[0]}, {replays[1]}, then {replays[2]} on a new "
                "connection; expected false, true, true"
            )
        if not first.value == second.value == third.value:
            raise CheckFailed(f"the repeated key gave {second.value!r}, not {first.value!r}")
        return f"{self._prog} ran once; the repeated key replayed, on a new connection too"
