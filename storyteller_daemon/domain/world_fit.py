"""Whether a storyteller fits a world: the ids and progs it names exist there, as it expects.

A storyteller names world things its pack or an admin chose: surveillance zones and rooms, the
progs behind its custom tools, its status, player-information and context-provider progs, and
(from its pack) the world it was written for and the prog types its tools expect. `misfits`
compares all of that with what a world answered (`WorldFacts`) and returns one `Misfit` per
problem, each naming the storyteller, the field and the value, so `storyteller doctor` and
``seed load --check-world`` can say exactly what to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from progs.types import ProgSignature
from storyteller_daemon.domain.direction import ProviderKind
from storyteller_daemon.domain.storytellers import CustomTool, Storyteller


@dataclass(frozen=True)
class WorldFacts:
    """What a world answered: who it is, its zones, the rooms asked about, its progs."""

    identity: str
    """``sim``, or the game's name."""
    zones: Mapping[int, frozenset[int]]
    rooms: frozenset[int]
    """Every room known to exist: the zones' rooms and any other room the world confirmed."""
    progs: Sequence[ProgSignature]


@dataclass(frozen=True)
class Misfit:
    """One thing a storyteller names that the world does not have as named."""

    storyteller: str
    field: str
    """Where it is set, as a pack would write it (``surveillance.zones``, ``tools.Shout.prog``)."""
    value: str
    problem: str

    def __str__(self) -> str:
        return f"{self.storyteller}: {self.field} = {self.value}: {self.problem}"


def rooms_to_confirm(
    storytellers: Sequence[Storyteller], zones: Mapping[int, frozenset[int]]
) -> set[int]:
    """Rooms named in surveillance outside every zone: the world must be asked about each."""
    in_zones = frozenset().union(*zones.values()) if zones else frozenset()
    named: set[int] = set()
    for st in storytellers:
        named |= st.surveillance.included | st.surveillance.excluded
    return named - in_zones


def _find(progs: Sequence[ProgSignature], ref: str) -> ProgSignature | None:
    return next((p for p in progs if p.matches(ref)), None)


def _names(values: Sequence[str] | set[str] | frozenset[str]) -> str:
    return ", ".join(values) or "none"


def _prog_misfit(st: Storyteller, field: str, ref: str, world: WorldFacts) -> Misfit | None:
    prog = _find(world.progs, ref)
    if prog is None:
        return Misfit(st.name, field, ref, f"{world.identity} has no prog of that name")
    if prog.compile_error.strip():
        return Misfit(st.name, field, ref, f"the prog does not compile: {prog.compile_error}")
    return None


def _tool_misfits(st: Storyteller, tool: CustomTool, world: WorldFacts) -> list[Misfit]:
    where = f"tools.{tool.name}"
    missing = _prog_misfit(st, f"{where}.prog", tool.prog, world)
    if missing is not None:
        return [missing]
    prog = _find(world.progs, tool.prog)
    assert prog is not None  # _prog_misfit found it
    found: list[Misfit] = []
    described = [p for p, _ in tool.parameter_descriptions]
    if sorted(p.lower() for p in described) != sorted(p.lower() for p in prog.parameter_names):
        found.append(
            Misfit(
                st.name,
                f"{where}.parameters",
                _names(described),
                f"prog {prog.name} takes {_names(prog.parameter_names)}",
            )
        )
    by_name = {p.name.lower(): p for p in prog.parameters}
    for name, wanted in tool.parameter_types:
        actual = by_name.get(name.lower())
        if actual is not None and actual.type.describe() != wanted:
            found.append(
                Misfit(
                    st.name,
                    f"{where}.types.{name}",
                    wanted,
                    f"prog {prog.name} takes {name} as {actual.type.describe()}",
                )
            )
    if tool.return_type is not None and prog.return_type.describe() != tool.return_type:
        found.append(
            Misfit(
                st.name,
                f"{where}.returns",
                tool.return_type,
                f"prog {prog.name} returns {prog.return_type.describe()}",
            )
        )
    return found


def misfits(st: Storyteller, world: WorldFacts) -> list[Misfit]:
    """Every way `st` does not fit `world`, one `Misfit` per problem, in settings order."""
    found: list[Misfit] = []
    if st.written_for is not None and st.written_for != world.identity:
        found.append(
            Misfit(
                st.name,
                "world",
                st.written_for,
                f"its pack was written for {st.written_for!r}, but the configured world is "
                f"{world.identity!r}",
            )
        )
    zone_ids = ", ".join(str(z) for z in sorted(world.zones)) or "none"
    for zone in sorted(st.surveillance.zones):
        if zone not in world.zones:
            found.append(
                Misfit(
                    st.name,
                    "surveillance.zones",
                    str(zone),
                    f"{world.identity} has no zone {zone} (zones: {zone_ids})",
                )
            )
    for key, rooms in (
        ("include", st.surveillance.included),
        ("exclude", st.surveillance.excluded),
    ):
        for room in sorted(rooms):
            if room not in world.rooms:
                found.append(
                    Misfit(
                        st.name,
                        f"surveillance.{key}",
                        str(room),
                        f"{world.identity} has no room {room}",
                    )
                )
    for beat, prog in st.status_progs:
        misfit = _prog_misfit(st, f"status_progs.{beat.value}", prog, world)
        found.extend([misfit] if misfit else [])
    if st.player_info_prog:
        misfit = _prog_misfit(st, "player_info_prog", st.player_info_prog, world)
        found.extend([misfit] if misfit else [])
    for provider in st.direction.providers:
        if provider.kind is ProviderKind.PROG:
            field = f"direction.providers.{provider.name}.source"
            misfit = _prog_misfit(st, field, provider.source, world)
            found.extend([misfit] if misfit else [])
    for tool in st.custom_tools:
        found.extend(_tool_misfits(st, tool, world))
    return found
