"""Room echoes the world marks as ambience are ignored by rule, without a model call; the flag
never settles speech or crimes, an admin's rule or the reference design; it crosses the bridge
and the sim's stream sets it on its background."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from test_pipeline import AT_ONCE, WATCHER, Harness, crime, echo

from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.storage.store import Store
from world_adapter.bridge.wire import parse_frame
from world_adapter.codec import decode_event, encode_event
from world_adapter.events import Cursor, RoomEcho, Speech
from world_adapter.sim.stream import AMBIENT_TAGS, labelled_stream

GULLS = "Gulls wheel and cry over the quay."
LISTENER = replace(WATCHER, subscriptions=WATCHER.subscriptions | {EventKind.SPEECH})


def ambient(seq: int = 1, text: str = GULLS) -> RoomEcho:
    return replace(echo(seq=seq, text=text), ambience=True)


@pytest.fixture
async def harness(sqlite_store: Store) -> AsyncIterator[Harness]:
    h = Harness(sqlite_store)
    try:
        yield h
    finally:
        await h.crash()


async def test_an_ambient_echo_is_ignored_by_rule_and_a_plain_one_is_judged(
    harness: Harness,
) -> None:
    rig = await harness.start(storytellers=[LISTENER])
    rig.runner.verdict = AttentionVerdict(False)
    await rig.pipeline.accept([ambient(1)])
    await rig.pipeline.wait_idle()
    assert rig.runner.judged == []
    [item] = await rig.backlog.items(1)
    assert (item.state, item.rule) == (WorkState.IGNORED, "ambience")
    assert item.reason == "the world marks it as ambience"
    assert rig.pipeline.stats.filtered["ambience"] == 1

    await rig.pipeline.accept([echo(seq=2, text="A knife flashes in the lane.")])
    await rig.pipeline.wait_idle()
    assert [len(batch) for batch in rig.runner.judged] == [1]


async def test_the_flag_never_settles_speech_or_crimes(harness: Harness) -> None:
    rig = await harness.start(storytellers=[LISTENER])
    said = Speech(
        cursor=Cursor("e", 1),
        cell_id=101,
        zone_id=1,
        occurred_at=echo().occurred_at,
        speaker_id=1001,
        speaker_name="Lucan",
        text="Meet me at the dead drop.",
        ambience=True,
    )
    await rig.pipeline.accept([said, replace(crime(2), ambience=True)])
    await rig.pipeline.wait_idle()
    judged = rig.runner.judged_triggers
    assert sorted(t.kind.value for t in judged) == ["crime", "speech"]
    assert all(i.rule is None for i in await rig.backlog.items(1))
    assert "ambience" not in rig.pipeline.stats.filtered


async def test_an_attention_rule_comes_before_the_flag(harness: Harness) -> None:
    watcher = replace(
        WATCHER, attention_rules=(AttentionRule("gulls", RuleAction.ATTEND, pattern="gulls"),)
    )
    rig = await harness.start(storytellers=[watcher])
    await rig.pipeline.accept([ambient(1)])
    await rig.pipeline.wait_idle()
    [item] = await rig.backlog.items(1)
    assert item.rule == "rule:gulls" and item.state is WorkState.DONE


async def test_the_reference_design_judges_ambience_too(harness: Harness) -> None:
    rig = await harness.start(AT_ONCE.model_copy(update={"one_call_per_event": True}))
    rig.runner.verdict = AttentionVerdict(False)
    await rig.pipeline.accept([ambient(1)])
    await rig.pipeline.wait_idle()
    assert len(rig.runner.judged) == 1
    [item] = await rig.backlog.items(1)
    assert item.rule is None and item.state is WorkState.IGNORED


def test_the_flag_crosses_the_bridge_and_defaults_to_false() -> None:
    frame = (
        '{"type": "event", "cursor": {"epoch": "e", "seq": 3}, "kind": "room_echo", '
        '"cell_id": 101, "zone_id": 1, "occurred_at": "2026-11-22T18:04:09Z", '
        f'"ambience": true, "text": "{GULLS}"}}'
    )
    event = parse_frame(frame, strict=True).event  # type: ignore[union-attr]
    assert isinstance(event, RoomEcho) and event.ambience
    assert decode_event(encode_event(event)) == event
    plain = encode_event(echo())
    del plain["ambience"]
    assert decode_event(plain).ambience is False


def test_the_sim_stream_marks_its_background_as_ambience() -> None:
    stream = labelled_stream(seed=3, hours=0.2)
    marked = {item.tag for item in stream if item.event.ambience}
    assert marked == set(AMBIENT_TAGS)
    assert not any(item.relevant for item in stream if item.event.ambience)
    assert all(item.event.ambience for item in stream if item.tag in AMBIENT_TAGS)
