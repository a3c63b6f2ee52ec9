"""The harbour-director pack: a plan-driven storyteller with pacing and context providers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storyteller_daemon.bundled import bundled_dir
from storyteller_daemon.domain.direction import ProviderKind
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store


async def test_the_director_pack_loads_a_storyteller_that_plans(sqlite_store: Store) -> None:
    await load_pack(sqlite_store.db, read_pack("harbour-director"), clock=sqlite_store.clock)
    st = await sqlite_store.storytellers.get("Harbour Ward Director")
    d = st.direction
    assert d.plans and not d.cooperates and st.paused
    assert d.pacing.room_gap_seconds == 600 and d.pacing.intensity_peak == 4.0
    assert [p.kind for p in d.providers] == [
        ProviderKind.TEXT, ProviderKind.PROG, ProviderKind.QUERY, ProviderKind.DIGEST,
    ]  # fmt: skip
    rows = await sqlite_store.queries.select(
        d.providers[2].source, {"storyteller_id": st.id, "room_id": None, "now": ""}
    )
    assert rows.columns == ("title",)  # the pack's query runs on the real schema


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("room_gap_seconds = 600", "room_gap_seconds = -5", "must not be negative"),
        ("room_gap_seconds = 600", "room_gap_seconds = 600\nspeed = 3", "unknown key"),
        ('kind = "query"', 'kind = "shell"', "is not a provider kind"),
        ("SELECT title FROM", "DELETE FROM situations WHERE 1 = 1 AND title IN (SELECT title FROM",
         "one SELECT statement"),
    ],
)  # fmt: skip
def test_a_bad_direction_in_a_pack_is_refused(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    pack = tmp_path / "harbour-director"
    shutil.copytree(bundled_dir("seed") / "harbour-director", pack)
    toml = pack / "pack.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ConfigError, match="direction") as caught:
        read_pack(str(pack))
    assert message in str(caught.value)
