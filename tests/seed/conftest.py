"""Fixtures for pack tests: editable copies of the shipped packs."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from storyteller_daemon.interchange.packs.files import SEED_DIR

CopyPack = Callable[[str], Path]


@pytest.fixture
def copy_pack(tmp_path: Path) -> CopyPack:
    """Copy a shipped pack into a temporary seed directory and return the copy's path."""

    def copy(name: str) -> Path:
        target = tmp_path / "seed" / name
        shutil.copytree(SEED_DIR / name, target)
        return target

    return copy


EditFile = Callable[[Path, str, str], None]


@pytest.fixture
def edit() -> EditFile:
    """Replace one exact piece of a pack file, failing loudly if it is not there exactly once."""

    def replace_once(file: Path, old: str, new: str) -> None:
        text = file.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} should occur once in {file}"
        file.write_text(text.replace(old, new), encoding="utf-8")

    return replace_once
