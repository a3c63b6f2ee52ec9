"""Labelled streams kept as JSON lines, one labelled event a line.

Each line is ``{"event": …, "relevant": …, "tag": …, "group": …}``, the event in the codec's
encoding. `write_stream` writes a stream made by `stream.labelled_stream` (or any other), and
`read_stream` reads one back, as ``storyteller bench stream --stream FILE`` does, naming the
file and line of anything that is not a labelled event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from world_adapter.codec import CodecError, decode_event, encode_event
from world_adapter.sim.stream import LabelledEvent


def write_stream(path: Path, items: Sequence[LabelledEvent]) -> None:
    """Write a stream as JSON lines."""
    with path.open("w", encoding="utf-8") as out:
        for item in items:
            record = {
                "event": encode_event(item.event),
                "relevant": item.relevant,
                "tag": item.tag,
                "group": item.group,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_stream(path: Path) -> list[LabelledEvent]:
    """Read a stream written by `write_stream` (blank lines are skipped).

    Raises:
        ValueError: a line that is not a labelled event, naming the file and line.
    """
    items = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                event = decode_event(record["event"])
                relevant = record["relevant"]
                if not isinstance(relevant, bool):
                    raise ValueError("relevant must be true or false")
                items.append(
                    LabelledEvent(
                        event, relevant, str(record.get("tag", "")), str(record.get("group", ""))
                    )
                )
            except (ValueError, KeyError, TypeError, CodecError) as exc:
                raise ValueError(f"{path}:{number}: not a labelled event ({exc})") from None
    return items
