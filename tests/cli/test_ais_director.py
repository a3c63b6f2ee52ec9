"""``ais set REF direction|pacing|provider``, ``ais plan list|show`` and ``ais claim list``."""

from __future__ import annotations

from datetime import timedelta

from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.domain.story_plans import PlanStep
from storyteller_daemon.storage.store import Store

cli = cli_fixture("Watcher", "Crier")


def test_direction_pacing_and_providers_are_set_and_shown(cli: Cli) -> None:
    assert "Plans: no" in cli.ok("ais", "show", "Watcher")
    cli.ok("ais", "set", "Watcher", "direction", "plans", "on")
    cli.ok("ais", "set", "Watcher", "direction", "cooperate", "yes")
    assert cli.ok("ais", "set", "Watcher", "pacing", "room-gap-seconds", "300") == (
        "Storyteller Watcher pacing room_gap_seconds is now 300.\n"
    )
    cli.ok("ais", "set", "Watcher", "pacing", "quiet_hours", "22:00-06:00")
    cli.ok("ais", "set", "Watcher", "provider", "add", "house-rules", "text", "200", "Be", "kind.")
    cli.ok("ais", "set", "Watcher", "provider", "add", "digest", "digest", "400")
    query = "SELECT title FROM situations WHERE storyteller_id = :storyteller_id"
    cli.ok("ais", "set", "Watcher", "provider", "add", "threads", "query", "150", query)
    shown = cli.show("Watcher")["direction"]
    assert shown["plans"] and shown["cooperates"]
    assert shown["pacing"]["room_gap_seconds"] == 300
    assert shown["pacing"]["quiet_hours"] == "22:00-06:00"
    assert [(p["name"], p["kind"], p["budget_tokens"]) for p in shown["providers"]] == [
        ("house-rules", "text", 200), ("digest", "digest", 400), ("threads", "query", 150),
    ]  # fmt: skip
    text = cli.ok("ais", "show", "Watcher")
    assert "Pacing: room_gap_seconds 300" in text and "  1. house-rules (text, 200 tokens)" in text
    document = cli.ok("ais", "export", "Watcher", "--part", "tools")
    cli.ok("ais", "import", "Crier", "--part", "tools", "-", input=document)
    assert cli.show("Crier")["direction"] == shown
    cli.ok("ais", "set", "Watcher", "provider", "remove", "digest")
    assert len(cli.show("Watcher")["direction"]["providers"]) == 2
    cli.ok("ais", "set", "Watcher", "pacing", "quiet_hours", "off")
    assert cli.show("Watcher")["direction"]["pacing"]["quiet_hours"] == ""


def test_bad_direction_settings_are_refused_with_one_line(cli: Cli) -> None:
    assert "not a pacing setting" in cli.fails("ais", "set", "Watcher", "pacing", "speed", "9")
    assert "is not HH:MM-HH:MM" in cli.fails(
        "ais", "set", "Watcher", "pacing", "quiet_hours", "late"
    )
    assert "must be a whole number" in cli.fails(
        "ais", "set", "Watcher", "pacing", "daily_actions", "many"
    )
    assert "must be one SELECT statement" in cli.fails(
        "ais", "set", "Watcher", "provider", "add", "wipe", "query", "100", "DELETE FROM runs"
    )
    assert "single statement" in cli.fails(
        "ais", "set", "Watcher", "provider", "add", "two", "query", "100", "SELECT 1; SELECT 2"
    )
    assert "is not on or off" in cli.fails("ais", "set", "Watcher", "direction", "plans", "maybe")


def test_plans_and_claims_are_listed_and_shown(cli: Cli) -> None:
    assert cli.ok("ais", "plan", "list") == "No story plans.\n"
    sid = int(cli.show("Watcher")["id"])

    async def plan(store: Store) -> int:
        made = await store.plans.create(
            sid, "Find the ledger", (PlanStep("Noop", "Wait"), PlanStep("Noop", "Wait more")),
            expires_in=timedelta(hours=3),
        )  # fmt: skip
        await store.plans.step_failed(sid, made.id, reason="The quay flooded.")
        await store.plans.replan(sid, made.id, (PlanStep("Noop", "Try later"),), reason="Tide")
        await store.claims.claim(sid, 101, minutes=10, reason="A duel")
        return made.id

    plan_id = cli.with_store(plan)
    [listed] = cli.json("ais", "plan", "list", "Watcher")
    assert listed["id"] == plan_id and listed["status"] == "active" and listed["due_step"] == 2
    assert [h["action"] for h in listed["history"]] == ["created", "step_failed", "replanned"]
    shown = cli.ok("ais", "plan", "show", str(plan_id))
    assert "step 1: The quay flooded." in shown and "replanned step 2: Tide" in shown
    assert cli.json("ais", "plan", "list", "Crier") == []
    [claim] = cli.json("ais", "claim", "list")
    assert claim["room_id"] == 101 and claim["storyteller"]["name"] == "Watcher"
    assert "A duel" in cli.ok("ais", "claim", "list")
    assert "No story plan with id 999" in cli.fails("ais", "plan", "show", "999")
