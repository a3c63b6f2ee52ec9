"""The newest shipped schema revision, read without importing alembic.

Importing alembic and loading every migration script costs a tenth of the daemon's CPU time to
ready, to answer a question whose answer is nearly always "the database is current". The
shipped migrations are one straight line, each file saying ``revision = "0021"`` and
``down_revision = "0020"`` (or ``None`` for the first): `shipped_head` reads those two lines of
every migration file and names the one revision that no other follows. When the files are
anything else (a merge, a branch, a line it cannot read), it says None, and alembic, which
stays the authority for every other answer (`Database.require_current`), decides.
"""

from __future__ import annotations

import re
from pathlib import Path

_ASSIGNMENT = re.compile(
    r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(?:\"([^\"\n]+)\"|'([^'\n]+)'|(None))\s*$",
    re.MULTILINE,
)
"""``revision = "0021"``, ``down_revision: str | None = "0020"``, ``down_revision = None``."""


def _revision_lines(script: str) -> tuple[str, str | None] | None:
    """The script's revision and the one it follows, or None unless it names exactly one of
    each as a plain string (or None for the first)."""
    found: dict[str, list[str | None]] = {"revision": [], "down_revision": []}
    for match in _ASSIGNMENT.finditer(script):
        name, double, single, none = match.groups()
        found[name].append(None if none else (double or single))
    revision, follows = found["revision"], found["down_revision"]
    if len(revision) != 1 or revision[0] is None or len(follows) != 1:
        return None
    return revision[0], follows[0]


def shipped_head(migrations: Path) -> str | None:
    """The head revision of the migrations in ``migrations/versions``, when they form one
    straight line from a first revision; None when alembic must work it out."""
    follows: dict[str, str | None] = {}
    for path in (migrations / "versions").iterdir():
        # The scripts alembic loads: *.py but not __init__.py nor an editor's .# lock file.
        if path.suffix != ".py" or path.name.startswith(("__init__", ".#")):
            continue
        lines = _revision_lines(path.read_text(encoding="utf-8"))
        if lines is None or lines[0] in follows:
            return None
        follows[lines[0]] = lines[1]
    followed = list(follows.values())
    if followed.count(None) != 1 or len(set(followed)) != len(followed):
        return None  # no first revision, or two following one revision: a branch
    heads = follows.keys() - set(followed)
    if len(heads) != 1:
        return None
    head = next(iter(heads))
    walked, revision = 0, follows.get(head)
    while revision is not None and walked < len(follows):  # down the line to the first
        walked, revision = walked + 1, follows.get(revision)
    return head if walked == len(follows) - 1 and revision is None else None
