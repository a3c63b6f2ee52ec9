"""With 10,000 memories and 500 open situations a turn's prompt stays within its token budget,
and the start of consecutive turns' request bodies is byte-identical (so a provider can serve
it from its prompt cache), on both backends.

Every number is estimated the way the budget estimates it, from the request bodies the model
was sent, not from the budget's own report.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from storyteller_daemon.agent.context import Priority
from storyteller_daemon.agent.knowledge import MORE_SITUATIONS
from storyteller_daemon.agent.models.interface import api_body
from storyteller_daemon.agent.models.tokens import estimate_tokens
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.models.story import MemoryRow, SituationRow
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, OSRIC, PER, WREN = 1001, 1002, 2003, 2004
BUDGET = 16_000
WORDS = (
    "tide nets harbour debt silver temple smuggler lantern quay ledger cutpurse storm ship "
    "prince claim guard watch rope tavern bell feud dockhand salt tar fish oath knife"
).split()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


async def fill(store: Store, sid: int) -> None:
    """10,000 memories about 200 characters over 60 days, 500 open situations, a digest."""
    rng = random.Random(14)
    characters = [MAREN, OSRIC, PER, WREN, *range(3000, 3196)]
    memories: list[dict[str, Any]] = []
    for n in range(10_000):
        created = T0 - timedelta(minutes=rng.randrange(60 * 24 * 60))
        memories.append(
            {
                "storyteller_id": sid,
                "character_id": rng.choice(characters),
                "title": sentence(rng, 4),
                "text": sentence(rng, rng.randrange(8, 60)),
                "created_on": created,
                "importance": rng.randrange(1, 11),
                "from_player": n % 7 == 0,
                "updated_on": created + timedelta(hours=5) if n % 11 == 0 else None,
            }
        )
    situations: list[dict[str, Any]] = []
    for n in range(500):
        scope = n % 5  # universal, room or character scoped
        situations.append(
            {
                "storyteller_id": sid,
                "title": f"Thread {n}: {sentence(rng, 5)}",
                "text": sentence(rng, 20),
                "created_on": T0 - timedelta(minutes=rng.randrange(60 * 24 * 30)),
                "resolved": False,
                "scope_room_id": 101 + n % 7 if scope in (1, 2) else None,
                "scope_character_id": rng.choice(characters) if scope in (3, 4) else None,
            }
        )
    async with store.db.engine.begin() as conn:
        await conn.execute(insert(MemoryRow), memories)
        await conn.execute(insert(SituationRow), situations)
    digest = "\n\n".join(sentence(rng, 40) for _ in range(12))
    await store.digests.save(Digest(sid, digest, "fingerprint", "digest-run", T0))


def cacheable_start(body: dict[str, Any], stable_chars: int) -> str:
    """A request body as the model reads it (tools, instructions, then input), up to the end
    of the user prompt's stable part."""
    head = json.dumps({"tools": body["tools"], "instructions": body["instructions"]})
    content: str = body["input"][0]["content"]
    return head + content[:stable_chars]


def request_tokens(body: dict[str, Any]) -> int:
    tools = json.dumps(body["tools"], ensure_ascii=False)
    content = body["input"][0]["content"]
    return estimate_tokens(body["instructions"]) + estimate_tokens(tools) + estimate_tokens(content)


async def test_a_large_storyteller_stays_in_budget_with_a_stable_prompt_start(
    store: Store,
) -> None:
    st = await store.storytellers.create("Harbour Watch")
    sid = st.id or 0
    await fill(store, sid)
    world = SimWorld.harbour_town()
    model = ScriptedModel(then=calls(("Noop", {})))
    clock = FakeClock(T0)
    runs = RunRepository(store.db)
    runner = turn_runner(
        store,
        world,
        model,
        "digests",
        limits=LimitsConfig(prompt_max_tokens=BUDGET),
        clock=clock,
        recorder=RunRecorder(runs, LedgerRepository(store.db), clock),
    )
    # Two consecutive turns about different people in different rooms.
    first = Trigger.from_event(world.emote(MAREN, "counts silver from the temple debt."))
    second = Trigger.from_event(world.say(OSRIC, "The smuggler's ship comes at the storm bell."))
    await runner.run_turn(st, first)
    await runner.run_turn(st, second)

    bodies = [api_body(request) for request in model.requests]
    assert len(bodies) == 2
    for body in bodies:
        assert request_tokens(body) <= BUDGET

    records = [(await runs.get(s.id)).record for s in await runs.list(kind="turn")]
    records.sort(key=lambda r: r["trigger"]["occurred_at"])
    budgets = [record["prompt_budget"] for record in records]
    for report in budgets:
        assert report["tokens"] <= BUDGET and not report["over_budget"]
        blocks = {b["name"]: b for b in report["blocks"]}
        assert blocks["memories"]["kept"] > 0 and blocks["memories"]["dropped"] > 0
        assert blocks["situations (remit)"]["kept"] > 0
        assert blocks["digest"]["kept"] == 1 and not blocks["digest"]["cut"]
        assert blocks["events"]["priority"] == Priority.EVENTS and not blocks["events"]["cut"]

    stable = budgets[0]["stable_chars"]
    assert stable == budgets[1]["stable_chars"] > 2000
    first_body, second_body = bodies
    assert cacheable_start(first_body, stable) == cacheable_start(second_body, stable)
    start = first_body["input"][0]["content"][:stable]
    assert "Digest of what has happened so far:" in start and MORE_SITUATIONS in start
    # What follows differs: the triggers' own situations, memories and events.
    rest = [body["input"][0]["content"][stable:] for body in bodies]
    assert rest[0] != rest[1]
    assert "counts silver" in rest[0] and "storm bell" in rest[1]
    assert "about character #1001" in rest[0] and "about character #1002" in rest[1]
