"""The model seam: provider-neutral requests and responses, and the `Model` protocol.

`openai_responses.py` implements it over the Responses API (the only module importing
``openai``); `offline.py` implements it with a rule-based stand-in that is not a language model.
Input and output items are plain Responses-API dicts so a turn can be recorded and replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ToolChoice = Literal["auto", "required", "none"]
ResponseItem = dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    """A function tool offered to the model (strict JSON schema)."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = True

    def to_api(self) -> dict[str, Any]:
        """The Responses-API ``tools`` entry."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": self.strict,
        }


@dataclass(frozen=True)
class ModelRequest:
    """One Responses-API call, minus transport details."""

    model: str
    input: list[ResponseItem]
    instructions: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    max_output_tokens: int | None = None
    text_format: dict[str, Any] | None = None
    """A ``text.format`` object, e.g. a strict json_schema for the attention verdict."""
    truncation: Literal["auto", "disabled"] | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    prompt_cache_key: str | None = None
    """Groups requests sharing a prefix so the provider routes them to the same prompt cache."""
    timeout_seconds: float | None = None
    """Limit for one HTTP attempt of this request (None: the endpoint's default)."""
    max_retries: int | None = None
    """Retries of this request on a retryable failure (None: the endpoint's default)."""
    service_tier: str | None = None
    """The provider's processing tier (``flex`` for work that can wait, at a lower price);
    None: the endpoint's default. `TierFallback` sends a refused one again without it."""


@dataclass(frozen=True)
class FunctionCall:
    """A tool call the model asked for. `arguments` is the raw JSON text, unparsed."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    """Token counts of one request."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_tokens + other.cached_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True)
class ModelResponse:
    """What came back.

    Attributes:
        continuation: output items to append to the next request's input (reasoning items
            carry their encrypted content; reasoning items without it are dropped, because a
            stateless request cannot refer to them).
    """

    id: str
    model: str
    status: str
    function_calls: tuple[FunctionCall, ...]
    output_text: str
    continuation: tuple[ResponseItem, ...]
    usage: Usage
    incomplete_reason: str | None = None
    service_tier: str | None = None
    """The tier that served the request, when the provider says (it prices the usage)."""


def api_body(request: ModelRequest) -> dict[str, Any]:
    """The Responses-API request body a `ModelRequest` stands for (stateless, ``store=false``)."""
    body: dict[str, Any] = {"model": request.model, "input": list(request.input), "store": False}
    if request.instructions is not None:
        body["instructions"] = request.instructions
    if request.tools:
        body["tools"] = [tool.to_api() for tool in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    if request.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.reasoning_effort is not None:
        body["reasoning"] = {"effort": request.reasoning_effort}
        body["include"] = ["reasoning.encrypted_content"]
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.text_format is not None:
        body["text"] = {"format": request.text_format}
    if request.truncation is not None:
        body["truncation"] = request.truncation
    if request.metadata:
        body["metadata"] = dict(request.metadata)
    if request.prompt_cache_key is not None:
        body["prompt_cache_key"] = request.prompt_cache_key
    return body


def response_to_json(response: ModelResponse) -> dict[str, Any]:
    """The answer as JSON (for the turn journal); its usage is left out: a replayed answer
    costs nothing again."""
    return {
        "id": response.id,
        "model": response.model,
        "status": response.status,
        "function_calls": [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in response.function_calls
        ],
        "output_text": response.output_text,
        "continuation": list(response.continuation),
        "incomplete_reason": response.incomplete_reason,
    }


def response_from_json(data: dict[str, Any]) -> ModelResponse:
    """An answer `response_to_json` wrote, with no usage."""
    return ModelResponse(
        id=str(data["id"]),
        model=str(data["model"]),
        status=str(data["status"]),
        function_calls=tuple(
            FunctionCall(str(c["call_id"]), str(c["name"]), str(c["arguments"]))
            for c in data["function_calls"]
        ),
        output_text=str(data["output_text"]),
        continuation=tuple(data["continuation"]),
        usage=Usage(),
        incomplete_reason=data.get("incomplete_reason"),
    )


class Model(Protocol):
    """Anything that answers a `ModelRequest`.

    Raises:
        ModelTransientError: rate limits, server errors, timeouts (after the SDK's retries).
        ModelFatalError: authentication, unknown model, rejected request.
    """

    @property
    def name(self) -> str:
        """A human-readable name of the endpoint (shown in logs and the demo banner)."""
        ...

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the parsed response."""
        ...
