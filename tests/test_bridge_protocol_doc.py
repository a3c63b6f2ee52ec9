"""docs/bridge-protocol.md cannot drift from the code: every example is a valid frame, and the
method and type reference is the one the code generates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from world_adapter.bridge.messages import (
    FRAME_TYPES,
    MAX_FRAME_BYTES,
    CloseCode,
    ErrorCode,
    frame_type,
)
from world_adapter.bridge.methods import reference_text, world_methods
from world_adapter.bridge.wire import parse_frame
from world_adapter.replay import GapReason

DOC = Path(__file__).resolve().parents[1] / "docs" / "bridge-protocol.md"
TEXT = DOC.read_text(encoding="utf-8")
EXAMPLES = re.findall(r"```json\n(.*?)```", TEXT, re.DOTALL)


def test_the_document_has_examples() -> None:
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_every_json_example_is_a_valid_frame_with_no_unknown_field(example: str) -> None:
    parse_frame(example, strict=True)


def test_every_frame_type_has_an_example() -> None:
    shown = {frame_type(parse_frame(example)) for example in EXAMPLES}
    assert shown == set(FRAME_TYPES)


def test_every_event_kind_has_an_example() -> None:
    kinds = {
        parse_frame(e).event.kind.value  # type: ignore[union-attr]
        for e in EXAMPLES
        if frame_type(parse_frame(e)) == "event"
    }
    assert kinds == {"room_echo", "speech", "crime", "state_change"}


def test_the_method_reference_is_the_generated_one() -> None:
    begin, end = "<!-- methods:begin -->\n", "<!-- methods:end -->"
    documented = TEXT.split(begin, 1)[1].split(end, 1)[0]
    assert documented == reference_text(), (
        "regenerate with `python -m world_adapter.bridge.methods` and paste it between the markers"
    )
    for name in world_methods():
        assert f"| `{name}` |" in documented


def test_every_close_code_error_code_and_gap_reason_is_documented() -> None:
    close_table = TEXT.split("## Close codes", 1)[1].split("##", 1)[0]
    for code in CloseCode:
        assert re.search(rf"^\| \**{code.value}\** \|", close_table, re.MULTILINE), code
    for error in ErrorCode:
        assert f"| `{error.value}` |" in TEXT, error
    for reason in GapReason:
        assert f"| `{reason.value}` |" in TEXT, reason


def test_the_documented_frame_limit_is_the_code_limit() -> None:
    assert MAX_FRAME_BYTES == 1_048_576
    assert "1,048,576 bytes" in TEXT
