"""The stand-in's contract faults: each kind breaks a reply the way the gate must survive."""

from __future__ import annotations

import json

from storyteller_daemon.agent.verdicts import parse_batch, parse_decision
from storyteller_daemon.bench.contract_faults import ContractFaults

ATTEND = [(2, "a theft")]
IGNORE = [1, 3, 4]
IDS = ["1", "2", "3", "4"]


def broken(kind: str, *, after: int = 0) -> str:
    """A batch reply broken with `kind` (the first fault the seeded choices make of it)."""
    for seed in range(200):
        faults = ContractFaults(1.0, seed)
        for _ in range(after):
            faults.batch(ATTEND, IGNORE, 4)
        faults.made.clear()
        text = faults.batch(ATTEND, IGNORE, 4)
        if faults.made[kind]:
            return text
    raise AssertionError(f"no seed made {kind}")


def test_no_share_no_fault() -> None:
    faults = ContractFaults(0.0, 1)
    reply = parse_batch(faults.batch(ATTEND, IGNORE, 4), IDS)
    assert reply.problems == [] and reply.verdicts["2"].interested
    assert parse_decision(faults.alone(True, "a theft"), "1").verdicts["1"].interested
    assert not faults.made


def test_ids_across_batches_name_ids_the_request_never_held() -> None:
    reply = parse_batch(broken("ids_across_batches", after=1), IDS)
    assert reply.verdicts == {} and sorted(reply.unresolved) == IDS
    assert any("unknown id '6' in attend" in p for p in reply.problems)


def test_a_wrong_id_spoils_only_the_attended_event() -> None:
    reply = parse_batch(broken("wrong_id"), IDS)
    assert reply.unresolved == ["2"] and set(reply.verdicts) == {"1", "3", "4"}


def test_junk_in_ignore_keeps_the_attended_verdicts() -> None:
    text = broken("junk_ignore")
    assert json.loads(text)["ignore"] == "n/a"
    reply = parse_batch(text, IDS)
    assert reply.verdicts["2"].interested and reply.unresolved == ["1", "3", "4"]


def test_a_truncated_reply_is_not_valid_json() -> None:
    text = broken("truncated")
    reply = parse_batch(text, IDS)
    assert any("not valid JSON" in p for p in reply.problems)
    assert len(reply.verdicts) + len(reply.unresolved) == 4


def test_the_share_of_faults_is_about_the_share_asked() -> None:
    faults = ContractFaults(0.1, 3)
    for _ in range(2000):
        faults.batch(ATTEND, IGNORE, 4)
    assert 150 < sum(faults.made.values()) < 250
    assert set(faults.made) == {"ids_across_batches", "wrong_id", "junk_ignore", "truncated"}
