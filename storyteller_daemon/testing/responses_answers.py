"""The answers `ScriptedResponsesServer` is scripted with: `Reply` and `Fault`.

A `Reply` is a successful response (function calls, an assistant message, arguments sent as
given, an empty or incomplete response, with usage, reasoning and latency); a `Fault` is an HTTP
error with an OpenAI-style body, or no answer at all until the server stops. A `Responder`
chooses one of them for a request when the script is empty (directly, or as an awaitable).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from storyteller_daemon.agent.models.interface import Usage

Item = dict[str, Any]
Responder = Callable[[dict[str, Any]], "Reply | Fault | Awaitable[Reply | Fault]"]

_ZERO_USAGE = Usage()


@dataclass(frozen=True)
class Reply:
    """One successful answer.

    Attributes:
        items: output items; ``id`` (and ``call_id`` of function calls) are filled in when absent.
        reasoning: put a reasoning item first (with encrypted content if the request asked).
        usage: token counts to report; None sends ``usage: null`` (the field is optional).
        status: the response status, e.g. ``completed`` or ``incomplete``.
        incomplete_reason: ``incomplete_details.reason`` when the status is ``incomplete``.
        delay_seconds: how long the server takes to answer (a model's latency).
    """

    items: tuple[Item, ...] = ()
    reasoning: bool = False
    usage: Usage | None = _ZERO_USAGE
    status: str = "completed"
    incomplete_reason: str | None = None
    delay_seconds: float = 0.0

    @classmethod
    def calls(
        cls,
        *calls: tuple[str, Mapping[str, Any]],
        usage: Usage | None = _ZERO_USAGE,
        reasoning: bool = False,
    ) -> Reply:
        """Function calls, given as ``(tool name, arguments)`` pairs."""
        items = tuple(
            _function_call(name, json.dumps(dict(arguments))) for name, arguments in calls
        )
        return cls(items=items, reasoning=reasoning, usage=usage)

    @classmethod
    def text(
        cls, text: str, *, usage: Usage | None = _ZERO_USAGE, reasoning: bool = False
    ) -> Reply:
        """An assistant message holding ``text``."""
        item: Item = {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }
        return cls(items=(item,), reasoning=reasoning, usage=usage)

    @classmethod
    def raw_arguments(
        cls,
        name: str,
        arguments: str,
        *,
        usage: Usage | None = _ZERO_USAGE,
        reasoning: bool = False,
    ) -> Reply:
        """A function call whose ``arguments`` text is sent exactly as given (e.g. broken JSON)."""
        return cls(items=(_function_call(name, arguments),), reasoning=reasoning, usage=usage)

    @classmethod
    def empty(cls, *, usage: Usage | None = _ZERO_USAGE) -> Reply:
        """A completed response with no output items."""
        return cls(usage=usage)

    def incomplete(self, reason: str = "max_output_tokens") -> Reply:
        """This reply, marked incomplete for ``reason``."""
        return replace(self, status="incomplete", incomplete_reason=reason)


def _function_call(name: str, arguments: str) -> Item:
    return {"type": "function_call", "status": "completed", "name": name, "arguments": arguments}


@dataclass(frozen=True)
class Fault:
    """An answer that is not a response: an HTTP error, or no answer at all.

    Attributes:
        kind: ``status`` (an error response), ``hang`` (no answer until the server stops) or
            ``drop`` (the connection is closed once the request is read: a reset).
        status_code: the HTTP status of a ``status`` fault.
        code: the ``error.code`` in the body.
        message: the ``error.message``; a realistic default depends on the status.
        retry_after: seconds announced in ``retry-after-ms`` and ``retry-after``.
    """

    kind: Literal["status", "hang", "drop"]
    status_code: int = 500
    code: str | None = None
    message: str | None = None
    retry_after: float | None = None

    @classmethod
    def status(
        cls,
        status_code: int,
        *,
        code: str | None = None,
        message: str | None = None,
        retry_after: float | None = None,
    ) -> Fault:
        """An HTTP error with an OpenAI-style ``{"error": {...}}`` body.

        Raises:
            ValueError: the status is not a 4xx/5xx code, or ``retry_after`` is negative.
        """
        if not 400 <= status_code <= 599:
            raise ValueError(f"a fault needs a 4xx or 5xx status, got {status_code}")
        if retry_after is not None and not retry_after >= 0:
            raise ValueError(f"retry_after must be >= 0 seconds, got {retry_after!r}")
        return cls("status", status_code, code, message, retry_after)

    @classmethod
    def hang(cls) -> Fault:
        """Accept the request and never answer (until the server stops); for timeout tests."""
        return cls("hang")

    @classmethod
    def drop(cls) -> Fault:
        """Read the request, then close the connection without answering (a reset after the
        body was sent)."""
        return cls("drop")
