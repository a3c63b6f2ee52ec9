"""The token estimator errs high by documented rules, adds up over blank-line joins, and cuts
text to a token count with a marker; it is the one place the code turns text into tokens."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import storyteller_daemon
from storyteller_daemon.agent.models.interface import ModelRequest, api_body
from storyteller_daemon.agent.models.tokens import (
    characters_holding,
    cut_to_tokens,
    estimate_tokens,
    input_estimate,
)
from storyteller_daemon.agent.tools.registry import builtin_tools
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.domain.tool_names import ToolProfile
from storyteller_daemon.runtime.spending.budgets import worst_case

PROSE = (
    "Maren Tidewell spits into the harbour and mutters that the harbourmaster owes her six "
    "silver, which he promised to pay before the new moon. The dockhands laugh."
)


def test_each_rule_of_the_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("the") == 1
    assert estimate_tokens("harbour") == 2  # seven letters: two groups of four
    assert estimate_tokens("1234567") == 3  # digits in groups of three
    assert estimate_tokens('":"') == 2  # punctuation in pairs
    assert estimate_tokens("a b") == 2  # a single space is folded into the word
    assert estimate_tokens("a   b") == 3  # a longer run of spaces costs one
    assert estimate_tokens("a\n\n\nb") == 3  # a run of line breaks costs one
    assert estimate_tokens("café") == 2  # every non-ASCII character costs one
    assert estimate_tokens("港口") == 2
    assert estimate_tokens("⚓") == 1 and estimate_tokens("🚢") == 2  # outside the BMP: two


def test_the_estimate_errs_high_against_the_usual_ratios() -> None:
    # English runs at about four characters a token, JSON schemas at about three.
    assert estimate_tokens(PROSE) >= len(PROSE) / 4
    schemas = json.dumps([t.spec().to_api() for t in builtin_tools(ToolProfile.FULL)])
    assert estimate_tokens(schemas) >= len(schemas) / 3.5


def test_blocks_joined_by_blank_lines_add_up() -> None:
    first, second = "Digest:\n<<notes x>>\nTwo ships.", '- #3: "Storm season"'
    joined = estimate_tokens(first + "\n\n" + second)
    assert joined == estimate_tokens(first) + 1 + estimate_tokens(second)


def test_a_cut_fits_keeps_the_start_and_ends_with_the_marker() -> None:
    marker = "\n[cut]"
    text = PROSE * 5
    for limit in (5, 17, 40, 90):
        head = cut_to_tokens(text, limit, marker)
        assert estimate_tokens(head) <= limit
        assert head.endswith(marker)
        assert text.startswith(head.removesuffix(marker))
        assert not head.removesuffix(marker).endswith(" ")  # cut at a space, not in a word
    assert cut_to_tokens(PROSE, 1000, marker) == PROSE
    assert cut_to_tokens(PROSE, 1, marker) == ""  # not even the marker fits
    longer = cut_to_tokens(text, 90, marker)
    assert len(longer) > len(cut_to_tokens(text, 40, marker))


def _token_arithmetic(path: Path) -> set[str]:
    """What a module defines that turns text into tokens: functions named for an estimate,
    and characters-per-token ratios."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and "estimat" in node.name.lower():
            found.append(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else []
        found += [t.id for t in targets if isinstance(t, ast.Name) and "PER_TOKEN" in t.id]
    return set(found)


def test_text_becomes_tokens_in_one_module() -> None:
    package = Path(storyteller_daemon.__file__).parent
    elsewhere = {
        path.relative_to(package).as_posix(): names
        for path in sorted(package.rglob("*.py"))
        # The bench's stand-in provider counts as the provider bills, not as the daemon
        # estimates: it is the simulated provider's tokenizer.
        if "bench" not in path.relative_to(package).as_posix()
        and (names := _token_arithmetic(path))
    }
    assert elsewhere == {
        "agent/models/tokens.py": {"estimate_tokens", "input_estimate", "PROSE_CHARS_PER_TOKEN"}
    }


def test_a_request_is_bounded_by_its_body_and_the_budget_reserves_that_bound() -> None:
    request = ModelRequest(model="gpt-5", input=[{"role": "user", "content": "Hafen, café ⚓"}])
    body = json.dumps(api_body(request), ensure_ascii=False).encode("utf-8")
    assert input_estimate(request) == len(body) > estimate_tokens(json.dumps(api_body(request)))
    prices = {"gpt-5": ModelPrice(input=1.0, output=2.0)}
    assert worst_case(prices, request)[0] == input_estimate(request)


def test_prose_sized_for_a_floor_reaches_it_by_the_usual_ratio() -> None:
    assert characters_holding(1024) == 4608  # 4.5 characters a token, not the usual four
    assert characters_holding(1024) > 1024 * 4
    assert characters_holding(0) == 0
