"""The daily budget in the ``<ToolCalls>`` blob: written, read back, refused when malformed."""

from __future__ import annotations

import pytest

from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import InterchangeError
from storyteller_daemon.interchange.futuremud_xml import (
    apply_tool_calls,
    parse_tool_calls,
    render_tool_calls,
)


@pytest.mark.parametrize("usd", [2.5, 0.0, 0.125])
def test_a_budget_travels_in_the_blob_and_comes_back_equal(usd: float) -> None:
    document = render_tool_calls(Storyteller("Watch", daily_budget_usd=usd))
    assert "<DailyBudgetUsd>" in document
    definition = parse_tool_calls(document)
    assert definition.daily_budget_usd == usd
    assert apply_tool_calls(Storyteller("Crier"), definition).daily_budget_usd == usd


def test_no_budget_writes_nothing_and_an_older_document_imports_as_the_configuration_s() -> None:
    assert "DailyBudget" not in render_tool_calls(Storyteller("Watch"))
    older = "<ToolCalls><SpeechContextEventCount>3</SpeechContextEventCount></ToolCalls>"
    definition = parse_tool_calls(older)
    assert definition.daily_budget_usd is None and definition.speech_context_count == 3
    imported = apply_tool_calls(Storyteller("Watch", daily_budget_usd=4.0), definition)
    assert imported.daily_budget_usd is None  # the document is the whole blob


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lots", "ToolCalls <DailyBudgetUsd> value 'lots' is not a number of USD."),
        ("-1", "ToolCalls <DailyBudgetUsd> value '-1' is rejected: A daily budget must be 0"),
        ("inf", "ToolCalls <DailyBudgetUsd> value 'inf' is rejected"),
    ],
)
def test_a_malformed_budget_is_refused_naming_the_element(value: str, message: str) -> None:
    with pytest.raises(InterchangeError) as caught:
        parse_tool_calls(f"<ToolCalls><DailyBudgetUsd>{value}</DailyBudgetUsd></ToolCalls>")
    assert str(caught.value).startswith(message)
