"""`misfits`: one misfit per thing a storyteller names that the world lacks, and none for what
it has; rooms outside every zone are confirmed one by one."""

from __future__ import annotations

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from storyteller_daemon.domain.direction import ContextProvider, Direction, ProviderKind
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.world_fit import WorldFacts, misfits, rooms_to_confirm

TEXT, ROOM = ValueType(ProgType.TEXT), ValueType(ProgType.LOCATION)
PROGS = [
    ProgSignature(1, "Echo", (ProgParameter("Room", ROOM), ProgParameter("Text", TEXT)), TEXT),
    ProgSignature(2, "Status", (), TEXT),
    ProgSignature(3, "Broken", (), TEXT, compile_error="line 1: no such variable"),
]
WORLD = WorldFacts("Keep", {1: frozenset({10, 11})}, frozenset({10, 11, 99}), PROGS)
ECHO = CustomTool(
    "Echo",
    "Shows text.",
    "Echo",
    parameter_descriptions=(("Room", "where"), ("Text", "what")),
    parameter_types=(("Room", "Location"), ("Text", "Text")),
    return_type="Text",
)


def watcher(**changes: object) -> Storyteller:
    base: dict[str, object] = {
        "name": "Watcher",
        "surveillance": Surveillance(frozenset({1}), frozenset({99}), frozenset({11})),
        "heartbeats": frozenset({Heartbeat.TEN_MINUTES}),
        "status_progs": ((Heartbeat.TEN_MINUTES, "Status"),),
        "custom_tools": (ECHO,),
        "written_for": "Keep",
    }
    return Storyteller(**{**base, **changes})  # type: ignore[arg-type]


def fields(st: Storyteller) -> list[tuple[str, str]]:
    return [(m.field, m.value) for m in misfits(st, WORLD)]


def test_a_storyteller_that_fits_has_no_misfits() -> None:
    assert misfits(watcher(), WORLD) == []
    assert misfits(watcher(written_for=None), WORLD) == []  # a pack that does not say


def test_each_named_thing_the_world_lacks_is_one_misfit() -> None:
    assert fields(watcher(status_progs=((Heartbeat.TEN_MINUTES, "Gone"),))) == [
        ("status_progs.10m", "Gone")
    ]
    assert fields(watcher(player_info_prog="Broken")) == [("player_info_prog", "Broken")]
    provider = ContextProvider("ward", ProviderKind.PROG, 100, "Missing")
    assert fields(watcher(direction=Direction(providers=(provider,)))) == [
        ("direction.providers.ward.source", "Missing")
    ]
    renamed = CustomTool("Echo", "", "Echo", parameter_descriptions=(("Where", "x"), ("Text", "y")))
    assert fields(watcher(custom_tools=(renamed,))) == [("tools.Echo.parameters", "Where, Text")]
    surveillance = Surveillance(frozenset({1, 2}), frozenset({98}), frozenset({11}))
    assert fields(watcher(surveillance=surveillance)) == [
        ("surveillance.zones", "2"),
        ("surveillance.include", "98"),
    ]


def test_a_missing_prog_is_one_misfit_not_one_per_parameter() -> None:
    gone = CustomTool("Echo", "", "Vanished", parameter_types=(("Room", "Number"),))
    [misfit] = misfits(watcher(custom_tools=(gone,)), WORLD)
    assert str(misfit) == "Watcher: tools.Echo.prog = Vanished: Keep has no prog of that name"


def test_rooms_outside_every_zone_are_the_ones_to_confirm() -> None:
    assert rooms_to_confirm([watcher()], WORLD.zones) == {99}
    assert rooms_to_confirm([], {}) == set()
