"""The Evennia bridge's journals, without Evennia: a stream and prog outcomes that outlive the
Server process (``evennia reload``, restarts), and the losses that must still show as gaps."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from world_adapter.bridges.evennia.eventlog import EventLog
from world_adapter.bridges.evennia.executor import ProgExecutor
from world_adapter.bridges.evennia.journal import EVENTS_FILE, KEYS_FILE, EventJournal, KeyJournal
from world_adapter.bridges.evennia.registry import (
    ProgError,
    ProgRegistry,
    ResultStore,
    storyteller_prog,
)
from world_adapter.bridges.evennia.replaybuffer import Cursor, Start


class Clock:
    def __init__(self, now: float = 1_795_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


Server = Callable[..., EventLog]


@pytest.fixture
def server() -> Iterator[Server]:
    """Builds what one Server process builds at start; closes every journal afterwards."""
    logs: list[EventLog] = []

    def start(directory: Path, capacity: int = 10) -> EventLog:
        log = EventLog.kept_in(EventJournal(directory, capacity), capacity, clock=Clock())
        logs.append(log)
        return log

    yield start
    for log in logs:
        log.close()


def _texts(log: EventLog, after: int = 0) -> list[tuple[int, str]]:
    return [(seq, frame["text"]) for seq, frame in log.held_after(after, 1000)]


def test_a_new_server_continues_the_epoch_and_holds_every_event(
    tmp_path: Path, server: Server
) -> None:
    first = server(tmp_path)
    for text in "abc":
        first.append({"kind": "room_echo", "cell_id": 2, "text": text})
    cursor = Cursor(first.epoch, 1)  # the daemon had stored only the first event
    first.close()

    second = server(tmp_path)
    assert (second.epoch, second.last_seq, second.restored) == (first.epoch, 3, True)
    assert second.start(cursor) == Start(1)  # no gap
    assert _texts(second, 1) == [(2, "b"), (3, "c")]
    assert second.append({"text": "d"})["cursor"] == {"epoch": first.epoch, "seq": 4}
    second.close()

    third = server(tmp_path)
    assert _texts(third) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert third.held_after(0, 1)[0][1] == {
        "type": "event",
        "cursor": {"epoch": first.epoch, "seq": 1},
        "kind": "room_echo",
        "cell_id": 2,
        "text": "a",
        "occurred_at": "2026-11-18T11:06:40Z",
    }


def test_without_the_journal_a_new_epoch_begins_and_old_cursors_gap(
    tmp_path: Path, server: Server
) -> None:
    first = server(tmp_path)
    first.append({"text": "a"})
    first.close()
    (tmp_path / EVENTS_FILE).unlink()

    second = server(tmp_path)
    assert second.epoch != first.epoch and not second.restored
    start = second.start(Cursor(first.epoch, 1))
    assert start.gap is not None and start.gap.reason == "epoch"


def test_a_journal_of_another_kind_is_not_continued(tmp_path: Path, server: Server) -> None:
    (tmp_path / EVENTS_FILE).write_text('{"journal": "something else"}\n')
    log = server(tmp_path)
    assert not log.restored and log.last_seq == 0
    header = json.loads((tmp_path / EVENTS_FILE).read_text().splitlines()[0])
    assert header == {"journal": "events", "version": 1, "epoch": log.epoch, "after": 0}


def test_events_that_left_the_buffer_still_gap_after_a_restart(
    tmp_path: Path, server: Server
) -> None:
    first = server(tmp_path, capacity=3)
    for text in "abcde":
        first.append({"text": text})
    first.close()
    second = server(tmp_path, capacity=3)
    assert _texts(second) == [(3, "c"), (4, "d"), (5, "e")]
    expired = second.start(Cursor(first.epoch, 1))
    assert expired.gap is not None
    assert (expired.gap.reason, expired.gap.resume_after) == ("expired", Cursor(first.epoch, 2))


def test_a_torn_last_line_is_ignored_and_numbering_continues_after_it(
    tmp_path: Path, server: Server
) -> None:
    first = server(tmp_path)
    first.append({"text": "a"})
    first.append({"text": "b"})
    first.close()
    path = tmp_path / EVENTS_FILE
    with path.open("a") as handle:
        handle.write('{"type": "event", "cursor": {"epoch": "')  # the process died here
    second = server(tmp_path)
    assert _texts(second) == [(1, "a"), (2, "b")]
    assert second.append({"text": "c"})["cursor"]["seq"] == 3
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_the_journal_is_rewritten_to_the_held_events_as_it_grows(
    tmp_path: Path, server: Server
) -> None:
    log = server(tmp_path, capacity=2)
    for n in range(20):
        log.append({"text": str(n)})
        lines = (tmp_path / EVENTS_FILE).read_text().splitlines()
        assert len(lines) <= 1 + 2 * 2 + 2  # header, at most twice the capacity and one more
    log.close()
    again = server(tmp_path, capacity=2)
    assert _texts(again) == [(19, "18"), (20, "19")]
    assert again.last_seq == 20


def test_a_journal_that_cannot_be_written_is_removed_so_the_next_start_gaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    log = server(tmp_path)
    log.append({"text": "a"})

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    frame = log.append({"text": "b"})  # still held and sent
    monkeypatch.undo()
    assert _texts(log) == [(1, "a"), (2, "b")] and frame["cursor"]["seq"] == 2
    assert not (tmp_path / EVENTS_FILE).exists()
    assert server(tmp_path).epoch != log.epoch


# ---------------------------------------------------------------- prog outcomes


def _outcomes(directory: Path, clock: Clock, capacity: int = 2) -> ResultStore:
    return ResultStore(capacity, keep_seconds=3600, journal=KeyJournal(directory), clock=clock)


def _outcome(value: Any) -> dict[str, Any]:
    return {"prog": "EchoToRoom", "return_type": "Boolean", "value": value}


def test_outcomes_survive_a_restart_for_at_least_an_hour(tmp_path: Path) -> None:
    clock = Clock()
    store = _outcomes(tmp_path, clock)
    for n in range(4):  # more than the capacity, all within the hour
        store.put(f"k{n}", _outcome(n))
        clock.now += 60
    store.close()

    clock.now += 3000  # k0 is now 3240 s old, k3 3060 s
    again = _outcomes(tmp_path, clock)
    assert [again.get(f"k{n}") for n in range(4)] == [_outcome(n) for n in range(4)]
    again.close()

    clock.now += 500  # past the hour: only the newest `capacity` stay
    later = _outcomes(tmp_path, clock)
    assert [later.get(f"k{n}") is not None for n in range(4)] == [False, False, True, True]
    assert len(later) == 2
    later.close()


def test_the_outcome_file_is_rewritten_as_it_grows_and_stays_bounded(tmp_path: Path) -> None:
    clock = Clock()
    store = ResultStore(2, keep_seconds=0, max_entries=3, journal=KeyJournal(tmp_path), clock=clock)
    for n in range(30):
        store.put(f"k{n}", _outcome(n))
        clock.now += 1
        assert len((tmp_path / KEYS_FILE).read_text().splitlines()) <= 2 * 2 + 2
    assert len(store) == 2
    store.close()
    assert [k for k, _, _ in KeyJournal(tmp_path).load()][-2:] == ["k28", "k29"]
    with pytest.raises(ValueError, match="max_entries"):
        ResultStore(5, max_entries=4)


def test_a_key_sent_again_after_a_restart_replays_the_stored_outcome(tmp_path: Path) -> None:
    registry = ProgRegistry()
    runs: list[str] = []

    @storyteller_prog(name="Ring", params=[("Text", "Text")], returns="Text", registry=registry)
    def ring(text: str) -> str:
        runs.append(text)
        return text.upper()

    def invoke(call: Any, on_value: Any, on_error: Any) -> None:
        on_value(call())

    replies: list[tuple[dict[str, Any] | None, ProgError | None]] = []
    clock = Clock()
    before = ProgExecutor(
        registry, _outcomes(tmp_path, clock), lookup=lambda t, i: None, invoke=invoke
    )
    before.execute("Ring", {"Text": "bell"}, "turn-1-call-1", lambda o, e: replies.append((o, e)))
    before.results.close()
    clock.now += 1800
    after = ProgExecutor(
        registry, _outcomes(tmp_path, clock), lookup=lambda t, i: None, invoke=invoke
    )
    after.execute("Ring", {"Text": "bell"}, "turn-1-call-1", lambda o, e: replies.append((o, e)))
    after.results.close()
    assert runs == ["bell"]
    stored = {"prog": "Ring", "return_type": "Text", "value": "BELL"}
    assert replies == [({**stored, "replayed": False}, None), ({**stored, "replayed": True}, None)]


def test_without_sync_events_are_still_in_the_file_for_the_next_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = EventLog.kept_in(EventJournal(tmp_path, 10, sync=False), 10, clock=Clock())
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    log.append({"text": "a"})
    monkeypatch.undo()
    log.close()
    assert synced == []
    again = EventLog.kept_in(EventJournal(tmp_path, 10), 10, clock=Clock())
    assert (again.epoch, _texts(again)) == (log.epoch, [(1, "a")])
    again.close()
