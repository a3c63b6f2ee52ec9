"""The offline stand-in: attention verdicts and tool-loop calls by fixed rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec, Usage
from storyteller_daemon.agent.models.offline import DEFAULT_AMBIENT_LINE, OfflineStandInModel
from storyteller_daemon.agent.verdicts import verdict_format


def strict(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


CREATE_SITUATION = ToolSpec(
    "CreateSituation",
    "Open a thread.",
    strict(
        {
            "Title": {"type": "string"},
            "Description": {"type": "string"},
            "CharacterId": {"type": ["integer", "null"]},
            "RoomId": {"type": ["integer", "null"]},
        }
    ),
)
NOOP = ToolSpec("Noop", "Do nothing.", strict({}))
SHOW_SITUATION = ToolSpec("ShowSituation", "Show one.", strict({"Id": {"type": "integer"}}))
ECHO_TO_ROOM = ToolSpec(
    "EchoToRoom",
    "Show a line in a room.",
    strict(
        {
            "Loud": {"type": "boolean"},
            "Room": {"type": "integer"},
            "Mood": {"type": "string", "enum": ["calm", "tense"]},
            "Text": {"type": "string"},
            "Volume": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        }
    ),
)
TOOLS = (CREATE_SITUATION, SHOW_SITUATION, NOOP, ECHO_TO_ROOM)
VERDICT = verdict_format()


def batch(*lines: str, situations: str = "There are currently no unresolved situations.") -> str:
    """An attention batch's user message, as the daemon writes it."""
    events = "\n".join(f"[{n}] {line}" for n, line in enumerate(lines, start=1))
    return f"{situations}\n\nEvents, oldest first:\n{events}"


ECHO_PROMPT = """There are currently no unresolved situations.
Your attention classifier flagged a world event as relevant.
Location: The Salt Quay [#12]
Source Character: Jory Fenn
Event Text:
Jory Fenn slips a knife from his sleeve. The fishwife screams!

Attention Reason:
mentions knife"""


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def loop_request(*items: dict[str, Any], **overrides: Any) -> ModelRequest:
    options: dict[str, Any] = {
        "model": "gpt-test",
        "input": list(items),
        "tools": TOOLS,
        "tool_choice": "required",
    }
    options.update(overrides)
    return ModelRequest(**options)


def arguments(response: Any, index: int = 0) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(response.function_calls[index].arguments)
    return parsed


def test_name_says_it_is_not_a_language_model() -> None:
    assert OfflineStandInModel().name == "offline stand-in (rule-based, not a language model)"


# ---------------------------------------------------------------------- attention verdicts


@pytest.mark.parametrize(
    "text",
    [
        "A THIEF cuts a purse near the stalls.",
        "Someone shouts for help from the water.",
        "Two dockhands start fighting over a crate.",
        "Smugglers unload casks after dark.",
    ],
)
async def test_watch_words_make_the_event_attended(text: str) -> None:
    line = f"20:00:01 #101 echo: {json.dumps(text)}"
    response = await OfflineStandInModel().respond(
        ModelRequest(model="gpt-mini", input=[user(batch(line))], text_format=VERDICT)
    )

    verdict = json.loads(response.output_text)
    assert verdict["ignore"] == ""
    [attended] = verdict["attend"]
    assert attended["id"] == 1 and attended["why"].startswith("mentions ")
    assert response.function_calls == ()
    (message,) = response.continuation
    assert message["type"] == "message"
    assert message["content"][0]["text"] == response.output_text


async def test_each_event_of_a_batch_is_judged_on_its_own() -> None:
    lines = (
        '20:00:01 #101 echo: "Gulls wheel over the harbour."',
        '20:00:02 #103 "Per" [#2003] shouts: "Thief! Stop her!"',
        '20:00:03 #102 echo: "A bell tolls the hour."',
    )
    response = await OfflineStandInModel().respond(
        ModelRequest(model="gpt-mini", input=[user(batch(*lines))], text_format=VERDICT)
    )
    assert json.loads(response.output_text) == {
        "attend": [{"id": 2, "why": "mentions thief"}],
        "ignore": "1,3",
    }


async def test_debug_reasons_give_a_reason_for_each_ignore() -> None:
    response = await OfflineStandInModel().respond(
        ModelRequest(
            model="m",
            input=[user(batch('20:00:01 #101 echo: "Gulls cry."'))],
            text_format=verdict_format(debug_reasons=True),
        )
    )
    assert json.loads(response.output_text)["ignore"] == [
        {"id": 1, "why": "no watch word in the text"}
    ]


async def test_watch_words_are_configurable_and_match_word_beginnings() -> None:
    model = OfflineStandInModel(watch_words=["gull"])
    lines = (
        '#1 echo: "Gulls wheel overhead."',
        '#1 echo: "A seagull cries."',
        '#1 echo: "A thief runs."',
    )
    response = await model.respond(
        ModelRequest(model="m", input=[user(batch(*lines))], text_format=VERDICT)
    )
    verdict = json.loads(response.output_text)
    assert [a["id"] for a in verdict["attend"]] == [1]
    assert verdict["ignore"] == "2-3"


async def test_verdict_reads_only_user_messages_and_content_parts() -> None:
    items: list[dict[str, Any]] = [
        {"role": "assistant", "content": '[1] #1 echo: "there was a murder"'},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": batch('#1 echo: "Blood!"')}],
        },
    ]
    response = await OfflineStandInModel().respond(
        ModelRequest(model="m", input=items, instructions="watch for fire", text_format=VERDICT)
    )
    assert json.loads(response.output_text) == {
        "attend": [{"id": 1, "why": "mentions blood"}],
        "ignore": "",
    }


async def test_a_schema_other_than_the_verdict_gets_a_placeholder_of_its_shape() -> None:
    other = {
        **VERDICT,
        "name": "check",
        "schema": strict({"ok": {"type": "boolean"}, "note": {"type": "string"}}),
    }
    answer = await OfflineStandInModel().respond(
        ModelRequest(model="m", input=[user("fire")], text_format=other)
    )
    assert json.loads(answer.output_text) == {"ok": False, "note": ""}


async def test_a_required_call_without_noop_calls_the_first_tool() -> None:
    ping = ToolSpec("ping", "Say that you are there.", strict({"ok": {"type": "boolean"}}))
    answer = await OfflineStandInModel().respond(
        ModelRequest(model="m", input=[user("fire")], tools=(ping,), tool_choice="required")
    )
    assert [(c.name, json.loads(c.arguments)) for c in answer.function_calls] == [
        ("ping", {"ok": False})
    ]


async def test_the_verdict_judges_the_event_not_the_room_or_the_situations() -> None:
    prompt = batch(
        '20:00:01 #103 "Maren Tidewell" [#1001] says: "The tide\'s turning. Smell that?"',
        situations='Current unresolved situations:\n- #1: "Thief on the quay"',
    )
    prompt = prompt.replace(
        "Events, oldest first:", 'Rooms: #103 "The Drowned Lantern"\n\nEvents, oldest first:'
    )
    response = await OfflineStandInModel().respond(
        ModelRequest(model="gpt-mini", input=[user(prompt)], text_format=VERDICT)
    )
    assert json.loads(response.output_text) == {"attend": [], "ignore": "1"}


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"watch_words": ["fire", " "]}, "watch words must be non-blank strings"),
        ({"ambient_line": ""}, "ambient_line must not be blank"),
    ],
)
def test_bad_settings_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        OfflineStandInModel(**options)


# ---------------------------------------------------------------------- tool loop


async def test_event_prompt_opens_a_situation_and_uses_the_room_echo_tool() -> None:
    response = await OfflineStandInModel().respond(loop_request(user(ECHO_PROMPT)))

    assert [call.name for call in response.function_calls] == ["CreateSituation", "EchoToRoom"]
    assert arguments(response, 0) == {
        "Title": "In room #12: Jory Fenn slips a…",  # fewer words than a dictated run
        "Description": (
            'Reported in room #12: "Jory Fenn slips a knife from his sleeve. The fishwife screams!"'
        ),
        "CharacterId": None,
        "RoomId": 12,
    }
    assert arguments(response, 1) == {
        "Loud": False,
        "Room": 12,
        "Mood": "calm",
        "Text": DEFAULT_AMBIENT_LINE,
        "Volume": None,
    }
    assert response.usage == Usage()
    assert response.status == "completed"
    assert response.output_text == ""


async def test_spoken_text_on_the_header_line_and_short_titles() -> None:
    words = "Ahoy " * 30
    prompt = (
        f"A character has spoken in a surveilled room.\nLocation: Pier [#3]\nSpoken Text: {words}"
    )

    response = await OfflineStandInModel().respond(
        loop_request(user(prompt), tools=(CREATE_SITUATION, NOOP))
    )

    (call,) = response.function_calls
    title = json.loads(call.arguments)["Title"]
    assert title == "In room #3: Ahoy Ahoy Ahoy Ahoy…"
    assert json.loads(call.arguments)["RoomId"] == 3


async def test_only_the_last_user_message_is_read_for_the_location() -> None:
    old = user("Location: Old Dock [#1]\nEvent Text:\nOld news.")
    heartbeat = user("A configured heartbeat event has triggered.\nHeartbeat type: ten minute.")

    response = await OfflineStandInModel().respond(loop_request(old, heartbeat))

    assert [call.name for call in response.function_calls] == ["Noop"]
    assert arguments(response) == {}


async def test_a_tool_output_in_the_input_ends_with_noop() -> None:
    first = await OfflineStandInModel().respond(loop_request(user(ECHO_PROMPT)))
    outputs = [
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"ok": true}'}
        for call in first.function_calls
    ]

    second = await OfflineStandInModel().respond(
        loop_request(user(ECHO_PROMPT), *first.continuation, *outputs)
    )

    assert [call.name for call in second.function_calls] == ["Noop"]


async def test_without_noop_the_stand_in_makes_no_calls() -> None:
    heartbeat = user("A configured heartbeat event has triggered.")

    response = await OfflineStandInModel().respond(
        loop_request(heartbeat, tools=(CREATE_SITUATION,))
    )

    assert response.function_calls == ()
    assert response.continuation == ()


async def test_builtin_tools_are_never_taken_for_the_room_echo_tool() -> None:
    builtin_like = ToolSpec(
        "PathBetweenRooms",
        "A built-in.",
        strict({"OriginRoom": {"type": "integer"}, "Note": {"type": "string"}}),
    )

    response = await OfflineStandInModel().respond(
        loop_request(user(ECHO_PROMPT), tools=(CREATE_SITUATION, builtin_like, NOOP))
    )

    assert [call.name for call in response.function_calls] == ["CreateSituation"]


async def test_crime_prompt_without_event_text_still_opens_a_situation() -> None:
    prompt = "A character has committed a crime.\nLocation: Market [#1,204]\nCrime Type: Theft"

    response = await OfflineStandInModel().respond(
        loop_request(user(prompt), tools=(CREATE_SITUATION, NOOP))
    )

    assert arguments(response)["Title"] == "Something stirs in room #1204"
    assert arguments(response)["RoomId"] == 1204


async def test_no_parallel_calls_means_one_call() -> None:
    response = await OfflineStandInModel().respond(
        loop_request(user(ECHO_PROMPT), parallel_tool_calls=False)
    )

    assert [call.name for call in response.function_calls] == ["CreateSituation"]


async def test_tool_choice_none_means_no_calls() -> None:
    response = await OfflineStandInModel().respond(
        loop_request(user(ECHO_PROMPT), tool_choice="none")
    )

    assert response.function_calls == ()


async def test_answers_are_deterministic_and_continuations_match_the_calls() -> None:
    one = await OfflineStandInModel().respond(loop_request(user(ECHO_PROMPT)))
    again = await OfflineStandInModel().respond(loop_request(user(ECHO_PROMPT)))
    other = await OfflineStandInModel().respond(loop_request(user(ECHO_PROMPT + ".")))

    assert one == again
    assert one.function_calls[0].call_id != other.function_calls[0].call_id
    assert len({call.call_id for call in one.function_calls}) == 2
    for call, item in zip(one.function_calls, one.continuation, strict=True):
        assert item == {
            "type": "function_call",
            "id": item["id"],
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }


async def test_quoted_world_text_gives_a_clean_situation_title() -> None:
    prompt = (
        "Location: Harbour Quay [#101]\nSpoken Text:\n<<world-text 0a1b2c3d4e5f from speech>>\n"
        "Thief! Stop him!\nHe went east.\n<<end world-text 0a1b2c3d4e5f>>"
    )
    response = await OfflineStandInModel().respond(loop_request(user(prompt)))
    assert arguments(response)["Title"] == "Thief!"


async def test_a_text_only_request_gets_a_summary_that_says_what_wrote_it() -> None:
    from storyteller_daemon.agent.models.offline import SUMMARY_HEADER

    prompt = "The previous digest:\n(none yet)\n\nWhat changed:\n- #3 opened: smugglers\n- #4 x"
    answer = await OfflineStandInModel().respond(
        ModelRequest(model="m", input=[{"role": "user", "content": prompt}], instructions="i")
    )
    assert not answer.function_calls
    assert answer.output_text == f"{SUMMARY_HEADER}\n- #3 opened: smugglers\n- #4 x"
    assert "not a language model" in answer.output_text
