"""The stand-ins `storyteller bench stream` runs the daemon against, and what they count.

`ScaledClock` is the daemon's clock running faster than real time. `Oracle` is the model: it
answers attention requests from the stream's labels (breaking the verdict contract on a share of
them, `bench.contract_faults`) and turn rounds with ``Noop`` (or one narration through
``EchoToRoom`` and a note, closed by ``Noop`` in the same response), with latency and with
token counts estimated from request and reply sizes,
logging them in a `RequestLog`. `ProgLog` counts what the world ran; `LIST_PRICES` are the
prices the bench's configuration holds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.bench.contract_faults import ContractFaults
from storyteller_daemon.bench.turn_tokens import TurnTokens
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.repeats import repeat_key
from storyteller_daemon.testing.responses_answers import Fault, Reply

LIST_PRICES = {
    "gpt-5": {"input": 1.25, "cached_input": 0.125, "output": 10.0},
    "gpt-5-mini": {"input": 0.25, "cached_input": 0.025, "output": 2.0},
    "gpt-5-nano": {"input": 0.05, "cached_input": 0.005, "output": 0.4},
}
"""USD per million tokens (OpenAI list prices of the gpt-5 family, as in config.example.toml)."""
CHARS_PER_TOKEN = 4
CACHE_MINIMUM_TOKENS = 1024
CACHE_STEP_TOKENS = 128
_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_CRIME = re.compile(r"#\d+ crime: ")
_CRIME_PROMPT = "has committed a crime"


class ScaledClock:
    """The runtime `Clock`, running `speedup` times faster than `real`."""

    def __init__(self, real: Clock, speedup: float, start: datetime) -> None:
        self._real = real
        self._speedup = speedup
        self._start = start
        self._origin = real.monotonic()

    def monotonic(self) -> float:
        """Stream seconds since the clock was made."""
        return (self._real.monotonic() - self._origin) * self._speedup

    def now(self) -> datetime:
        """The stream's time of day."""
        return self._start + timedelta(seconds=self.monotonic())

    async def sleep(self, seconds: float) -> None:
        """Sleep `seconds` of stream time."""
        await self._real.sleep(max(0.0, seconds) / self._speedup)


def _tokens(chars: int) -> int:
    return max(1, chars // CHARS_PER_TOKEN)


def _input_text(body: dict[str, Any]) -> str:
    """The text of a request's input messages."""
    return "\n".join(
        str(item.get("content", "")) for item in body.get("input") or [] if isinstance(item, dict)
    )


def _prompt_text(body: dict[str, Any]) -> str:
    """What a request's input tokens are counted from, in the order the provider reads it:
    instructions, tool schemas, then the items' text."""
    parts = [str(body.get("instructions") or "")]
    if body.get("tools"):
        parts.append(json.dumps(body["tools"], ensure_ascii=False, separators=(",", ":")))
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [str(c.get("text", "")) for c in content if isinstance(c, dict)]
        for key in ("arguments", "output"):
            if isinstance(item.get(key), str):
                parts.append(item[key])
    return "\n".join(parts)


@dataclass
class RequestLog:
    """What the stand-in model was asked, by kind."""

    requests: Counter[str] = field(default_factory=Counter)
    usage: dict[str, Usage] = field(default_factory=dict)

    def add(self, kind: str, usage: Usage) -> None:
        self.requests[kind] += 1
        self.usage[kind] = self.usage.get(kind, Usage()) + usage


class Oracle:
    """Answers the daemon's requests from the stream's labels, with latency and token counts."""

    def __init__(
        self,
        relevant_texts: set[str],
        *,
        attention_latency: float,
        round_latency: float,
        speedup: float,
        fail_share: float = 0.0,
        seed: int = 1,
        acting: bool = False,
        reasoning_tokens: int = 0,
        contract_faults: float = 0.0,
    ) -> None:
        self._relevant = relevant_texts
        self.faults = ContractFaults(contract_faults, seed + 1)
        self._acting = acting
        self._reasoning = reasoning_tokens
        self._fail_share = fail_share
        self._rng = random.Random(seed)
        self.failed = 0
        self._attention_delay = attention_latency / speedup
        self._round_delay = round_latency / speedup
        self._prefixes: dict[str, str] = {}
        self.log = RequestLog()
        self.turn_tokens = TurnTokens(CHARS_PER_TOKEN)

    def __call__(self, body: dict[str, Any]) -> Reply | Fault:
        if self._fail_share and self._rng.random() < self._fail_share:
            # A fault answers nothing and bills nothing: rate limits, outages, garbage.
            self.failed += 1
            return self._rng.choice(
                (
                    Fault.status(429, retry_after=0),
                    Fault.status(500),
                    Fault.status(503),
                )
            )
        prompt = _prompt_text(body)
        text_format = (body.get("text") or {}).get("format", {})
        answer = text_format.get("type")
        if answer in ("json_schema", "json_object"):
            if answer == "json_object":
                output = self._decision(body)
            elif text_format.get("name") == "attention_decision":
                output = self._alone(body)
            else:
                output = self._verdicts(body)
            reply = Reply.text(output)
            kind, delay = "attention", self._attention_delay
        else:
            reply, output = self._noop(body)
            kind, delay = "turn_round", self._round_delay
            self.turn_tokens.add_round(body)
        usage = Usage(
            input_tokens=_tokens(len(prompt)),
            cached_tokens=self._cached(str(body.get("prompt_cache_key") or kind), prompt),
            output_tokens=_tokens(len(output)) + self._reasoning,
        )
        self.log.add(kind, usage)
        self.turn_tokens.bill(str(body.get("model") or ""), usage)
        return replace(reply, usage=usage, delay_seconds=delay)

    def _cached(self, key: str, prompt: str) -> int:
        previous = self._prefixes.get(key, "")
        self._prefixes[key] = prompt
        shared = 0
        for a, b in zip(previous, prompt, strict=False):
            if a != b:
                break
            shared += 1
        tokens = shared // CHARS_PER_TOKEN
        if tokens < CACHE_MINIMUM_TOKENS:
            return 0
        return tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS

    def _verdicts(self, body: dict[str, Any]) -> str:
        """A batch verdict: attended ids with a reason, ignored ids as ranges."""
        attend: list[tuple[int, str]] = []
        ignore: list[int] = []
        lines = _LINE.findall(_input_text(body))
        for number, line in lines:
            if self._matters(line):
                attend.append((int(number), "matters to the remit"))
            else:
                ignore.append(int(number))
        return self.faults.batch(attend, ignore, len(lines))

    def _alone(self, body: dict[str, Any]) -> str:
        """The decision about one event, judged alone."""
        matters = any(self._matters(line) for _, line in _LINE.findall(_input_text(body)))
        return self.faults.alone(matters, "matters to the remit")

    def _decision(self, body: dict[str, Any]) -> str:
        """The reference design's verdict about its one event: an echo's raw text, or the whole
        prompt of speech (the spoken text on a line of its own) and crimes."""
        text = _input_text(body)
        lines = text.splitlines()
        if (
            _CRIME_PROMPT in text
            or any(repeat_key("t", line) in self._relevant for line in lines)
            or any(self._matters(line) for line in lines)
        ):
            return json.dumps({"Decision": "interested", "Reason": "matters to the remit"})
        return json.dumps({"Decision": "ignore"})

    def _matters(self, line: str) -> bool:
        return bool(_CRIME.search(line)) or self._relevant_line(line)

    def _relevant_line(self, line: str) -> bool:
        start = line.rfind(': "')
        if start < 0:
            return False
        try:
            value = json.loads(line[start + 2 :])
        except json.JSONDecodeError:
            return False
        return isinstance(value, str) and repeat_key("t", value) in self._relevant

    def _noop(self, body: dict[str, Any]) -> tuple[Reply, str]:
        if self._acting:
            act = _narration(body)
            if act is not None:
                acts: list[tuple[str, dict[str, Any]]] = [("EchoToRoom", act)]
                if any(t.get("name") == "CreateSituation" for t in body.get("tools") or []):
                    # A note too, so a turn run twice would show as a situation written twice.
                    note = {
                        "Title": act["Text"],
                        "Description": "The watch keeps an eye on it.",
                        "CharacterId": None,
                        "RoomId": act["Room"],
                    }
                    acts.append(("CreateSituation", note))
                if any(t.get("name") == "Noop" for t in body.get("tools") or []):
                    # Done after acting, as the Noop tool's description invites.
                    acts.append(("Noop", {}))
                return Reply.calls(*acts), json.dumps(acts)
        tool = next(
            (t for t in body.get("tools") or [] if t.get("name") == "Noop"),
            None,
        )
        if tool is None:
            return Reply.text("nothing to do"), "nothing to do"
        schema = tool.get("parameters") or {}
        arguments = {
            name: "nothing needs doing" if (spec or {}).get("type") == "string" else None
            for name, spec in (schema.get("properties") or {}).items()
        }
        return Reply.calls(("Noop", arguments)), json.dumps(arguments)


_LOCATION = re.compile(r"^Location: .* \[#(\d+)\]$", re.MULTILINE)


def _narration(body: dict[str, Any]) -> dict[str, Any] | None:
    """A turn's one narration (first round only): arguments fixed by the turn's prompt.

    The text names the prompt by digest, so the same turn asked again (re-run after a crash)
    asks for the same action, and a second run of it shows as a repeat.
    """
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    offered = any(t.get("name") == "EchoToRoom" for t in body.get("tools") or [])
    if not offered or any(i.get("type") == "function_call_output" for i in items):
        return None
    prompt = "\n".join(str(i.get("content", "")) for i in items if i.get("role") == "user")
    room = _LOCATION.search(prompt)
    if room is None:
        return None
    # The storyteller (its cache key) too: two storytellers acting on one event is no repeat.
    whose = str(body.get("prompt_cache_key") or "")
    digest = hashlib.sha256(f"{whose}\n{prompt}".encode()).hexdigest()[:12]
    return {"Room": int(room.group(1)), "Text": f"The ward takes notice ({digest})."}


@dataclass
class ProgLog:
    """What the world ran: prog runs by narration text, and runs answered from the key store."""

    runs: Counter[str] = field(default_factory=Counter)
    replayed: int = 0

    @property
    def repeated(self) -> int:
        """Runs of an action that had run before under another key."""
        return sum(count - 1 for count in self.runs.values() if count > 1)


class LogLineCounter(logging.Handler):
    """Counts the daemon's log lines at INFO and above, as a journal would receive them.

    While entered, the daemon's loggers (``storyteller_daemon``, ``world_adapter``) log at
    INFO into this counter only; warnings and errors still reach stderr.
    """

    LOGGERS = ("storyteller_daemon", "world_adapter")

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines = 0
        self._stderr = logging.StreamHandler()
        self._stderr.setLevel(logging.WARNING)
        self._saved: list[tuple[logging.Logger, int, bool]] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Count one line."""
        self.lines += 1

    def __enter__(self) -> LogLineCounter:
        for name in self.LOGGERS:
            logger = logging.getLogger(name)
            self._saved.append((logger, logger.level, logger.propagate))
            logger.setLevel(logging.INFO)
            logger.propagate = False
            logger.addHandler(self)
            logger.addHandler(self._stderr)
        return self

    def __exit__(self, *exc: object) -> None:
        for logger, level, propagate in self._saved:
            logger.removeHandler(self)
            logger.removeHandler(self._stderr)
            logger.setLevel(level)
            logger.propagate = propagate
        self._saved.clear()
