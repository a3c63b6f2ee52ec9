"""The `Model` implementation over the OpenAI Responses API (the only module importing ``openai``).

Every request is stateless (``store=False``): the caller resends instructions and the whole item
list each round. What the request's model does not take is left out first
(`capabilities.shape_request`: no reasoning fields for a model that does not reason or an effort
of ``none``, no strict schemas or prompt-cache key where it takes none). Reasoning models that
return encrypted reasoning therefore get ``include=["reasoning.encrypted_content"]``, and
reasoning items that came back without encrypted content are left out of the continuation,
because a stateless request cannot refer to an item by id alone (the API answers "Item with id
'rs_…' not found").

The SDK retries connection errors, timeouts, 408, 409, 429 and 5xx itself (``max_retries``,
honouring ``retry-after`` headers); what still fails afterwards is translated here into
`ModelTransientError` or `ModelFatalError`.

The SDK is imported, and its client made, with the first request: importing it takes a good
part of a second of CPU time, which a starting daemon does not need to spend before it is ready.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

from storyteller_daemon.agent.models.capabilities import (
    ModelCapabilities,
    infer_capabilities,
    shape_request,
)
from storyteller_daemon.agent.models.interface import (
    FunctionCall,
    ModelRequest,
    ModelResponse,
    ResponseItem,
    Usage,
)
from storyteller_daemon.errors import ModelError, ModelFatalError, ModelTransientError

if TYPE_CHECKING:  # the SDK itself is imported with the first request (see `_client`)
    import openai
    from openai.types.responses import (
        Response,
        ResponseIncludable,
        ResponseTextConfigParam,
    )
    from openai.types.responses.response_create_params import (
        ToolChoice as ApiToolChoice,
    )
    from openai.types.shared_params import Reasoning

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_ENCRYPTED_REASONING: ResponseIncludable = "reasoning.encrypted_content"
_MAX_DETAIL_CHARS = 300
_TRANSIENT_STATUSES = frozenset({408, 409, 429})


class OpenAIResponsesModel:
    """A `Model` that calls ``POST /responses`` on OpenAI or any compatible server.

    Args:
        api_key: the bearer token sent to the endpoint.
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``; None means OpenAI's.
        timeout_seconds: limit for one HTTP attempt.
        max_retries: how many times the SDK retries a retryable failure before giving up.
        headers: extra headers sent with every request.
        capabilities: what a model id takes (default: inferred from the id); what a model
            does not take is left out of its requests (`capabilities.shape_request`).

    Raises:
        ValueError: an argument is empty or out of range.
    """

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        headers: Mapping[str, str] | None = None,
        capabilities: Callable[[str], ModelCapabilities] = infer_capabilities,
    ) -> None:
        if not api_key.strip():
            raise ValueError("api_key must not be empty")
        if not timeout_seconds > 0:  # also rejects NaN
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        if base_url is not None and urlsplit(base_url).scheme not in ("http", "https"):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self._api_key = api_key
        self._capabilities = capabilities
        self._timeout_seconds = timeout_seconds
        self._max_retries = max_retries
        self._base_url = base_url
        self._headers = dict(headers) if headers else None
        self._name = "openai:" + (_display_url(base_url) if base_url else "api.openai.com")
        self._sdk_client: openai.AsyncOpenAI | None = None

    @property
    def _client(self) -> openai.AsyncOpenAI:
        """The SDK's client, made (and the SDK imported, a good part of a second of CPU time)
        at the first request rather than while the daemon starts."""
        if self._sdk_client is None:
            import openai

            # The default URL is passed explicitly so the SDK never falls back to
            # OPENAI_BASE_URL: configuration comes from the config file only.
            self._sdk_client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self._base_url or DEFAULT_BASE_URL,
                timeout=self._timeout_seconds,
                max_retries=self._max_retries,
                default_headers=self._headers,
                # Counts each request's HTTP attempts (the SDK's retries included) and the
                # answers they got, so a failed request's ledger row can say how many may be
                # billed.
                http_client=openai.DefaultAsyncHttpx2Client(
                    timeout=self._timeout_seconds,
                    event_hooks={"request": [_attempt_sent], "response": [_attempt_answered]},
                ),
            )
        return self._sdk_client

    @property
    def name(self) -> str:
        """``openai:`` followed by the endpoint (credentials in the URL are left out)."""
        return self._name

    async def close(self) -> None:
        """Close the HTTP connection pool (if a request opened one)."""
        if self._sdk_client is not None:
            await self._sdk_client.close()

    async def __aenter__(self) -> OpenAIResponsesModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Send one stateless Responses-API request and convert the answer.

        Raises:
            ModelTransientError: rate limit, timeout, connection failure, 408/409/5xx, after
                the SDK's own retries.
            ModelFatalError: bad key, no permission, unknown model, rejected request, or an
                answer that is not a Responses-API response.
        """
        import openai  # once, with the first request (see `_client`)

        client = self._client
        omit = openai.omit
        capabilities = self._capabilities(request.model)
        request = shape_request(request, capabilities)
        effort = request.reasoning_effort
        encrypted = effort is not None and capabilities.encrypted_reasoning
        if request.max_retries is not None:
            client = client.with_options(max_retries=request.max_retries)
        attempts = _Attempts()
        counting = _attempts.set(attempts)
        try:
            response = await client.responses.create(
                model=request.model,
                instructions=request.instructions if request.instructions is not None else omit,
                tool_choice=(
                    cast("ApiToolChoice", request.tool_choice)
                    if request.tool_choice is not None
                    else omit
                ),
                parallel_tool_calls=(
                    request.parallel_tool_calls if request.parallel_tool_calls is not None else omit
                ),
                reasoning=cast("Reasoning", {"effort": effort}) if effort is not None else omit,
                include=[_ENCRYPTED_REASONING] if encrypted else omit,
                max_output_tokens=(
                    request.max_output_tokens if request.max_output_tokens is not None else omit
                ),
                text=(
                    cast("ResponseTextConfigParam", {"format": request.text_format})
                    if request.text_format is not None
                    else omit
                ),
                truncation=request.truncation if request.truncation is not None else omit,
                metadata=dict(request.metadata) if request.metadata else omit,
                prompt_cache_key=(
                    request.prompt_cache_key if request.prompt_cache_key is not None else omit
                ),
                service_tier=(
                    cast(Any, request.service_tier) if request.service_tier is not None else omit
                ),
                timeout=(
                    request.timeout_seconds
                    if request.timeout_seconds is not None
                    else openai.NOT_GIVEN
                ),
                store=False,
                extra_body=_items(request),
            )
        except openai.OpenAIError as exc:
            error = self._translate(exc, request)
            if error.input_billed:
                # Every attempt that went out and got no status may be billed for its input.
                error.billed_attempts = max(attempts.sent - attempts.answered, 1)
            raise error from exc
        finally:
            _attempts.reset(counting)
        try:
            return _convert(response)
        except (AttributeError, TypeError, ValueError) as exc:
            raise ModelFatalError(
                f"{self._name} answered with a body that is not a Responses-API response "
                f"({type(exc).__name__}: {self._scrub(str(exc))})",
                request_status="bad_response",
                input_billed=True,
            ) from exc

    def _translate(
        self, exc: openai.OpenAIError, request: ModelRequest | None = None
    ) -> ModelError:
        """The daemon's error for an SDK exception, worded without secrets."""
        import openai  # imported already: the exception is the SDK's

        where = self._name
        timeout, retries = self._timeout_seconds, self._max_retries
        if request is not None and request.timeout_seconds is not None:
            timeout = request.timeout_seconds
        if request is not None and request.max_retries is not None:
            retries = request.max_retries
        cause = exc.__cause__
        # The provider may bill the input of a request whose body reached it (a timeout, a
        # dropped connection, an unreadable answer); one refused with a status, or that never
        # connected, bills nothing.
        if _never_connected(cause):
            reason = f" ({type(cause).__name__}: {self._scrub(str(cause))})"
            return ModelTransientError(
                f"{where}: could not connect{reason} (gave up after {retries} retries)",
                request_status="unreachable",
            )
        if isinstance(exc, openai.APITimeoutError):
            return ModelTransientError(
                f"{where}: no answer within {timeout:g} s (gave up after {retries} retries)",
                request_status="timeout",
                input_billed=True,
            )
        if isinstance(exc, openai.APIConnectionError):
            reason = f" ({type(cause).__name__}: {self._scrub(str(cause))})" if cause else ""
            return ModelTransientError(
                f"{where}: the connection failed{reason} (gave up after {retries} retries)",
                request_status="connection_error",
                input_billed=True,
            )
        if isinstance(exc, openai.APIResponseValidationError):
            return ModelFatalError(
                f"{where}: HTTP {exc.status_code} with a body that is not a Responses-API reply",
                request_status="bad_response",
                input_billed=True,
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = self._status_detail(exc)
            if status in _TRANSIENT_STATUSES or status >= 500:
                retried = f" (gave up after {retries} retries)"
                return ModelTransientError(
                    f"{where}: HTTP {status}{detail}{retried}", status=status
                )
            if isinstance(exc, openai.AuthenticationError):
                # OpenAI's 401 message quotes part of the key; the status and code suffice.
                code = f" ({exc.code})" if exc.code else ""
                return ModelFatalError(
                    f"{where}: HTTP 401{code}: the API key was rejected", status=401
                )
            return ModelFatalError(f"{where}: HTTP {status}{detail}", status=status)
        return ModelFatalError(f"{where}: {type(exc).__name__}: {self._scrub(str(exc))}")

    def _status_detail(self, exc: openai.APIStatusError) -> str:
        """`` (code): message`` from the API's error body, shortened and scrubbed."""
        body = exc.body
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message:
            message = body if isinstance(body, str) else ""
        message = self._scrub(" ".join(message.split()))
        if len(message) > _MAX_DETAIL_CHARS:
            message = message[: _MAX_DETAIL_CHARS - 1] + "…"
        code = f" ({exc.code})" if exc.code else ""
        return f"{code}: {message}" if message else code

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "[api key]")


@dataclass
class _Attempts:
    """The HTTP attempts of one request: sent, and answered with a status."""

    sent: int = 0
    answered: int = 0


_attempts: ContextVar[_Attempts | None] = ContextVar("responses_attempts", default=None)


async def _attempt_sent(request: object) -> None:
    counted = _attempts.get()
    if counted is not None:
        counted.sent += 1


async def _attempt_answered(response: object) -> None:
    counted = _attempts.get()
    if counted is not None:
        counted.answered += 1


_CONNECT_FAILURES = frozenset({"ConnectError", "ConnectTimeout"})


def _never_connected(cause: BaseException | None) -> bool:
    """Whether the HTTP client failed before a connection stood (so nothing was sent).

    The SDK raises its timeout and connection errors from the HTTP library's; their class
    names tell a connect failure from one after the request went out.
    """
    return cause is not None and any(c.__name__ in _CONNECT_FAILURES for c in type(cause).__mro__)


def _display_url(url: str) -> str:
    """The URL without user name and password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _items(request: ModelRequest) -> dict[str, Any]:
    """The input items and tool schemas, sent as they are.

    They are plain Responses-API JSON by design (recordable, replayable). Passed as the SDK's
    typed ``input`` and ``tools`` they would go through its type-driven transform, which walks
    each item against every member of the input union: most of a request's CPU time, to change
    nothing (no field of the Responses input items or tools has an alias or a format;
    tests/agent/test_openai_responses.py holds the SDK to that).
    """
    items: dict[str, Any] = {"input": list(request.input)}
    if request.tools:
        items["tools"] = [tool.to_api() for tool in request.tools]
    return items


def _convert(response: Response) -> ModelResponse:
    """The provider-neutral view of an SDK response."""
    calls: list[FunctionCall] = []
    continuation: list[ResponseItem] = []
    for item in response.output:
        if item.type == "function_call":
            calls.append(FunctionCall(item.call_id, item.name, item.arguments))
        if item.type == "reasoning" and not item.encrypted_content:
            continue
        continuation.append(item.model_dump(mode="json", exclude_none=True, by_alias=True))
    incomplete = response.incomplete_details
    return ModelResponse(
        id=response.id,
        model=response.model,
        status=response.status or "completed",
        function_calls=tuple(calls),
        output_text=response.output_text,
        continuation=tuple(continuation),
        usage=_usage(response),
        incomplete_reason=incomplete.reason if incomplete is not None else None,
        service_tier=response.service_tier,
    )


def _usage(response: Response) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    input_details: Any = getattr(usage, "input_tokens_details", None)
    output_details: Any = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=usage.input_tokens or 0,
        cached_tokens=getattr(input_details, "cached_tokens", 0) or 0,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=getattr(output_details, "reasoning_tokens", 0) or 0,
    )
