"""Context providers: each feeds the prompt within its budget, in order, and into the run
record; one that fails leaves a marked gap and the turn goes on."""

from __future__ import annotations

from director_rig import Rig, director_rig

from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.direction import ContextProvider, ProviderKind
from storyteller_daemon.testing.clock import FakeClock

THREADS = "SELECT title FROM situations WHERE storyteller_id = :storyteller_id ORDER BY id"
PROVIDERS = (
    ContextProvider("house-rules", ProviderKind.TEXT, 100, "The watch never takes bribes."),
    ContextProvider("watch-status", ProviderKind.PROG, 200, "HarbourWatchStatus"),
    ContextProvider("threads", ProviderKind.QUERY, 150, THREADS),
    ContextProvider("digest", ProviderKind.DIGEST, 300),
)


def prompt_of(rig: Rig) -> str:
    content = rig.model.requests[-1].input[0]["content"]
    assert isinstance(content, str)
    return content


async def test_each_provider_feeds_the_prompt_and_the_run_record(db_url: str) -> None:
    async with director_rig(db_url, plans=False, providers=PROVIDERS) as rig:
        sid = rig.teller.id or 0
        await rig.store.situations.create(sid, "Smugglers at the quay", "A boat at night.")
        await rig.store.digests.save(
            Digest(sid, "The smugglers came back.", "f", "d-1", rig.clock.now())
        )
        record = await rig.beat()
        assert record.outcome.value == "noop"
        prompt = prompt_of(rig)
        stable = (await rig.last_run())["prompt_budget"]["stable_chars"]
        assert prompt.index("Context from house-rules:") < stable  # static text: stable part
        assert "The watch never takes bribes." in prompt
        assert "Context from watch-status:" in prompt[stable:]
        assert "title\nSmugglers at the quay" in prompt
        assert "The smugglers came back." in prompt
        run = await rig.last_run()
        outputs = {p["name"]: p for p in run["direction"]["providers"]}
        assert list(outputs) == ["house-rules", "watch-status", "threads", "digest"]
        assert all(p["ok"] for p in outputs.values())
        assert outputs["threads"]["text"] == "title\nSmugglers at the quay"
        blocks = {b["name"]: b for b in run["prompt_budget"]["blocks"]}
        assert blocks["provider threads"]["kept"] == 1 and blocks["digest"]["kept"] == 1


async def test_a_provider_is_cut_to_its_budget(sqlite_url: str) -> None:
    long_text = "The harbour rules are many. " * 120
    tight = (ContextProvider("rules", ProviderKind.TEXT, 40, long_text),)
    async with director_rig(sqlite_url, plans=False, providers=tight) as rig:
        await rig.beat()
        assert "[Cut to the provider's budget.]" in prompt_of(rig)
        block = next(
            b for b in (await rig.last_run())["prompt_budget"]["blocks"]
            if b["name"] == "provider rules"
        )  # fmt: skip
        assert block["cut"] and block["tokens"] <= 40


async def test_failing_providers_leave_marked_gaps_not_failed_turns(db_url: str) -> None:
    failing = (
        ContextProvider("missing-prog", ProviderKind.PROG, 100, "NoSuchProg"),
        ContextProvider("bad-query", ProviderKind.QUERY, 100, "SELECT nothing FROM nowhere"),
        ContextProvider("fine", ProviderKind.TEXT, 100, "Still here."),
    )
    async with director_rig(db_url, plans=False, providers=failing) as rig:
        record = await rig.beat()
        assert record.outcome.value == "noop" and record.error is None
        prompt = prompt_of(rig)
        assert "[Context provider missing-prog unavailable:" in prompt
        assert "[Context provider bad-query unavailable: The query failed" in prompt
        assert "Still here." in prompt
        outputs = (await rig.last_run())["direction"]["providers"]
        assert [(p["name"], p["ok"]) for p in outputs] == [
            ("missing-prog", False), ("bad-query", False), ("fine", True),
        ]  # fmt: skip


async def test_without_a_digest_provider_the_listed_providers_leave_the_digest_out(
    sqlite_url: str,
) -> None:
    only_text = (ContextProvider("rules", ProviderKind.TEXT, 100, "Be brief."),)
    async with director_rig(sqlite_url, plans=False, providers=only_text) as rig:
        sid = rig.teller.id or 0
        await rig.store.digests.save(
            Digest(sid, "The smugglers came back.", "f", "d-1", rig.clock.now())
        )
        await rig.beat()
        assert "The smugglers came back." not in prompt_of(rig)
        assert "Be brief." in prompt_of(rig)


async def test_a_provider_turn_replays_identically(sqlite_url: str) -> None:
    from storyteller_daemon.config import LimitsConfig
    from storyteller_daemon.runs import replay_turn
    from storyteller_daemon.runtime.turns import replay_runner
    from storyteller_daemon.storage.runs import RunRepository

    async with director_rig(sqlite_url, plans=False, providers=PROVIDERS) as rig:
        await rig.beat()
        runs = RunRepository(rig.store.db)
        newest = (await runs.list(kind="turn"))[0]
        stored = await runs.get(newest.id)
        report = await replay_turn(
            newest.id,
            stored.record,
            rig.teller,
            LimitsConfig(),
            runner=replay_runner,
            clock=FakeClock(),
        )
        assert report.identical, report.differences
