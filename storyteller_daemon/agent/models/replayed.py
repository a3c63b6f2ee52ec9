"""Models for replaying a recorded turn (`runs.replay`): the recording's own answers, in order,
or a live model asked every request under another model name (``runs replay --model``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from storyteller_daemon.agent.models.interface import (
    Model,
    ModelRequest,
    ModelResponse,
    Usage,
    response_from_json,
)
from storyteller_daemon.errors import ModelFatalError, ModelTransientError


def response_from(entry: dict[str, Any]) -> ModelResponse:
    """The `ModelResponse` a recorded request entry holds, with its recorded usage."""
    return replace(response_from_json(entry["response"]), usage=Usage(**entry["usage"]))


class ReplayModel:
    """Answers the n-th request with the n-th recorded response (or recorded model error)."""

    name = "replay"

    def __init__(self, recorded: Sequence[dict[str, Any]]) -> None:
        self._recorded = list(recorded)
        self.sent: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The recorded answer to the request in this position."""
        self.sent.append(request)
        index = len(self.sent) - 1
        if index >= len(self._recorded):
            raise ModelFatalError(f"replay: the recording has no response #{index + 1}")
        entry = self._recorded[index]
        if entry.get("response") is None:
            error = str(entry.get("error") or "no response recorded")
            if error.startswith("ModelFatalError"):
                raise ModelFatalError(f"replayed: {error}")
            raise ModelTransientError(f"replayed: {error}")
        return response_from(entry)


class RenamedModel:
    """A live model asked every request under one model name (``runs replay --model``)."""

    def __init__(self, inner: Model, model_name: str) -> None:
        self._inner = inner
        self._model_name = model_name

    @property
    def name(self) -> str:
        """The wrapped endpoint's name and the model asked."""
        return f"{self._inner.name} as {self._model_name}"

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Ask the inner model, under the chosen name."""
        return await self._inner.respond(replace(request, model=self._model_name))
