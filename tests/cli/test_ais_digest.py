"""``storyteller ais digest show|refresh``: the digest from the shell, through the real SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_ais_harness import Cli, cli_fixture
from test_runs import server_in_thread

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.domain.situations import Provenance
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.responses_answers import Reply

cli = cli_fixture("Harbour Watch")

DIGEST = "- Wren robbed Maren on the quay (situation #1)."


def config_file(tmp_path: Path, base_url: str) -> str:
    path = tmp_path / "storyteller.toml"
    path.write_text(
        "[model]\n"
        'api_key_env = "DIGEST_TEST_KEY"\n'
        f'base_url = "{base_url}"\n'
        "[model.prices.gpt-5-mini]\ninput = 0.25\noutput = 2.0\n"
        "[reflection]\n"
        'model = "gpt-5-mini"\n',
        encoding="utf-8",
    )
    return str(path)


def happen(cli: Cli) -> None:
    async def work(store: Store) -> None:
        await store.situations.create(
            1, "Cutpurse on the quay", "Wren robbed Maren.", provenance=Provenance(from_player=True)
        )
        for _ in range(2):
            await store.memories.create(1, 7, "Wren", "Wren stole a purse from Maren.")

    cli.with_store(work)


def test_show_before_the_first_digest(cli: Cli) -> None:
    assert cli.ok("ais", "digest", "show", "harbour watch") == (
        "Harbour Watch has no digest yet: one is written once it has been idle after something "
        "happened, or by `storyteller ais digest refresh 1`.\n"
    )
    assert cli.json("ais", "digest", "show", "1") == {
        "storyteller": {"id": 1, "name": "Harbour Watch"},
        "digest": None,
    }
    assert cli.fails("ais", "digest", "show", "Nobody") == (
        "No storyteller with id or name 'Nobody' exists."
    )


def test_refresh_merges_memories_asks_the_model_and_records_the_run(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    happen(cli)
    monkeypatch.setenv("DIGEST_TEST_KEY", "test-key")
    usage = Usage(2000, 0, 400, 0)
    with server_in_thread(lambda body: Reply.text(DIGEST, usage=usage)) as server:
        config = config_file(tmp_path, server.base_url)
        out = cli.ok("--config", config, "ais", "digest", "refresh", "1")
        again = cli.ok("--config", config, "ais", "digest", "refresh", "1")
        bodies: list[dict[str, Any]] = list(server.requests)
    assert out.splitlines() == [
        "Merged memories #2 into #1 (character #7).",
        "Refreshed the digest of Harbour Watch from 1 open situation(s) and 2 memory change(s) "
        "($0.0006); `storyteller ais digest show 1` shows it.",  # at the flex tier's price
    ]
    assert again == (
        "The digest of Harbour Watch is unchanged: nothing happened since it was written "
        "(--force rewrites it).\n"
    )
    [body] = bodies  # the second refresh asked nothing
    assert body["model"] == "gpt-5-mini" and "tools" not in body
    assert body["service_tier"] == "flex"  # non-urgent work asks for the cheaper tier
    assert "(from players)" in body["input"][0]["content"]

    shown = cli.ok("ais", "digest", "show", "1").splitlines()
    assert shown[0] == "Digest of Harbour Watch (#1)"
    assert shown[-1] == DIGEST
    data = cli.json("ais", "digest", "show", "1")
    assert data["digest"]["text"] == DIGEST
    [run] = cli.json("runs", "list", "--kind", "digest")
    assert data["digest"]["run_key"] == run["turn_key"]
    assert (run["outcome"], run["trigger"]["label"]) == ("refreshed", "Digest refresh")
    transcript = cli.ok("runs", "show", str(run["id"]))
    assert transcript.startswith("Run #1: digest refresh of Harbour Watch (#1)")
    assert "Outcome:   refreshed" in transcript and f"  | {DIGEST}" in transcript
    purposes = cli.json("costs", "--by", "purpose")["lines"]
    assert [(line["key"], line["requests"]) for line in purposes] == [("digest", 1)]
    assert len(cli.json("ais", "memory", "list", "1")) == 1


def test_refresh_json_and_without_a_model(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    happen(cli)
    monkeypatch.delenv("DIGEST_TEST_KEY", raising=False)
    config = config_file(tmp_path, "http://127.0.0.1:9/v1")
    result = cli.run("--config", config, "ais", "digest", "refresh", "1", "--json")
    assert result.exit_code == 69
    assert result.stderr == (
        "error: The digest of Harbour Watch was not refreshed: no model is configured (set "
        "DIGEST_TEST_KEY); the old one stays.\n"
    )
    report = json.loads(result.stdout)
    assert report["outcome"] == "no_model" and report["digest"] is None
    assert report["merges"] == [{"character_id": 7, "kept": 1, "merged": [2]}]
    assert report["changes"] == {
        "resolved_situations": 0,
        "open_situations": 1,
        "turns": 0,
        "memory_changes": 2,
    }


def test_the_digest_model_runs_on_its_own_endpoint_without_reasoning_fields(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    happen(cli)
    monkeypatch.setenv("DIGEST_TEST_KEY", "test-key")
    with server_in_thread(lambda body: Reply.text(DIGEST), reasoning=False) as local:
        path = tmp_path / "local.toml"
        path.write_text(
            "[model]\n"
            'api_key_env = "DIGEST_TEST_KEY"\n'
            'base_url = "http://127.0.0.1:9/v1"\n'  # never contacted: no turn runs here
            "[endpoints.local]\n"
            f'base_url = "{local.base_url}"\n'
            '[models."llama3.2"]\n'
            'endpoint = "local"\n'
            "[reflection]\n"
            'model = "llama3.2"\n'
            'reasoning_effort = "high"\n',
            encoding="utf-8",
        )
        out = cli.ok("--config", str(path), "ais", "digest", "refresh", "1")
        bodies: list[dict[str, Any]] = list(local.requests)
    assert "Refreshed the digest of Harbour Watch" in out and "($0.0000)" in out  # no price
    [body] = bodies
    assert body["model"] == "llama3.2"
    assert not {"reasoning", "include", "prompt_cache_key"} & set(body)
