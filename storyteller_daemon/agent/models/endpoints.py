"""Several model servers behind one `Model`: each request goes to its model's endpoint.

``[endpoints.NAME]`` adds servers besides ``[model]``'s and ``[models."ID"] endpoint`` says which
serves a model id (`config.endpoint_of`), so a storyteller's attention can run on a local server
while its turns use OpenAI. `EndpointRouter` picks the endpoint per request; an endpoint that
cannot be used (its key variable is not set) is an `UnavailableEndpoint`, whose requests fail
without being sent, naming what to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse
from storyteller_daemon.errors import REQUEST_NOT_SENT, ModelFatalError


class UnavailableEndpoint:
    """An endpoint that cannot be used: every request fails, unsent, saying why.

    Args:
        name: the endpoint's name.
        reason: what is wrong and how to fix it, e.g. ``LOCAL_KEY is not set``.
    """

    def __init__(self, name: str, reason: str) -> None:
        self._name = name
        self.reason = reason

    @property
    def name(self) -> str:
        """``unavailable:`` and the endpoint's name."""
        return f"unavailable:{self._name}"

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Raises `ModelFatalError` (not sent)."""
        raise ModelFatalError(
            f"endpoint {self._name} (for {request.model}) cannot be used: {self.reason}",
            request_status=REQUEST_NOT_SENT,
        )


class EndpointRouter:
    """A `Model` that sends each request to the endpoint serving its model.

    Args:
        endpoints: endpoint name → the model talking to it.
        route: model id → endpoint name.
    """

    def __init__(self, endpoints: Mapping[str, Model], route: Callable[[str], str]) -> None:
        self._endpoints = dict(endpoints)
        self._route = route

    @property
    def name(self) -> str:
        """Every endpoint, as ``NAME=endpoint`` pairs."""
        return ", ".join(f"{name}={model.name}" for name, model in self._endpoints.items())

    @property
    def endpoints(self) -> Mapping[str, Model]:
        """Endpoint name → the model talking to it."""
        return self._endpoints

    def endpoint_for(self, model: str) -> tuple[str, Model | None]:
        """The name of the endpoint serving `model`, and its model (None: not configured)."""
        name = self._route(model)
        return name, self._endpoints.get(name)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Send the request to its model's endpoint.

        Raises:
            ModelFatalError: the endpoint is not configured (not sent), or as the endpoint does.
            ModelTransientError: as the endpoint does.
        """
        name, endpoint = self.endpoint_for(request.model)
        if endpoint is None:
            raise ModelFatalError(
                f"no endpoint {name!r} is configured for {request.model}",
                request_status=REQUEST_NOT_SENT,
            )
        return await endpoint.respond(request)

    async def close(self) -> None:
        """Close every endpoint that can be closed."""
        for endpoint in self._endpoints.values():
            close = getattr(endpoint, "close", None)
            if close is not None:
                await close()
