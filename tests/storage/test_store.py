"""The `Store` gives every repository the storage package defines, and nothing else builds one."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from datetime import UTC, datetime
from pathlib import Path

import storyteller_daemon
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock

PACKAGE = Path(storyteller_daemon.__file__).parent


def _repository_classes() -> set[type]:
    """Every class of a storage module that takes the database first: the repositories."""
    storage = importlib.import_module("storyteller_daemon.storage")
    found: set[type] = set()
    for module in pkgutil.iter_modules(storage.__path__):
        loaded = importlib.import_module(f"storyteller_daemon.storage.{module.name}")
        for _, cls in inspect.getmembers(loaded, inspect.isclass):
            if cls.__module__ != loaded.__name__ or cls is Store or cls.__name__.startswith("_"):
                continue
            params = list(inspect.signature(cls.__init__).parameters)
            if params[1:2] == ["db"]:
                found.add(cls)
    return found


async def test_the_store_gives_every_repository(sqlite_store: Store) -> None:
    repositories = _repository_classes()
    given = {type(value) for value in vars(sqlite_store).values()}
    assert len(repositories) >= 20  # the walk found the package's repositories
    assert repositories - given == set()


async def test_a_stamped_store_shares_the_database_and_stamps_with_its_own_clock(
    sqlite_store: Store,
) -> None:
    moment = datetime(2031, 5, 6, 7, 8, tzinfo=UTC)
    stamped = sqlite_store.stamped_by(FakeClock(moment))
    assert stamped.db is sqlite_store.db
    created = await stamped.storytellers.create("Stamped")
    assert created.created_on == moment
    assert (await sqlite_store.storytellers.get("Stamped")).created_on == moment


def test_no_module_outside_storage_builds_a_repository_over_a_stores_database() -> None:
    names = "|".join(sorted(cls.__name__ for cls in _repository_classes()))
    built = re.compile(rf"\b({names})\((self\.)?\w*store\.db\b")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in PACKAGE.rglob("*.py")
        if "storage" not in path.relative_to(PACKAGE).parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if built.search(line)
    ]
    assert offenders == []
