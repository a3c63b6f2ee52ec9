"""Two storytellers watching the same rooms contend for one scene: the first claims it, the
other sees the claim and may not act there until it ends, unless its remit co-operates."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from director_rig import MARKET, QUAY, director_rig, echo

from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.direction import Direction
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.model import calls

LOOSE = PolicyConfig(target_cooldown_seconds=0, max_prog_calls_per_turn=10)


def claim(room: int, minutes: int = 15, reason: str = "A duel at the quay") -> Any:
    return calls(("ClaimScene", {"RoomId": room, "Minutes": minutes, "Reason": reason}))


def echo_rules(record: TurnRecord) -> list[str | None]:
    return [c.rule for c in record.calls if c.name == "EchoToRoom"]


async def test_two_storytellers_contend_for_one_scene(db_url: str) -> None:
    async with director_rig(db_url, policy=LOOSE) as rig:
        crier = await rig.other("Town Crier", plans=True)
        taken = await rig.beat(claim(QUAY))
        assert taken.calls[0].envelope["ok"] is True, taken.calls[0].envelope

        contested = await rig.beat(claim(QUAY, reason="News"), teller=crier)
        refused = contested.calls[0].envelope
        assert refused["ok"] is False
        assert (
            "Room #101 is claimed by storyteller Harbour Watch until 12:15 UTC"
            in (refused["error"])
        )
        prompt = rig.model.requests[-1].input[0]["content"]
        assert 'room #101 by "Harbour Watch" until 12:15 UTC: "A duel at the quay"' in prompt

        blocked = await rig.beat(calls(echo(QUAY, "Hear ye!")), calls(echo(MARKET)), teller=crier)
        assert echo_rules(blocked) == ["scene_claim", None]
        assert "claimed by storyteller Harbour Watch" in blocked.calls[0].envelope["error"]
        own = await rig.beat(calls(echo(QUAY, "Steel rings on steel.")))
        assert echo_rules(own) == [None]  # the holder acts freely in its scene

        await rig.clock.advance(15 * 60)  # the claim runs out
        after = await rig.beat(calls(echo(QUAY, "Hear ye, again!")), teller=crier)
        assert echo_rules(after) == [None]
        assert await rig.store.claims.active() == []


async def test_a_cooperating_remit_acts_through_a_claim(sqlite_url: str) -> None:
    async with director_rig(sqlite_url, policy=LOOSE) as rig:
        medic = await rig.other("Harbour Medic", cooperates=True)
        await rig.beat(claim(QUAY))
        record = await rig.beat(calls(echo(QUAY, "A medic kneels by the wounded.")), teller=medic)
        assert echo_rules(record) == [None]
        await rig.store.storytellers.save(
            replace(await rig.store.storytellers.get(medic.id or 0), direction=Direction())
        )
        stopped = await rig.beat(calls(echo(QUAY, "Another medic.")), teller=medic)
        assert echo_rules(stopped) == ["scene_claim"]  # a non-planning storyteller is held too


async def test_releasing_a_scene_lets_the_others_in(sqlite_url: str) -> None:
    async with director_rig(sqlite_url, policy=LOOSE) as rig:
        crier = await rig.other("Town Crier")
        await rig.beat(claim(QUAY))
        released = await rig.beat(calls(("ReleaseScene", {"RoomId": QUAY})))
        assert released.calls[0].envelope["result"]["Released"] is True
        record = await rig.beat(calls(echo(QUAY, "Hear ye!")), teller=crier)
        assert echo_rules(record) == [None]
        again = await rig.beat(calls(("ReleaseScene", {"RoomId": QUAY})))
        assert "holds no claim on room #101" in again.calls[0].envelope["error"]


async def test_claims_are_held_one_holder_at_a_time_and_bounded(store: Store) -> None:
    watch = await store.storytellers.create("Watch")
    crier = await store.storytellers.create("Crier")
    a, b = watch.id or 0, crier.id or 0
    first = await store.claims.claim(a, QUAY, minutes=10, reason="Duel")
    extended = await store.claims.claim(a, QUAY, minutes=30, reason="Duel, longer")
    assert extended.id == first.id and extended.expires_at > first.expires_at
    with pytest.raises(ConflictError, match="claimed by storyteller Watch"):
        await store.claims.claim(b, QUAY, minutes=5, reason="News")
    for room in range(200, 204):
        await store.claims.claim(a, room, minutes=5, reason="")
    for minutes in (0, 61):
        with pytest.raises(ValidationError, match="1 to 60 minutes"):
            await store.claims.claim(b, 300, minutes=minutes, reason="")
    with pytest.raises(ValidationError, match="already holds 5 scenes"):
        await store.claims.claim(a, 999, minutes=5, reason="")
    with pytest.raises(NotFoundError):
        await store.claims.release(b, QUAY)
    assert [c.room_id for c in await store.claims.active([QUAY])] == [QUAY]
