"""The world a scenario runs in, and its events made to happen there.

`open_world` is the seam between a scenario's ``world`` and the world the daemon under test
watches: ``sim`` is the embedded harbour town; a snapshot file (taken from a live game with
``storyteller world snapshot``) is loaded by `load_snapshot` (the sim world built from it,
unless a test gives another loader). `perform` makes one scenario event happen in the world
and returns the world events it caused, so the runner can look up what the storyteller made
of each.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from storyteller_daemon.domain.scenarios import ScenarioEvent
from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState, WorldEvent
from world_adapter.sim import SimWorld
from world_adapter.sim.snapshot import load_snapshot as read_snapshot

SIM = "sim"

SnapshotLoader = Callable[[str, Callable[[], datetime], str], SimWorld]
"""Builds a sim world holding a snapshot file's rooms and characters: (path, clock, epoch)."""


def open_world(
    spec: str,
    now: Callable[[], datetime],
    epoch: str,
    *,
    load_snapshot: SnapshotLoader = read_snapshot,
) -> SimWorld:
    """A fresh world for one run of a scenario, on the run's clock.

    Args:
        spec: the scenario's ``world``: ``sim``, or the path of a snapshot file.
        now: the run's virtual time (the events' timestamps).
        epoch: the world's event epoch (one per run, so no two runs' cursors meet).
        load_snapshot: reads a snapshot file into a world.

    Raises:
        ValueError: the snapshot file does not hold a world (its loader's one-line reason).
    """
    if spec == SIM:
        return SimWorld.harbour_town(clock=now, epoch=epoch)
    return load_snapshot(spec, now, epoch)


class ScenarioActionError(Exception):
    """A scenario event the world refused (an unknown character, a move to where it is...)."""


def perform(world: SimWorld, event: ScenarioEvent) -> list[WorldEvent]:
    """Make a (non-heartbeat) scenario event happen; the world events it caused, in order.

    A ``room`` on anything but a move puts the character there first, unseen.

    Raises:
        ScenarioActionError: the world refused the action (the message is the world's).
    """
    if event.character is None:
        raise ScenarioActionError(f"a {event.action} needs a character")
    who, values = event.character, event.values
    try:
        if event.room is not None and event.action != "move":
            world.place(who, event.room)
        if event.action == "say":
            return [
                world.say(
                    who,
                    event.text,
                    target_id=values.get("target"),
                    language=str(values.get("language", "Common")),
                    volume=str(values.get("volume", "Normal")),
                )
            ]
        if event.action == "emote":
            return [world.emote(who, event.text)]
        if event.action == "move":
            if event.room is None:
                raise ScenarioActionError("a move needs a room")
            return list(world.move(who, event.room))
        if event.action == "crime":
            crime = world.commit_crime(
                who,
                str(values["crime"]),
                victim_id=values.get("victim"),
                witnesses=int(values.get("witnesses", 1)),
            )
            return [crime]
        if event.action == "state":
            return [world.change_state(who, CharacterState(values["state"]))]
    except WorldCommandError as exc:
        raise ScenarioActionError(str(exc)) from None
    raise ScenarioActionError(f"the world cannot make a {event.action} happen")
