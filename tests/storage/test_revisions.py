"""The start-up schema check reads the shipped head without alembic, agrees with alembic on it,
and leaves every answer but "current" to alembic."""

from __future__ import annotations

from pathlib import Path

import pytest

from storyteller_daemon.errors import NotMigratedError
from storyteller_daemon.storage.database import MIGRATIONS_DIR, Database
from storyteller_daemon.storage.revisions import shipped_head


def _migrations(tmp_path: Path, scripts: dict[str, str]) -> Path:
    versions = tmp_path / "migrations" / "versions"
    versions.mkdir(parents=True)
    for name, body in scripts.items():
        (versions / name).write_text(body, encoding="utf-8")
    return versions.parent


def _script(revision: str, down: str) -> str:
    return f'"""A migration."""\n\nrevision = "{revision}"\ndown_revision = {down}\n'


def test_the_shipped_head_is_alembics(sqlite_url: str) -> None:
    assert shipped_head(MIGRATIONS_DIR) == Database(sqlite_url).head_revision()


def test_a_straight_line_has_its_last_revision_as_head(tmp_path: Path) -> None:
    scripts = {
        "0001_a.py": _script("0001", "None"),
        "0003_c.py": "revision: str = \"0003\"\ndown_revision: str | None = '0002'\n",
        "0002_b.py": _script("0002", '"0001"'),
        "__init__.py": _script("9999", '"0003"'),  # not a migration: alembic skips it too
        "notes.txt": _script("8888", '"0003"'),
    }
    assert shipped_head(_migrations(tmp_path, scripts)) == "0003"


@pytest.mark.parametrize(
    "scripts",
    [
        pytest.param(  # two revisions follow one: a branch
            {
                "1.py": _script("0001", "None"),
                "2.py": _script("0002", '"0001"'),
                "3.py": _script("0003", '"0001"'),
            },
            id="branch",
        ),
        pytest.param(
            {
                "1.py": _script("0001", "None"),
                "2.py": _script("0002", '"0001"'),
                "3.py": _script("0003", '"0001"'),
                "4.py": _script("0004", '("0002", "0003")'),
            },
            id="merge",
        ),
        pytest.param(
            {"1.py": _script("0001", "None"), "2.py": 'down_revision = "0001"\n'},
            id="no revision line",
        ),
        pytest.param(
            {"1.py": _script("0001", "None"), "2.py": _script("0001", '"0001"')},
            id="a revision twice",
        ),
        pytest.param(  # a loop beside the line: alembic would refuse it
            {
                "1.py": _script("0001", "None"),
                "2.py": _script("0002", '"0001"'),
                "3.py": _script("0003", '"0004"'),
                "4.py": _script("0004", '"0003"'),
            },
            id="loop",
        ),
        pytest.param({"1.py": _script("0002", '"0001"')}, id="follows a missing revision"),
    ],
)
def test_anything_but_a_straight_line_is_left_to_alembic(
    tmp_path: Path, scripts: dict[str, str]
) -> None:
    assert shipped_head(_migrations(tmp_path, scripts)) is None


async def test_a_database_behind_the_head_is_refused_with_both_revisions(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    try:
        await db.upgrade("0001")
        needed = f"at revision 0001 but this version needs {db.head_revision()};"
        with pytest.raises(NotMigratedError, match=needed):
            await db.require_current()
        await db.upgrade()
        await db.require_current()
    finally:
        await db.close()
