"""The direction in the ``<ToolCalls>`` blob: written, read back, refused when malformed."""

from __future__ import annotations

import pytest

from storyteller_daemon.domain.direction import ContextProvider, Direction, Pacing, ProviderKind
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import InterchangeError
from storyteller_daemon.interchange.futuremud_xml import parse_tool_calls, render_tool_calls

DIRECTED = Direction(
    plans=True,
    cooperates=True,
    pacing=Pacing(room_gap_seconds=300, quiet_hours="22:00-06:00", intensity_peak=4.5,
                  intensity_relax=1.5),
    providers=(
        ContextProvider("house-rules", ProviderKind.TEXT, 200, "Keep it <short> & kind."),
        ContextProvider("digest", ProviderKind.DIGEST, 400),
        ContextProvider("threads", ProviderKind.QUERY, 150,
                        "SELECT title FROM situations WHERE storyteller_id = :storyteller_id"),
    ),
)  # fmt: skip


def test_a_direction_travels_in_the_blob_and_comes_back_equal() -> None:
    document = render_tool_calls(Storyteller("Watch", direction=DIRECTED))
    assert "<Direction>" in document and "<RoomGapSeconds>300</RoomGapSeconds>" in document
    assert parse_tool_calls(document).direction == DIRECTED


def test_the_default_direction_writes_nothing_and_reads_back_as_default() -> None:
    document = render_tool_calls(Storyteller("Watch"))
    assert "Direction" not in document
    assert parse_tool_calls(document).direction == Direction()


@pytest.mark.parametrize(
    ("inner", "message"),
    [
        ("<Plans>maybe</Plans>", "<Plans> value 'maybe' is not true or false"),
        ("<Pacing><Speed>3</Speed></Pacing>", "unexpected element <Speed>"),
        ("<Pacing><QuietHours>late</QuietHours></Pacing>", "is not HH:MM-HH:MM"),
        (
            "<ContextProviders><ContextProvider><Name>x</Name><Kind>query</Kind>"
            "<BudgetTokens>10</BudgetTokens><Source>DROP TABLE runs</Source>"
            "</ContextProvider></ContextProviders>",
            "must be one SELECT statement",
        ),
        (
            "<ContextProviders><ContextProvider><Name>x</Name><Kind>text</Kind>"
            "</ContextProvider></ContextProviders>",
            "has no <BudgetTokens>",
        ),
    ],
)
def test_a_malformed_direction_is_refused_naming_the_element(inner: str, message: str) -> None:
    with pytest.raises(InterchangeError, match="Direction|ContextProvider") as caught:
        parse_tool_calls(f"<ToolCalls><Direction>{inner}</Direction></ToolCalls>")
    assert message in str(caught.value)
