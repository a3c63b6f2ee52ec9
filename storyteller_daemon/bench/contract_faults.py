"""How the stand-in model of `storyteller bench stream --contract-faults` breaks the verdict
contract, the way real attention models now and then do.

On the given share of attention replies (batches and events judged alone alike) one fault is
chosen at random:

* ``ids_across_batches``: every id shifted as if the model numbered events across requests
  rather than from 1 in each (a lone event answered as ``[8]``);
* ``wrong_id``: one id of the reply (an attended one if any) replaced by an id the request did
  not hold;
* ``junk_ignore``: ``"ignore": "n/a"`` instead of the ignored ids (for a lone event, ``"n/a"``
  as its decision);
* ``truncated``: the reply cut off at a random character, as at an output limit.

Which faults were made is counted by kind for the report.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from storyteller_daemon.agent.verdicts import format_ids

BATCH_FAULTS = ("ids_across_batches", "wrong_id", "junk_ignore", "truncated")
ALONE_FAULTS = ("ids_across_batches", "junk_ignore", "truncated")


class ContractFaults:
    """Breaks `share` of the attention replies it is given, one fault each.

    Args:
        share: the share of replies to break (0: none).
        seed: of the random choices, so a run can be repeated.
    """

    def __init__(self, share: float, seed: int) -> None:
        self._share = share
        self._rng = random.Random(seed)
        self._numbered = 0
        """Events of the requests so far: where numbering across requests would start."""
        self.made: Counter[str] = Counter()

    def _fault(self, kinds: Sequence[str]) -> str | None:
        if not self._share or self._rng.random() >= self._share:
            return None
        kind = self._rng.choice(kinds)
        self.made[kind] += 1
        return kind

    def _cut(self, text: str) -> str:
        return text[: self._rng.randrange(1, len(text))]

    def batch(self, attend: Sequence[tuple[int, str]], ignore: Sequence[int], size: int) -> str:
        """The batch reply (`attend` with reasons, `ignore` as ranges) as text, maybe broken."""
        offset = self._numbered or size
        self._numbered += size
        kind = self._fault(BATCH_FAULTS)
        attended = [(number, why) for number, why in attend]
        ignored = list(ignore)
        if kind == "ids_across_batches":
            attended = [(number + offset, why) for number, why in attended]
            ignored = [number + offset for number in ignored]
        elif kind == "wrong_id":
            stray = size + 1 + self._rng.randrange(5)
            if attended:
                attended[0] = (stray, attended[0][1])
            elif ignored:
                ignored[self._rng.randrange(len(ignored))] = stray
        reply: dict[str, Any] = {
            "attend": [{"id": number, "why": why} for number, why in attended],
            "ignore": "n/a" if kind == "junk_ignore" else format_ids(ignored),
        }
        text = json.dumps(reply)
        return self._cut(text) if kind == "truncated" else text

    def alone(self, attend: bool, why: str) -> str:
        """The decision about one event as text, maybe broken."""
        offset = self._numbered or 1
        self._numbered += 1
        kind = self._fault(ALONE_FAULTS)
        if kind == "ids_across_batches":
            # The one contract with no id to get wrong: the model answers in the batch's shape.
            key = "attend" if attend else "ignore"
            other = "ignore" if attend else "attend"
            return json.dumps({key: [{"id": 1 + offset, "why": why}], other: []})
        decision = "n/a" if kind == "junk_ignore" else ("attend" if attend else "ignore")
        text = json.dumps({"decision": decision, "why": why if attend else ""})
        return self._cut(text) if kind == "truncated" else text
