"""What a model takes: reasoning efforts, encrypted reasoning, strict schemas, a prompt-cache key.

`infer_capabilities` reads them from the model id; ``[models."ID"]`` in the configuration
overrides any of them (`capabilities_for`). `shape_request` then leaves out of a request what
its model does not take, so one storyteller configuration works on OpenAI and on a local server:

* a model that does not reason gets no ``reasoning`` and no encrypted-reasoning ``include``;
* effort ``none`` sends no reasoning fields where the model takes ``none`` (its default then is
  no reasoning); a model that does not take ``none`` gets its lowest effort instead, and any
  other effort it does not take is sent as the nearest one it does;
* without strict JSON schemas, ``text.format`` is left out (the attention gate parses its
  verdict tolerantly anyway) and tools are sent with ``strict: false``;
* ``prompt_cache_key`` only goes to models that take it.

Inference from the id (a vendor prefix such as OpenRouter's ``openai/`` is looked through):
``gpt-5`` and its dated or sized variants reason with minimal…high; ``gpt-5.1`` and later with
none…high; ``gpt-5-pro`` only high; the o-series (``o1``, ``o3``, ``o4-mini``) low…high;
``gpt-oss`` low…high without encrypted reasoning. Every other id is a model that does not
reason. Encrypted reasoning and ``prompt_cache_key`` are inferred for OpenAI's own ids (no
vendor prefix) only; strict schemas for every model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from storyteller_daemon.agent.models.interface import ModelRequest
from storyteller_daemon.config import ModelEntry, model_entry

EFFORTS = ("none", "minimal", "low", "medium", "high")
"""Every reasoning effort, lowest first."""

_GPT5_PRO = re.compile(r"^gpt-5(\.\d+)?-pro")
_GPT5_POINT = re.compile(r"^gpt-5\.\d+")
_O_SERIES = re.compile(r"^o[1-9](-|$)")


@dataclass(frozen=True)
class ModelCapabilities:
    """What one model takes.

    Attributes:
        reasoning: a reasoning model (takes ``reasoning.effort``).
        efforts: the efforts it accepts, lowest first (empty when it does not reason).
        encrypted_reasoning: it returns encrypted reasoning items on request.
        strict_json_schema: it takes strict JSON schemas for ``text.format`` and tools.
        prompt_cache_key: it takes ``prompt_cache_key``.
    """

    reasoning: bool
    efforts: tuple[str, ...]
    encrypted_reasoning: bool
    strict_json_schema: bool
    prompt_cache_key: bool

    def effort(self, wanted: str | None) -> str | None:
        """The effort to send for `wanted` (None: send no reasoning fields)."""
        if not self.reasoning or wanted is None or not self.efforts:
            return None
        if wanted in self.efforts:
            return None if wanted == "none" else wanted
        order = EFFORTS.index(wanted) if wanted in EFFORTS else EFFORTS.index("medium")
        # The nearest effort it takes; between two, the higher.
        return min(self.efforts, key=lambda e: (abs(EFFORTS.index(e) - order), -EFFORTS.index(e)))


def infer_capabilities(model: str) -> ModelCapabilities:
    """What a model takes, judged from its id alone."""
    vendor, _, base = model.lower().rpartition("/")
    openai_own = not vendor
    efforts: tuple[str, ...] = ()
    encrypted = openai_own
    if _GPT5_PRO.match(base):
        efforts = ("high",)
    elif _GPT5_POINT.match(base):
        efforts = ("none", "low", "medium", "high")
    elif base.startswith("gpt-5"):
        efforts = ("minimal", "low", "medium", "high")
    elif _O_SERIES.match(base):
        efforts = ("low", "medium", "high")
    elif base.startswith("gpt-oss"):
        efforts, encrypted = ("low", "medium", "high"), False
    reasoning = bool(efforts)
    openai_family = base.startswith(("gpt-", "chatgpt-")) or bool(_O_SERIES.match(base))
    return ModelCapabilities(
        reasoning=reasoning,
        efforts=efforts,
        encrypted_reasoning=reasoning and encrypted,
        strict_json_schema=True,
        prompt_cache_key=openai_own and openai_family and not base.startswith("gpt-oss"),
    )


def capabilities_for(model: str, overrides: Mapping[str, ModelEntry]) -> ModelCapabilities:
    """The inferred capabilities of `model`, with its ``[models]`` entry's overrides applied."""
    found = infer_capabilities(model)
    entry = model_entry(overrides, model)
    if entry is None:
        return found
    reasoning = entry.reasoning
    if reasoning is None:  # listing efforts makes it a reasoning model
        reasoning = bool(entry.efforts) if entry.efforts is not None else found.reasoning
    efforts = found.efforts if entry.efforts is None else tuple(entry.efforts)
    if reasoning and not efforts:
        efforts = ("low", "medium", "high")
    if not reasoning:
        efforts = ()
    encrypted = found.encrypted_reasoning
    if entry.encrypted_reasoning is not None:
        encrypted = entry.encrypted_reasoning
    return ModelCapabilities(
        reasoning=reasoning,
        efforts=tuple(e for e in EFFORTS if e in efforts),
        encrypted_reasoning=reasoning and encrypted,
        strict_json_schema=(
            found.strict_json_schema
            if entry.strict_json_schema is None
            else entry.strict_json_schema
        ),
        prompt_cache_key=(
            found.prompt_cache_key if entry.prompt_cache_key is None else entry.prompt_cache_key
        ),
    )


def shape_request(request: ModelRequest, capabilities: ModelCapabilities) -> ModelRequest:
    """`request` without what its model does not take (see the module)."""
    tools = request.tools
    text_format = request.text_format
    if not capabilities.strict_json_schema:
        tools = tuple(replace(tool, strict=False) for tool in tools)
        text_format = None
    return replace(
        request,
        reasoning_effort=capabilities.effort(request.reasoning_effort),
        tools=tools,
        text_format=text_format,
        prompt_cache_key=request.prompt_cache_key if capabilities.prompt_cache_key else None,
    )
