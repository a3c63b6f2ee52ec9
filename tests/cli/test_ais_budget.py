"""``storyteller ais set REF budget USD|default`` and how ``ais show`` reports the daily budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ais_harness import Cli, cli_fixture

cli = cli_fixture("Watcher", "Crier")


@pytest.fixture(autouse=True)
def configured_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration that caps Watcher at $3 and every other storyteller at $1."""
    config = tmp_path / "storyteller.toml"
    config.write_text(
        '[budgets]\nstoryteller_daily_usd = 1.0\nstoryteller_overrides = { "watcher" = 3.0 }\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("STORYTELLER_CONFIG", str(config))


def test_set_show_and_back_to_the_configuration(cli: Cli) -> None:
    assert cli.show(1)["budget"] == {"daily_usd": 3.0, "setting": None}
    assert "Daily budget: $3.00 a day (from the configuration)" in cli.ok("ais", "show", "1")

    assert cli.ok("ais", "set", "Watcher", "budget", "$0.50").rstrip() == (
        "Storyteller Watcher's daily budget: $0.50 a day (its own setting; "
        "'ais set 1 budget default' returns to the configuration)."
    )
    assert cli.show(1)["budget"] == {"daily_usd": 0.5, "setting": 0.5}
    assert "Daily budget: $0.50 a day (its own setting" in cli.ok("ais", "show", "Watcher")
    assert cli.show(2)["budget"] == {"daily_usd": 1.0, "setting": None}  # the other one

    cli.ok("ais", "set", "1", "dailybudget", "0")
    assert cli.show(1)["budget"] == {"daily_usd": 0.0, "setting": 0.0}
    assert "Daily budget: no cap (its own setting" in cli.ok("ais", "show", "1")

    revision = cli.show(1)["revision"]
    assert "(from the configuration)" in cli.ok("ais", "set", "1", "budget", "default")
    assert cli.show(1)["budget"] == {"daily_usd": 3.0, "setting": None}
    assert cli.show(1)["revision"] == revision + 1  # how a running daemon notices
    audit = cli.json("audit", "list")
    assert [(e["action"], e["subject"], e["detail"]) for e in audit] == [
        ("set_budget", "storyteller 1", {"daily_usd": None}),
        ("set_budget", "storyteller 1", {"daily_usd": 0.0}),
        ("set_budget", "storyteller 1", {"daily_usd": 0.5}),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "A daily budget must be 0 or more USD (0: no cap), not -1."),
        ("lots", "'lots' is not a budget; give USD a day (0: no cap) or 'default'."),
        ("nan", "A daily budget must be 0 or more USD (0: no cap), not nan."),
    ],
)
def test_a_bad_budget_is_refused_and_changes_nothing(cli: Cli, value: str, message: str) -> None:
    assert cli.fails("ais", "set", "Watcher", "budget", value) == message


def test_the_budget_travels_with_ais_export_and_import(cli: Cli) -> None:
    cli.ok("ais", "set", "Watcher", "budget", "0.75")
    document = cli.ok("ais", "export", "Watcher", "--part", "tools")
    assert "<DailyBudgetUsd>0.75</DailyBudgetUsd>" in document
    cli.ok("ais", "import", "Crier", "--part", "tools", "-", input=document)
    assert cli.show("Crier")["budget"] == {"daily_usd": 0.75, "setting": 0.75}
