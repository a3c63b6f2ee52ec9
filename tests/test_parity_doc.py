"""docs/parity.md cannot rot: every test it names exists, and every FutureMUD test has a row."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "parity.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
SECTION = re.compile(r"^### (UT/\w+\.cs) \((\d+)\)$")
FUTUREMUD_NAME = re.compile(r"^`([A-Z]\w+)`$")
NOT_YET = "**not yet ported**"

EXPECTED_SECTIONS = {
    "UT/AIStorytellerPauseTests.cs": 1,
    "UT/AIStorytellerCustomToolCallTests.cs": 3,
    "UT/AIStorytellerReferenceDocumentTests.cs": 4,
    "UT/AIStorytellerSituationMemoryTests.cs": 3,
    "UT/AIStorytellerSurveillanceStrategyTests.cs": 2,
    "UT/AIStorytellerToolExecutionTests.cs": 47,
}


@cache
def defined_tests(path: str) -> frozenset[str]:
    """Names of the test functions defined in a test module (module level or in classes)."""
    file = ROOT / path
    if not file.is_file():
        return frozenset()
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    )


def reference_problems(text: str) -> list[str]:
    """Every ``tests/…::test_…`` reference that names no existing test function."""
    return [
        f"{path}::{name} does not exist"
        for path, name in REFERENCE.findall(text)
        if name not in defined_tests(path)
    ]


def _sections(text: str) -> dict[str, tuple[int, list[list[str]]]]:
    """FutureMUD test file → (count in its heading, its table rows as cells)."""
    sections: dict[str, tuple[int, list[list[str]]]] = {}
    rows: list[list[str]] | None = None
    for line in text.splitlines():
        if line.startswith("#"):
            match = SECTION.match(line)
            rows = None
            if match:
                rows = []
                sections[match.group(1)] = (int(match.group(2)), rows)
        elif rows is not None and line.startswith("| ") and not line.startswith("| #"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return sections


def row_problems(text: str) -> list[str]:
    """What is wrong with the FutureMUD tables: counts, numbering, names, rows without tests."""
    problems: list[str] = []
    sections = _sections(text)
    if sections.keys() != EXPECTED_SECTIONS.keys():
        problems.append(f"sections {sorted(sections)} != {sorted(EXPECTED_SECTIONS)}")
    names: list[str] = []
    for file, (heading_count, rows) in sections.items():
        if heading_count != EXPECTED_SECTIONS.get(file) or len(rows) != heading_count:
            problems.append(f"{file}: heading says {heading_count}, table has {len(rows)} rows")
        for number, cells in enumerate(rows, start=1):
            if len(cells) != 3 or cells[0] != str(number):
                problems.append(f"{file}: row {number} is malformed: {cells}")
                continue
            match = FUTUREMUD_NAME.match(cells[1])
            if match is None:
                problems.append(f"{file}: row {number} names no FutureMUD test")
                continue
            names.append(match.group(1))
            ported = REFERENCE.search(cells[2]) is not None
            if ported == cells[2].startswith(NOT_YET):
                problems.append(f"{match.group(1)}: give our tests or '{NOT_YET}', not both")
            elif not ported and len(cells[2]) < len(NOT_YET) + 10:
                problems.append(f"{match.group(1)}: not yet ported, but no reason given")
    if len(names) != len(set(names)):
        problems.append("a FutureMUD test is listed twice")
    return problems


def test_every_referenced_test_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert len(REFERENCE.findall(text)) > 60
    assert reference_problems(text) == []


def test_every_futuremud_test_has_a_row_with_a_test_or_a_reason() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert row_problems(text) == []
    assert sum(len(rows) for _, rows in _sections(text).values()) == 60


def test_the_checks_catch_rot() -> None:
    good = DOC.read_text(encoding="utf-8")
    renamed = good.replace("::test_pause_unpause_toggles_paused_state`", "::test_pause_gone`")
    assert "tests/cli/test_ais.py::test_pause_gone does not exist" in reference_problems(renamed)
    row = "| 1 | `Pause_Unpause_TogglesPausedState` |"
    assert row in good
    extra = good.replace(row, "| 2 | `Another` | **not yet ported**: for a good reason\n" + row)
    assert any("heading says 1, table has 2" in p for p in row_problems(extra))
    [line] = [x for x in good.splitlines() if x.startswith(row)]
    untested = good.replace(line, row + " nothing |")
    assert row_problems(untested) == [
        "Pause_Unpause_TogglesPausedState: give our tests or '**not yet ported**', not both"
    ]
