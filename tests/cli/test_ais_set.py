"""``storyteller ais set REF …``: every subcommand but ``tool``, its aliases and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ais_harness import Cli, cli_fixture, use_catalogue

cli = cli_fixture("Watcher", "Crier")


def set_(cli: Cli, *args: str, input: str | None = None) -> str:
    return cli.ok("ais", "set", "Watcher", *args, input=input).rstrip("\n")


def fail(cli: Cli, *args: str) -> str:
    return cli.fails("ais", "set", "Watcher", *args)


def test_name_renames_and_refuses_a_taken_name(cli: Cli) -> None:
    assert set_(cli, "name", "Harbour", "Watcher") == "Storyteller #1 is now named Harbour Watcher."
    assert cli.show(1)["name"] == "Harbour Watcher"
    assert cli.ok("ais", "set", "1", "name", "HARBOUR WATCHER")  # its own name, new case
    assert cli.fails("ais", "set", "1", "name", "crier") == (
        "A storyteller named 'crier' already exists."
    )
    assert cli.fails("ais", "set", "1", "name", "7") == (
        "A storyteller name cannot be only digits; it would be read as an id."
    )


def test_set_on_an_unknown_storyteller_changes_nothing(cli: Cli) -> None:
    assert cli.fails("ais", "set", "99", "subscribe", "speech") == (
        "No storyteller with id or name '99' exists."
    )


def test_description_from_words_file_and_stdin(cli: Cli, tmp_path: Path) -> None:
    assert set_(cli, "description", "Watches", "the", "docks") == (
        "Storyteller Watcher has a new description."
    )
    assert cli.show(1)["description"] == "Watches the docks"
    source = tmp_path / "desc.txt"
    source.write_text("Line one.\nLine two.\n", encoding="utf-8")
    set_(cli, "desc", "--file", str(source))
    assert cli.show(1)["description"] == "Line one.\nLine two.\n"
    set_(cli, "description", "-", input="From stdin.")
    assert cli.show(1)["description"] == "From stdin."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Give the description either as text or with --file, not both or neither."),
        (
            ("text", "--file", "x.txt"),
            "Give the description either as text or with --file, not both or neither.",
        ),
        (
            ("--file", "/nonexistent/desc.txt"),
            "Cannot read /nonexistent/desc.txt: No such file or directory.",
        ),
    ],
)
def test_description_input_errors(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert fail(cli, "description", *args) == message


def test_model_per_scope_with_fallback_and_clear(cli: Cli) -> None:
    assert set_(cli, "model", "gpt-5.1") == "Storyteller Watcher uses gpt-5.1 for event calls."
    set_(cli, "model", "--scope", "classifier", "gpt-5-nano")
    scopes = cli.show(1)["scopes"]
    assert scopes["event"]["model"] == "gpt-5.1"
    assert scopes["time"] == {
        "model": "gpt-5.1",
        "model_setting": None,
        "reasoning": "medium",
        "reasoning_setting": None,
    }
    assert scopes["attention"]["model_setting"] == "gpt-5-nano"
    set_(cli, "model", "-s", "heartbeat", "gpt-5-mini")
    assert cli.show(1)["scopes"]["time"]["model"] == "gpt-5-mini"
    assert set_(cli, "model", "--scope", "time", "--clear") == (
        "Storyteller Watcher uses gpt-5.1 for time calls (falls back to the event model)."
    )
    assert cli.show(1)["scopes"]["time"]["model_setting"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--scope", "weekly", "gpt-5"), "'weekly' is not a scope; use event, time or attention."),
        (("--clear",), "The event model has no fallback; give a model name instead."),
        (("--scope", "time"), "Give either a model name or --clear."),
        (("--scope", "time", "--clear", "gpt-5"), "Give either a model name or --clear."),
    ],
)
def test_model_errors(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert fail(cli, "model", *args) == message


def test_reasoning_accepts_names_and_codes_per_scope(cli: Cli) -> None:
    assert (
        set_(cli, "reasoning", "HIGH") == "Storyteller Watcher uses high reasoning for event calls."
    )
    set_(cli, "effort", "--scope", "time", "0")
    set_(cli, "effort", "--scope", "attention", "3")
    scopes = cli.show(1)["scopes"]
    assert [scopes[s]["reasoning"] for s in ("event", "time", "attention")] == [
        "high",
        "minimal",
        "high",
    ]
    assert set_(cli, "reasoning", "--scope", "attention", "--clear") == (
        "Storyteller Watcher uses low reasoning for attention calls "
        "(falls back to the default, low)."
    )
    assert cli.show(1)["scopes"]["attention"]["reasoning_setting"] is None


def test_a_storyteller_can_choose_no_reasoning(cli: Cli) -> None:
    assert set_(cli, "reasoning", "none") == (
        "Storyteller Watcher uses none reasoning for event calls."
    )
    set_(cli, "effort", "--scope", "attention", "NONE")
    scopes = cli.show(1)["scopes"]
    assert [scopes[s]["reasoning"] for s in ("event", "time", "attention")] == [
        "none",
        "none",  # the time scope falls back to the event effort
        "none",
    ]


@pytest.mark.parametrize("effort", ["extreme", "4", "-1"])
def test_bad_reasoning_effort_is_refused(cli: Cli, effort: str) -> None:
    message = f"'{effort}' is not a reasoning effort; use none, minimal, low, medium, high or 0-3."
    assert fail(cli, "reasoning", "--", effort) == message


def test_the_three_prompts_and_their_aliases(cli: Cli) -> None:
    assert set_(cli, "attention", "Only", "smuggling") == (
        "Storyteller Watcher has a new attention prompt (14 characters)."
    )
    set_(cli, "eventprompt", "You", "are", "the", "harbour.")
    set_(cli, "timesystem", "Hourly", "review.")
    shown = cli.show(1)
    assert shown["attention_prompt"] == "Only smuggling"
    assert shown["system_prompt"] == "You are the harbour."
    assert shown["time_system_prompt"] == "Hourly review."
    assert set_(cli, "time-system-prompt", "--clear") == (
        "Storyteller Watcher's time system prompt now falls back to the system prompt."
    )
    assert cli.show(1)["time_system_prompt"] is None
    assert fail(cli, "time-system-prompt", "x", "--clear") == (
        "Give either the time system prompt or --clear, not both."
    )


def test_subscribe_toggles_events_and_heartbeats_by_any_alias(cli: Cli) -> None:
    assert set_(cli, "subscribe", "say") == "Storyteller Watcher now subscribes to speech events."
    set_(cli, "subscriptions", "health")
    set_(cli, "subscribe", "echoes")
    assert (
        set_(cli, "subscribe", "hour") == "Storyteller Watcher now subscribes to the 1h heartbeat."
    )
    set_(cli, "subscribe", "10")
    shown = cli.show(1)
    assert shown["subscriptions"] == {"room": False, "speech": True, "crime": False, "state": True}
    assert shown["heartbeats"] == {"5m": False, "10m": True, "30m": False, "1h": True}
    assert set_(cli, "subscribe", "60m") == (
        "Storyteller Watcher no longer subscribes to the 1h heartbeat."
    )
    assert fail(cli, "subscribe", "weather") == (
        "'weather' is not an event or heartbeat; use room, speech, crime, state, "
        "5m, 10m, 30m or 1h."
    )


def test_subscribe_on_and_off_set_rather_than_flip(cli: Cli) -> None:
    for _ in range(2):  # saying it twice leaves it on
        set_(cli, "subscribe", "speech", "on")
    assert cli.show(1)["subscriptions"]["speech"] is True
    set_(cli, "subscribe", "1h", "off")
    assert cli.show(1)["heartbeats"]["1h"] is False
    assert fail(cli, "subscribe", "speech", "maybe") == "'maybe' is not on or off."


def test_speech_context_shows_and_sets_count_and_window(cli: Cli) -> None:
    assert set_(cli, "speech-context") == (
        "Storyteller Watcher speech context: off (0 events; window 10m)."
    )
    set_(cli, "speechhistory", "lines", "5")
    set_(cli, "speech-context", "window", "90s")
    assert cli.show(1)["speech_context"] == {"count": 5, "window_seconds": 90.0}
    assert set_(cli, "speechcontext", "maxseparation", "00:03:00") == (
        "Storyteller Watcher now includes speech at most 3m apart."
    )
    set_(cli, "speech-context", "time", "1h30m")
    assert cli.show(1)["speech_context"]["window_seconds"] == 5400.0
    assert set_(cli, "speech-context", "count", "0")
    assert "off (0 events; window 1h30m)" in set_(cli, "speech-context")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("count", "51"), "Speech context count must be between 0 and 50, not 51."),
        (("count", "-1"), "Speech context count must be between 0 and 50, not -1."),
        (("count", "many"), "'many' is not a whole number."),
        (("window", "0s"), "Speech context window must be longer than zero."),
        (("window", "00:00:00"), "Speech context window must be longer than zero."),
        (("window", "90"), "'90' is not a duration; use e.g. 90s, 3m, 1h30m or 00:03:00."),
        (("window", "soon"), "'soon' is not a duration; use e.g. 90s, 3m, 1h30m or 00:03:00."),
    ],
)
def test_speech_context_errors(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert fail(cli, "speech-context", *args) == message


def test_status_and_player_progs_are_checked_and_stored_by_id(cli: Cli) -> None:
    assert set_(cli, "status-prog", "5", "aistorytellerstatusfiveminute") == (
        "Storyteller Watcher's 5m status prog is now AIStorytellerStatusFiveMinute (#1)."
    )
    set_(cli, "heartbeatprog", "hour", "2")
    assert set_(cli, "customplayerprog", "HarbourPlayerProfile") == (
        "Storyteller Watcher uses HarbourPlayerProfile (#15) for player information."
    )
    shown = cli.show(1)
    assert shown["status_progs"] == {"5m": "1", "10m": None, "30m": None, "1h": "2"}
    assert shown["player_info_prog"] == "15"
    assert (
        "Status progs: 5m AIStorytellerStatusFiveMinute (#1), 10m none, 30m none, "
        "1h AIStorytellerStatusHourly (#2)" in cli.ok("ais", "show", "1")
    )
    set_(cli, "statusprog", "5m", "none")
    set_(cli, "player-prog", "NONE")
    shown = cli.show(1)
    assert shown["status_progs"]["5m"] is None and shown["player_info_prog"] is None
    assert fail(cli, "status-prog", "1h", "NoSuchProg") == (
        "The world has no prog with id or name 'NoSuchProg'."
    )
    assert fail(cli, "playerprog", "999") == "The world has no prog with id or name '999'."
    assert fail(cli, "status-prog", "2h", "1") == (
        "'2h' is not a heartbeat; use 5m, 10m, 30m or 1h."
    )


def test_progs_are_taken_on_trust_when_the_world_is_unreachable(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_catalogue(monkeypatch, None)
    set_(cli, "status-prog", "30m", "LaterProg")
    set_(cli, "player-prog", "Profile")
    shown = cli.show(1)
    assert (shown["status_progs"]["30m"], shown["player_info_prog"]) == ("LaterProg", "Profile")


def test_surveillance_toggles_zones_and_rooms(cli: Cli) -> None:
    assert set_(cli, "surveillance", "zone", "100") == "Storyteller Watcher now watches zone #100."
    set_(cli, "watch", "include", "3")
    assert set_(cli, "surveillance", "exclude", "2") == "Storyteller Watcher now excludes room #2."
    assert cli.show(1)["surveillance"] == {"zones": [100], "included": [3], "excluded": [2]}
    assert set_(cli, "watch", "ZONE", "100") == "Storyteller Watcher no longer watches zone #100."
    assert cli.show(1)["surveillance"]["zones"] == []
    assert "Surveillance: zones none; rooms #3; excluding #2" in cli.ok("ais", "show", "1")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("region", "1"), "'region' is not a surveillance list; use zone, include or exclude."),
        (("zone", "north"), "'north' is not a valid zone id; use a positive whole number."),
        (("include", "0"), "'0' is not a valid room id; use a positive whole number."),
    ],
)
def test_surveillance_errors(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert fail(cli, "surveillance", *args) == message
