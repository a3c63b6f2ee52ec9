"""The replay buffer's two copies stay one text.

The project's replay buffer (`world_adapter/replay.py`) and the Evennia bridge's copy
(`world_adapter/bridges/evennia/replaybuffer.py`, standard library only, since that folder is
copied into games) differ only in their module docstring, their imports and the Evennia copy's own
`Cursor`. Everything after those is compared as text, comments included, so an edit to one copy
without the other fails here. test_replay_buffer.py runs the buffer's tests against both.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from world_adapter import replay
from world_adapter.bridges.evennia import replaybuffer

PROJECT = Path(replay.__file__)
EVENNIA = Path(replaybuffer.__file__)
OWN_DEFINITIONS = {PROJECT: frozenset[str](), EVENNIA: frozenset({"Cursor"})}
"""Top-level definitions each copy has for itself (the project's copy imports its `Cursor`)."""


def _is_head(node: ast.stmt, index: int, own: frozenset[str]) -> bool:
    """Whether `node` is the module docstring, an import or one of the copy's own definitions."""
    docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    owned = isinstance(node, ast.ClassDef | ast.FunctionDef | ast.Assign) and _names(node) <= own
    return docstring or isinstance(node, ast.Import | ast.ImportFrom) or (bool(own) and owned)


def _names(node: ast.stmt) -> frozenset[str]:
    if isinstance(node, ast.Assign):
        return frozenset(t.id for t in node.targets if isinstance(t, ast.Name))
    assert isinstance(node, ast.ClassDef | ast.FunctionDef)
    return frozenset({node.name})


def shared_text(source: str, own: frozenset[str]) -> str:
    """The text of `source` after its docstring, imports and own definitions.

    Raises:
        AssertionError: If an import or an own definition comes after the shared text begins
            (the shared part must be one stretch, so nothing in it escapes the comparison).
    """
    body = ast.parse(source).body
    heads = [i for i, node in enumerate(body) if _is_head(node, i, own)]
    first_shared = max(heads) + 1
    assert heads == list(range(first_shared)), "the copy's own lines must all come first"
    assert first_shared < len(body), "the copy has no shared part"
    lines = source.splitlines(keepends=True)
    return "".join(lines[body[first_shared].lineno - 1 :])


def _shared(path: Path) -> str:
    return shared_text(path.read_text(encoding="utf-8"), OWN_DEFINITIONS[path])


def test_the_two_copies_share_everything_after_their_imports() -> None:
    project, evennia = _shared(PROJECT), _shared(EVENNIA)
    for name in ("class GapReason", "class Gap", "class Start", "class ReplayBuffer"):
        assert name in project
    assert project == evennia, (
        "world_adapter/replay.py and world_adapter/bridges/evennia/replaybuffer.py differ "
        "after their imports: change both together"
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("        self.evicted += 1\n", "        self.evicted += 2\n"),
        ('    AHEAD = "ahead"\n', '    AHEAD = "ahead"  # beyond the newest\n'),
    ],
)
def test_an_edit_to_one_copy_alone_is_caught(old: str, new: str) -> None:
    source = PROJECT.read_text(encoding="utf-8")
    assert old in source
    edited = shared_text(source.replace(old, new, 1), OWN_DEFINITIONS[PROJECT])
    assert edited != _shared(EVENNIA)


def test_a_definition_added_among_the_imports_is_not_skipped() -> None:
    source = EVENNIA.read_text(encoding="utf-8").replace(
        "\n\nclass Cursor(", "\n\nLIMIT = 3\n\nfrom bisect import insort\n\n\nclass Cursor(", 1
    )
    with pytest.raises(AssertionError, match="own lines must all come first"):
        shared_text(source, OWN_DEFINITIONS[EVENNIA])


def test_the_evennia_copy_imports_only_the_standard_library() -> None:
    imported = set()
    for node in ast.parse(EVENNIA.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None
            imported.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Import):
            imported |= {alias.name.partition(".")[0] for alias in node.names}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}
