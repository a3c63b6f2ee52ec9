"""Running progs exactly once: argument checks, idempotency keys, result conversion.

Pure Python. The engine glue supplies two functions:

* ``lookup(element_type, object_id)`` → the game object with that id and type, or None;
* ``invoke(call, on_value, on_error)`` → run ``call()`` (on the engine's main thread, possibly
  asynchronously) and report its value or exception exactly once.

A key whose run succeeded returns the stored outcome with ``replayed`` set and runs nothing; a
failed run is not stored; a request for a key still running waits for that run's outcome.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from .registry import OBJECT_TYPES, Prog, ProgError, ProgRegistry, ResultStore, element_type

log = logging.getLogger(__name__)

Lookup = Callable[[str, int], Any]
Invoke = Callable[[Callable[[], Any], Callable[[Any], None], Callable[[BaseException], None]], None]
Reply = Callable[[dict[str, Any] | None, ProgError | None], None]
"""Called once with ``(outcome, None)`` or ``(None, error)``."""

_NOUNS = {"Character": "character", "Location": "room", "Item": "item", "Exit": "exit"}


def check_argument(name: str, type_name: str, value: Any, lookup: Lookup) -> Any:
    """A JSON argument as the prog receives it: game objects for object types, else the value.

    Raises:
        ProgError: the value does not fit the type, or names no such object.
    """
    element, collection = element_type(type_name)
    if collection:
        if value is None:
            return []
        if not isinstance(value, list):
            raise ProgError(f"Argument '{name}' must be a list ({type_name}).")
        return [check_argument(name, element, item, lookup) for item in value]
    if element in OBJECT_TYPES:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ProgError(f"Argument '{name}' must be the id of a {_NOUNS[element]}.")
        found = lookup(element, value)
        if found is None:
            raise ProgError(f"There is no {_NOUNS[element]} with id {value}.")
        return found
    if element == "Text" and not isinstance(value, str):
        raise ProgError(f"Argument '{name}' must be text.")
    if element == "Number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ProgError(f"Argument '{name}' must be a number.")
    if element == "Boolean" and not isinstance(value, bool):
        raise ProgError(f"Argument '{name}' must be true or false.")
    return value


def to_json(value: Any) -> Any:
    """A prog's value as JSON: game objects (anything with an integer ``id``) become that id."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json(v) for v in value]
    object_id = getattr(value, "id", None)
    if isinstance(object_id, int) and not isinstance(object_id, bool):
        return object_id
    return str(value)


def convert_result(type_name: str, value: Any) -> Any:
    """The JSON value of a prog's result, by its declared return type."""
    element, collection = element_type(type_name)
    if element == "Void":
        return None
    if collection:
        return [convert_result(element, v) for v in (value or [])]
    if value is None:
        return None
    if element == "Boolean":
        return bool(value)
    if element == "Text":
        return str(value)
    return to_json(value)


class ProgExecutor:
    """Runs registered progs by id or name, once per idempotency key."""

    def __init__(
        self, registry: ProgRegistry, results: ResultStore, *, lookup: Lookup, invoke: Invoke
    ) -> None:
        self.registry = registry
        self.results = results
        self._lookup = lookup
        self._invoke = invoke
        self._running: dict[str, list[Reply]] = {}

    def execute(self, ref: str, arguments: dict[str, Any], key: str, reply: Reply) -> None:
        """Run prog `ref` with `arguments` under idempotency `key`; answer through `reply`."""
        stored = self.results.get(key)
        if stored is not None:
            reply({**stored, "replayed": True}, None)
            return
        waiting = self._running.get(key)
        if waiting is not None:
            waiting.append(reply)
            return
        try:
            prog = self.registry.find(ref)
            bound = prog.bind(arguments)
            values = [check_argument(n, t, v, self._lookup) for n, t, v in bound]
        except ProgError as exc:
            reply(None, exc)
            return
        self._running[key] = [reply]
        self._invoke(
            lambda: prog.func(*values),
            lambda value: self._succeeded(prog, key, value),
            lambda exc: self._failed(prog, key, exc),
        )

    def _succeeded(self, prog: Prog, key: str, value: Any) -> None:
        try:
            converted = convert_result(prog.returns, value)
        except Exception as exc:  # a prog returned something its type cannot hold
            self._failed(prog, key, exc)
            return
        outcome = {"prog": prog.name, "return_type": prog.returns, "value": converted}
        self.results.put(key, outcome)
        waiting = self._running.pop(key, [])
        for index, reply in enumerate(waiting):
            reply({**outcome, "replayed": index > 0}, None)

    def _failed(self, prog: Prog, key: str, exc: BaseException) -> None:
        if isinstance(exc, ProgError):
            error = exc
        elif isinstance(exc, TimeoutError):
            error = ProgError(f"Prog {prog.name} did not finish in time.")
        else:
            log.error("prog %s raised", prog.name, exc_info=exc)
            error = ProgError(f"Prog {prog.name} failed with an error inside the game.")
        for reply in self._running.pop(key, []):
            reply(None, error)
