"""Reading one TOML table of a pack, with errors that name the file and the key.

A `PackTable` has typed getters (text, flag, integer, ids, sub-tables...) that reject a value of
the wrong type or shape with a `ConfigError` giving the file (as the operator typed its path,
`display_path`) and the dotted key; every key read is remembered, so `PackTable.finish` can
reject the keys nobody asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from storyteller_daemon.errors import ConfigError

T = TypeVar("T")


def display_path(path: Path) -> str:
    """A path as the operator typed it: relative to the working directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class PackTable:
    """One TOML table being read: typed getters whose errors name the file and the key.

    Every key read is remembered, so `finish` can reject the keys nobody asked for.

    Args:
        data: the table's keys and values.
        file: the file it was read from.
        path: the table's dotted path inside the file ("" for the top level).
    """

    def __init__(self, data: dict[str, Any], file: Path, path: str = "") -> None:
        self._data = data
        self._file = file
        self._path = path
        self._seen: set[str] = set()

    def key(self, key: str) -> str:
        """The dotted path of `key` inside this table."""
        return f"{self._path}.{key}" if self._path else key

    def error(self, key: str | None, problem: str) -> ConfigError:
        """An error at `key` of this table (or at the table itself)."""
        where = self.key(key) if key is not None else (self._path or None)
        return ConfigError(display_path(self._file), problem, where)

    def keys(self) -> list[str]:
        """Every key of the table, for tables whose keys are data (names → values)."""
        return list(self._data)

    def _take(self, key: str) -> Any:
        self._seen.add(key)
        return self._data.get(key)

    def _typed(self, key: str, kind: type[T], what: str) -> T | None:
        value = self._take(key)
        # bool is a subclass of int: a TOML boolean is never accepted where a number is wanted.
        if value is None or (isinstance(value, kind) and isinstance(value, bool) == (kind is bool)):
            return value
        raise self.error(key, f"must be {what}, not {type(value).__name__} {value!r}")

    def optional_text(self, key: str) -> str | None:
        """A non-blank string, stripped, or None when the key is absent."""
        value = self._typed(key, str, "a string")
        if value is None:
            return None
        if not value.strip():
            raise self.error(key, "must not be blank")
        return value.strip()

    def text(self, key: str, default: str | None = None) -> str:
        """A required non-blank string (or `default` when absent and a default is given)."""
        value = self.optional_text(key)
        if value is None:
            if default is None:
                raise self.error(key, "required key is missing")
            return default
        return value

    def verbatim(self, key: str) -> str:
        """A string exactly as written, blank allowed ("" when absent): a regular expression."""
        value = self._typed(key, str, "a string")
        return "" if value is None else value

    def flag(self, key: str, default: bool) -> bool:
        """A boolean."""
        value = self._typed(key, bool, "true or false")
        return default if value is None else value

    def integer(self, key: str, default: int) -> int:
        """An integer."""
        value = self._typed(key, int, "an integer")
        return default if value is None else value

    def number(self, key: str, default: float) -> float:
        """A number (an integer or a float)."""
        value = self._take(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"must be a number, not {type(value).__name__} {value!r}")
        return float(value)

    def _array(self, key: str) -> list[Any]:
        value = self._typed(key, list, "an array")
        return [] if value is None else value

    def texts(self, key: str) -> list[str]:
        """An array of non-blank strings (empty when absent)."""
        items = self._array(key)
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise self.error(key, f"must hold only non-blank strings, not {item!r}")
        return [str(item).strip() for item in items]

    def ids(self, key: str) -> list[int]:
        """An array of distinct positive integer ids (empty when absent)."""
        items = self._array(key)
        for item in items:
            if not isinstance(item, int) or isinstance(item, bool) or item <= 0:
                raise self.error(key, f"must hold only positive integer ids, not {item!r}")
        if len(set(items)) != len(items):
            raise self.error(key, "lists the same id twice")
        return [int(i) for i in items]

    def table(self, key: str, *, required: bool = False) -> PackTable:
        """A sub-table (empty when absent and not required)."""
        value = self._take(key)
        if value is None:
            if required:
                raise self.error(key, "required table is missing")
            value = {}
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, not {type(value).__name__}")
        return PackTable(value, self._file, self.key(key))

    def tables(self, key: str) -> list[PackTable]:
        """An array of tables; each is addressed by its ``name`` when it has one."""
        items = self._array(key)
        out = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.error(f"{key}[{index}]", "must be a table")
            name = item.get("name")
            label = f'"{name.strip()}"' if isinstance(name, str) and name.strip() else str(index)
            out.append(PackTable(item, self._file, f"{self.key(key)}[{label}]"))
        return out

    def finish(self) -> None:
        """Reject every key that was not read."""
        for key in self._data:
            if key not in self._seen:
                raise self.error(key, "unknown key")
