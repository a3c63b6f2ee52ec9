"""Finding a character's texts and id in stored values, in every form they are stored in."""

from __future__ import annotations

import json

import pytest

from storyteller_daemon.domain.redaction import (
    MARKER,
    Redactor,
    character_texts,
    names_character,
    text_forms,
    worth_finding,
)

SAID = 'Bring the "ledger" to the cellar.\nTell nobody.'


def test_plain_text_loses_every_occurrence_whatever_its_case() -> None:
    redactor = Redactor(["Osric Vell"], None)
    assert redactor.scrub("osric vell met OSRIC VELL.") == (f"{MARKER} met {MARKER}.", ["$"])
    assert redactor.scrub("Nobody here.") == ("Nobody here.", [])


def test_a_name_inside_a_longer_word_is_left_alone() -> None:
    redactor = Redactor(["Wren"], None)
    assert redactor.scrub("Wrenfield, wren's coat, _Wren, Wren2")[0] == (
        f"Wrenfield, {MARKER}'s coat, _Wren, Wren2"
    )


def test_the_longest_text_wins_where_one_contains_another() -> None:
    redactor = Redactor(["Osric", "Osric Vell"], None)
    assert redactor.scrub("Osric Vell and Osric")[0] == f"{MARKER} and {MARKER}"


def test_escaped_forms_are_found_in_text_that_is_not_json() -> None:
    """A cut-off preview of a request body is escaped JSON that no parser reads."""
    once = json.dumps(SAID)[1:-1]
    twice = json.dumps(once)[1:-1]
    redactor = Redactor([SAID, "Osric"], None)
    for escaped in (once, twice):
        assert redactor.scrub(f'{{"input": "x {escaped} y')[0] == f'{{"input": "x {MARKER} y'
    # the letter of an escape is not part of the name's word
    assert redactor.scrub('"said:\\nOsric')[0] == f'"said:\\n{MARKER}'


def test_text_as_prompts_show_it_is_found() -> None:
    """Prompts strip markup and fold lines; the speech history does the same."""
    redactor = Redactor(["#1Run,   \x1b[1mfool\x1b[0m!\nNow."], None)
    assert redactor.scrub('Spoken: "Run, fool! Now."')[0] == f'Spoken: "{MARKER}"'


def test_json_documents_stay_valid_and_keep_their_style() -> None:
    redactor = Redactor([SAID, "Osric Vell"], 1002)
    compact = json.dumps({"speaker": "Osric Vell", "n": 1.5}, separators=(",", ":"))
    assert redactor.scrub(compact)[0] == '{"speaker":"[erased]","n":1.5}'
    spaced = json.dumps({"text": SAID, "who": "Élise"}, ensure_ascii=False)
    assert redactor.scrub(spaced)[0] == '{"text": "[erased]", "who": "Élise"}'
    ascii_only = json.dumps(["Osric Vell", "café"])
    assert redactor.scrub(ascii_only)[0] == '["[erased]", "caf\\u00e9"]'


def test_json_inside_a_json_string_is_walked_and_rewritten() -> None:
    output = json.dumps({"ok": True, "result": {"Id": 1002, "Name": "Osric Vell"}})
    body = json.dumps({"input": [{"type": "function_call_output", "output": output}]})
    redacted, where = Redactor(["Osric Vell"], 1002).scrub(body)
    inner = json.loads(json.loads(redacted)["input"][0]["output"])
    assert inner == {"ok": True, "result": {"Id": 0, "Name": MARKER}}
    assert where == ["$.input[0].output.result.Id", "$.input[0].output.result.Name"]


def test_the_id_goes_where_a_key_names_a_character_and_nowhere_else() -> None:
    document = {
        "speaker_id": 1002,
        "CharacterId": 1002,
        "OriginCharacterId": 1002,
        "Target": 1002,
        "involved": [3, 1002],
        "room_id": 1002,
        "LocationId": 1002,
        "MemoryId": 1002,
        "count": 1002,
        "victim_id": 1002.0,
    }
    redacted = json.loads(Redactor((), 1002).scrub(json.dumps(document))[0])
    assert redacted == {
        **document,
        "speaker_id": 0,
        "CharacterId": 0,
        "OriginCharacterId": 0,
        "Target": 0,
        "involved": [3],
    }


def test_the_id_in_a_documents_text_goes_but_not_in_plain_text() -> None:
    redactor = Redactor((), 1002)
    prompt = json.dumps({"prompt": "Speaker: [#1002] near [#10020]"})
    assert json.loads(redactor.scrub(prompt)[0])["prompt"] == "Speaker: [#0] near [#10020]"
    assert redactor.scrub("Room #1002 is the cellar.") == ("Room #1002 is the cellar.", [])


def test_an_event_by_the_character_loses_its_text_however_short() -> None:
    event = {
        "kind": "speech",
        "cursor": {"epoch": "e", "seq": 4},
        "speaker_id": 1002,
        "speaker_name": "Os",
        "text": "Hi",
        "target_id": 7,
        "target_description": "a sailor",
    }
    heard = {**event, "speaker_id": 7, "target_id": 1002, "text": "Yo", "speaker_name": "Per"}
    redactor = Redactor((), 1002)
    said = json.loads(redactor.scrub(json.dumps(event))[0])
    assert (said["speaker_id"], said["speaker_name"], said["text"]) == (0, MARKER, MARKER)
    assert said["target_description"] == "a sailor"
    to_him = json.loads(redactor.scrub(json.dumps(heard))[0])
    assert (to_him["text"], to_him["target_id"], to_him["target_description"]) == ("Yo", 0, MARKER)


@pytest.mark.parametrize(
    ("text", "name", "found"),
    [
        ("Bo", True, False),
        ("Ann", True, True),
        ("Yes.", False, False),
        ("........", False, False),
        ("Hello there", False, True),
    ],
)
def test_short_texts_are_not_looked_for(text: str, name: bool, found: bool) -> None:
    assert worth_finding(text, name=name) is found


def test_the_marker_itself_is_never_a_text_to_find() -> None:
    assert text_forms("erased") == set()
    redactor = Redactor(["Osric", "erased"], None)
    once = redactor.scrub("Osric")[0]
    assert redactor.scrub(once) == (once, [])


def test_names_character_reads_the_key() -> None:
    assert all(map(names_character, ["id", "Id", "speaker_id", "victimId", "occupant_ids"]))
    assert not any(map(names_character, ["room_id", "cell_id", "SituationId", "crime_id", "n"]))


def test_character_texts_come_from_events_and_descriptions() -> None:
    document = {
        "trigger": {
            "event": {
                "kind": "speech",
                "cursor": {"epoch": "e", "seq": 1},
                "speaker_id": 1002,
                "speaker_name": "Osric Vell",
                "text": SAID,
            }
        },
        "tape": [
            {"result": {"id": 1002, "name": "Osric Vell", "full_description": "A paunchy man."}},
            {"result": {"id": 1001, "name": "Maren Tidewell"}},
        ],
        "output": json.dumps({"Id": 1002, "Name": "Osric", "ShortDescription": "a paunchy man"}),
    }
    names, texts = character_texts(document, 1002)
    assert names == {"Osric Vell", "Osric", "a paunchy man"}
    assert texts == {SAID, "A paunchy man."}


@pytest.mark.parametrize("spelling", ["Élodie Marsh", "ÉLODIE MARSH", "élodie marsh"])
def test_a_non_ascii_name_is_found_in_escaped_json_whatever_its_case(spelling: str) -> None:
    """``\\u00c9`` and ``\\u00e9`` differ in digits, not case: each spelling has its own form."""
    inner = json.dumps({"Name": spelling})  # \\u escapes inside a JSON string
    outer = json.dumps({"output": inner}, ensure_ascii=False)
    redacted, where = Redactor(["Élodie Marsh"], None).scrub(outer)
    assert json.loads(json.loads(redacted)["output"]) == {"Name": MARKER}
    assert where == ["$.output.Name"]


def test_search_terms_taken_from_the_characters_words_are_dropped_one_by_one() -> None:
    redactor = Redactor(["Bring the zanthrope ledger tonight."], 7)
    # as on a run's record: the trigger's text, and the search terms taken from it
    document = json.dumps(
        {
            "trigger": {"text": "Bring the zanthrope ledger tonight."},
            "args": {"words": ["bring", "zanthrope", "harbour", "ledger"], "limit": 40},
        }
    )
    changed, where = redactor.scrub(document)
    assert json.loads(changed)["args"]["words"] == ["harbour"]
    assert where == ["$.trigger.text", "$.args.words"]
