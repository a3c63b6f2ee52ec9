"""Pacing at the policy point: each limit refuses with its own rule, visible to the model and in
the run record, and lets calls through again when its time has passed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from director_rig import MARKET, QUAY, Rig, director_rig, echo

from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import PolicyAction
from storyteller_daemon.domain.direction import Pacing
from storyteller_daemon.testing.model import calls

# The policy's own per-tool cooldown is turned off so each test sees only pacing.
LOOSE = PolicyConfig(target_cooldown_seconds=0, max_prog_calls_per_turn=10)


def rules(record: TurnRecord) -> list[str | None]:
    return [c.rule for c in record.calls if c.name == "EchoToRoom"]


async def act(rig: Rig, *rooms: int) -> TurnRecord:
    """One turn calling EchoToRoom in each room in turn (each call's text is its own, so none
    is skipped as a repeat)."""
    return await rig.beat(*(calls(echo(room, f"Line {n}.")) for n, room in enumerate(rooms)))


async def test_quiet_hours_refuse_every_action_until_they_end(sqlite_url: str) -> None:
    async with director_rig(
        sqlite_url, policy=LOOSE, pacing=Pacing(quiet_hours="11:30-13:00")
    ) as rig:  # the rig's clock starts at 12:00 UTC
        quiet = await act(rig, QUAY)
        assert rules(quiet) == ["quiet_hours"]
        refused = quiet.calls[0].envelope
        assert refused["ok"] is False and "rule quiet_hours" in refused["error"]
        run = await rig.last_run()
        assert run["turn"]["calls"][0]["rule"] == "quiet_hours"
        assert run["direction"]["pacing"]["quiet"] is True
        await rig.advance(1)
        assert rules(await act(rig, QUAY)) == [None]


async def test_a_room_needs_its_gap_between_actions(sqlite_url: str) -> None:
    async with director_rig(sqlite_url, policy=LOOSE, pacing=Pacing(room_gap_seconds=300)) as rig:
        assert rules(await act(rig, QUAY, QUAY, MARKET)) == [None, "room_gap", None]
        await rig.clock.advance(299)
        assert rules(await act(rig, QUAY)) == ["room_gap"]
        await rig.clock.advance(1)
        assert rules(await act(rig, QUAY)) == [None]


async def test_the_daily_allowance_is_a_rolling_day(sqlite_url: str) -> None:
    async with director_rig(sqlite_url, policy=LOOSE, pacing=Pacing(daily_actions=2)) as rig:
        assert rules(await act(rig, QUAY, MARKET, 103)) == [None, None, "daily_allowance"]
        run = await rig.last_run()
        assert run["direction"]["pacing"]["actions_last_day"] == 2
        await rig.advance(23)
        assert rules(await act(rig, QUAY)) == ["daily_allowance"]
        await rig.advance(1)
        assert rules(await act(rig, QUAY)) == [None]


async def test_intensity_peaks_then_relaxes_before_acting_again(sqlite_url: str) -> None:
    pacing = Pacing(intensity_peak=2.5, intensity_relax=1.0, intensity_half_life_minutes=30)
    async with director_rig(sqlite_url, policy=LOOSE, pacing=pacing) as rig:
        record = await act(rig, QUAY, MARKET, 103, QUAY)
        assert rules(record) == [None, None, None, "intensity"]  # 3 actions: past the peak
        assert "relaxes until intensity falls to 1" in record.calls[3].envelope["error"]
        run = await rig.last_run()
        assert run["direction"]["pacing"]["phase"] == "relax"
        await rig.clock.advance(30 * 60)  # 1.5: below the peak, but not yet relaxed
        assert rules(await act(rig, MARKET)) == ["intensity"]
        await rig.clock.advance(30 * 60)  # 0.75: relaxed
        assert rules(await act(rig, MARKET)) == [None]
        assert (await rig.last_run())["direction"]["pacing"]["phase"] == "build-up"


async def test_events_raise_intensity_too(sqlite_url: str) -> None:
    pacing = Pacing(intensity_peak=1.0, intensity_per_event=0.6, intensity_per_action=0.0)
    async with director_rig(sqlite_url, policy=LOOSE, pacing=pacing) as rig:
        from storyteller_daemon.agent.trigger import Trigger

        shout = Trigger.from_event(rig.world.emote(1001, "shouts for the watch!"))
        assert rules(await rig.beat(calls(echo(QUAY)), trigger=shout)) == [None]
        again = Trigger.from_event(rig.world.emote(1001, "shouts again!"))
        assert rules(await rig.beat(calls(echo(QUAY)), trigger=again)) == ["intensity"]


async def test_pacing_counts_survive_a_restart(sqlite_url: str) -> None:
    async with director_rig(sqlite_url, policy=LOOSE, pacing=Pacing(room_gap_seconds=600)) as rig:
        sid = rig.teller.id or 0
        earlier = PolicyAction(sid, "EchoToRoom", rig.clock.now() - timedelta(seconds=60), None,
                               frozenset({QUAY}), frozenset())  # fmt: skip
        assert rig.policy is not None
        rig.policy.restore([earlier], rig.clock.now())
        assert rules(await act(rig, QUAY)) == ["room_gap"]


def test_pacing_settings_are_checked() -> None:
    bad: list[dict[str, Any]] = [
        {"room_gap_seconds": -1},
        {"quiet_hours": "25:00-01:00"},
        {"intensity_peak": 2.0, "intensity_relax": 2.0},
        {"intensity_half_life_minutes": 0},
    ]
    for settings in bad:
        try:
            Pacing(**settings)
        except Exception as exc:
            assert type(exc).__name__ == "ValidationError", settings
        else:
            raise AssertionError(f"{settings} was accepted")
    assert Pacing(quiet_hours="22:00-06:00").limited and not Pacing().limited
