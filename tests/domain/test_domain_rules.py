"""Pure rules, including FutureMUD's tests for this layer (names kept recognisable)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.domain.references import (
    ReferenceDocument,
    format_restriction_csv,
    parse_restriction_csv,
)
from storyteller_daemon.domain.situations import BOTH_SCOPES_MESSAGE, Situation, check_scope
from storyteller_daemon.domain.storytellers import (
    CustomTool,
    EventKind,
    Heartbeat,
    ReasoningEffort,
    Scope,
    Storyteller,
    validate_speech_context_count,
    validate_speech_context_window,
    validate_tool_name,
)
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.tool_names import (
    BUILTIN_TOOL_NAMES,
    EVENT_FOCUSED_TOOLS,
    FULL_PROFILE_TOOLS,
)
from storyteller_daemon.errors import ValidationError

NOW = datetime(2026, 11, 22, tzinfo=UTC)


# ---- surveillance (FutureMUD AIStorytellerSurveillanceStrategyTests) ----


def test_get_cells_combines_zones_and_includes_then_removes_exclusions() -> None:
    s = Surveillance(zones=frozenset({10}), included=frozenset({3}), excluded=frozenset({2}))
    assert s.cells({10: [1, 2]}) == {1, 3}


def test_room_in_zone_and_included_is_watched_once() -> None:
    # FutureMUD §9.12: such a room was subscribed twice and every echo processed twice.
    s = Surveillance(zones=frozenset({10}), included=frozenset({1}))
    cells = s.cells({10: [1, 2]})
    assert sorted(cells) == [1, 2]


def test_unknown_zone_contributes_nothing_and_toggle_round_trips() -> None:
    s = Surveillance().toggled("zone", 99).toggled("include", 5)
    assert s.cells({}) == {5}
    assert s.toggled("zone", 99).zones == frozenset()
    assert "#99" in s.describe()


# ---- settings ----


def test_constructor_scoped_model_and_reasoning_loads_scoped_values() -> None:
    st = Storyteller(
        name="x",
        model="gpt-5",
        time_model="gpt-5-mini",
        attention_model="gpt-5-nano",
        reasoning_effort=ReasoningEffort.parse("2"),
        time_reasoning_effort=ReasoningEffort.parse("1"),
        attention_reasoning_effort=ReasoningEffort.parse("0"),
    )
    assert [st.model_for(s) for s in Scope] == ["gpt-5", "gpt-5-mini", "gpt-5-nano"]
    assert [st.effort_for(s) for s in Scope] == [
        ReasoningEffort.MEDIUM,
        ReasoningEffort.LOW,
        ReasoningEffort.MINIMAL,
    ]


def test_constructor_missing_scoped_model_and_reasoning_falls_back_to_event_defaults() -> None:
    st = Storyteller(name="x", model="gpt-5", reasoning_effort=ReasoningEffort.HIGH)
    assert st.model_for(Scope.TIME) == "gpt-5"
    assert st.model_for(Scope.ATTENTION) == "gpt-5"
    assert st.effort_for(Scope.TIME) is ReasoningEffort.HIGH
    assert st.effort_for(Scope.ATTENTION) is ReasoningEffort.LOW
    assert Storyteller(name="y").effort_for(Scope.EVENT) is ReasoningEffort.MEDIUM


def test_time_system_prompt_falls_back_to_event_prompt() -> None:
    st = Storyteller(name="x", system_prompt="event")
    assert st.system_prompt_for(Scope.TIME) == "event"
    st2 = Storyteller(name="x", system_prompt="event", time_system_prompt="time")
    assert st2.system_prompt_for(Scope.TIME) == "time"
    assert st2.system_prompt_for(Scope.EVENT) == "event"


def test_new_storytellers_start_paused_with_room_events_only() -> None:
    st = Storyteller(name="x")
    assert st.paused
    assert st.subscriptions == {EventKind.ROOM}
    assert st.heartbeats == frozenset()


@pytest.mark.parametrize(
    ("text", "effort"), [("0", "minimal"), ("3", "high"), ("Medium", "medium")]
)
def test_effort_parses_codes_and_names(text: str, effort: str) -> None:
    assert ReasoningEffort.parse(text).value == effort
    assert (
        ReasoningEffort.parse(text).code == ReasoningEffort.parse(ReasoningEffort(effort).code).code
    )


@pytest.mark.parametrize("bad", ["4", "extreme", "", "-1"])
def test_bad_effort_is_rejected(bad: str) -> None:
    with pytest.raises(ValidationError, match="not a reasoning effort"):
        ReasoningEffort.parse(bad)
    assert ReasoningEffort.parse_lenient(bad) is None


def test_aliases_of_scopes_events_and_heartbeats() -> None:
    assert Scope.parse("classifier") is Scope.ATTENTION
    assert Scope.parse("heartbeat") is Scope.TIME
    assert EventKind.parse("say") is EventKind.SPEECH
    assert EventKind.parse("health") is EventKind.STATE
    assert Heartbeat.parse("hour") is Heartbeat.HOUR
    assert Heartbeat.parse("10").seconds == 600
    for bad, parse in (("weekly", Heartbeat.parse), ("x", Scope.parse), ("y", EventKind.parse)):
        with pytest.raises(ValidationError):
            parse(bad)


def test_tool_names_follow_the_api_pattern_and_avoid_builtins() -> None:
    assert validate_tool_name("Shout_From-Crowd9", BUILTIN_TOOL_NAMES) == "Shout_From-Crowd9"
    for bad in ("has space", "", "x" * 65, "semi;colon"):
        with pytest.raises(ValidationError, match="invalid"):
            validate_tool_name(bad, BUILTIN_TOOL_NAMES)
    with pytest.raises(ValidationError, match="built-in"):
        validate_tool_name("noop", BUILTIN_TOOL_NAMES)


def test_speech_context_limits() -> None:
    assert validate_speech_context_count(0) == 0
    assert validate_speech_context_count(50) == 50
    for bad in (-1, 51):
        with pytest.raises(ValidationError):
            validate_speech_context_count(bad)
    with pytest.raises(ValidationError):
        validate_speech_context_window(timedelta(0))


def test_refresh_parameter_descriptions_when_prog_changes_adds_missing_entries() -> None:
    tool = CustomTool("T", "d", "prog", parameter_descriptions=(("Cue", "a cue"),))
    rebound = tool.rebound(["Cue", "Room"])
    assert rebound.parameter_descriptions == (("Cue", "a cue"), ("Room", ""))


def test_rebinding_prunes_stale_parameter_descriptions() -> None:
    # FutureMUD §9.8: stale descriptions stayed and silently invalidated the tool.
    tool = CustomTool("T", "d", "p", parameter_descriptions=(("Old", "x"), ("Cue", "c")))
    assert tool.rebound(["cue"]).parameter_descriptions == (("cue", "c"),)


def test_profiles_have_24_and_16_tools() -> None:
    assert len(FULL_PROFILE_TOOLS) == 24
    assert len(EVENT_FOCUSED_TOOLS) == 16
    assert "PathBetweenRooms" not in EVENT_FOCUSED_TOOLS


# ---- situations (FutureMUD AIStorytellerSituationMemoryTests + scope rules) ----


def test_both_scopes_is_an_error() -> None:
    with pytest.raises(ValidationError, match="Specify either CharacterId or RoomId"):
        check_scope(1, 2)
    with pytest.raises(ValidationError, match=BOTH_SCOPES_MESSAGE):
        Situation(1, 1, "t", "x", NOW, character_id=3, room_id=4)
    with pytest.raises(ValidationError, match="CharacterId must be a positive integer"):
        check_scope(0, None)


def test_situation_matches_trigger_scope_applies_character_and_room_scope_rules() -> None:
    universal = Situation(1, 1, "u", "", NOW)
    by_char = Situation(2, 1, "c", "", NOW, character_id=77)
    by_room = Situation(3, 1, "r", "", NOW, room_id=88)
    assert universal.matches_trigger(None, [])
    assert universal.matches_trigger(5, [1])
    assert by_char.matches_trigger(None, [77, 3])
    assert not by_char.matches_trigger(88, [3])
    assert by_room.matches_trigger(88, [])
    assert not by_room.matches_trigger(87, [77])
    assert by_room.scope_label == "Room #88"


# ---- reference documents (FutureMUD AIStorytellerReferenceDocumentTests) ----


def test_is_visible_to_empty_restrictions_is_global() -> None:
    doc = ReferenceDocument(name="d")
    assert doc.is_visible_to(1)
    assert doc.is_visible_to(999)


def test_is_visible_to_populated_restrictions_allows_only_listed_storytellers() -> None:
    doc = ReferenceDocument(name="d", restricted_to=parse_restriction_csv("5,7,11"))
    assert doc.is_visible_to(7)
    assert not doc.is_visible_to(3)
    assert doc.restricted_to == {5, 7, 11}
    assert format_restriction_csv([11, 5, 7, 5]) == "5,7,11"
    with pytest.raises(ValidationError):
        parse_restriction_csv("5,x")


def test_return_for_search_multi_term_search_matches_across_fields() -> None:
    doc = ReferenceDocument(name="Harbour Ward Factions", contents="Dock politics and tides.")
    assert doc.matches("harbour politics")
    assert doc.matches("")
    assert doc.matches(None)
    assert not doc.matches("harbour astronomy")
    assert doc.matches("HARB TIDE")
