"""What the bridge keeps on disk beside the game: its event stream and its prog outcomes.

Pure Python (files only), so it is tested without Evennia. ``evennia reload`` replaces the Server
process, and with it everything held in memory; these two journals let the new process carry on:

* `EventJournal` holds the epoch and the replay buffer's events. A Server that starts and finds
  it continues the same epoch after the same seq, so a daemon that resumes from a cursor taken
  before a reload (or a restart) gets every event it missed and no gap. Without the file (deleted,
  unreadable, a first start) the Server begins a new epoch, and a daemon from before gets a
  ``gap`` as it should: those events really are gone.
* `KeyJournal` holds the outcomes of successful prog runs by idempotency key, so a key the daemon
  sends again after a reload or restart is answered with the stored outcome and runs nothing
  (docs/bridge-protocol.md: "keep at least the last hour's keys on disk").

Both are JSON lines. Each record is written and flushed as it arrives, and ``fsync``-ed (events
are human-paced, and Evennia writes its own database as often); without the event journal's
``sync`` an event still survives a reload or a crash, only not a power loss. A file is rewritten
to its live records through a temporary file and an atomic rename once it has grown to about
twice that. A torn last line (the process died while writing it) is ignored on reading: its
event was never sent.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

JOURNAL_VERSION = 1
EVENTS_FILE = "events.jsonl"
KEYS_FILE = "prog-outcomes.jsonl"
Record = dict[str, Any]


def _line(record: Record) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _read_lines(path: Path) -> Iterator[Record]:
    """The JSON objects of a journal in order, stopping at the first line that is not one."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            try:
                record = json.loads(text)
            except ValueError:
                record = None
            if not isinstance(record, dict) or not text.endswith("\n"):
                log.warning("%s: line %d is torn or not JSON; read up to it", path, number)
                return
            yield record


class _Appender:
    """One journal file: append a line durably, or replace the whole file atomically."""

    def __init__(self, path: Path, *, sync: bool = True) -> None:
        self.path = path
        self._sync = sync
        self._handle: IO[str] | None = None
        self.lines = 0

    def rewrite(self, records: Iterable[Record]) -> None:
        """Make the file hold exactly `records` (a crash leaves the old file or the new one)."""
        self.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        count = 0
        with temporary.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(_line(record))
                count += 1
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        self.lines = count
        self._handle = self.path.open("a", encoding="utf-8")

    def append(self, record: Record) -> None:
        """Add one line: handed to the operating system (it survives the process), and with
        `sync` on the disk too (it survives a power loss)."""
        if self._handle is None:
            raise ValueError(f"{self.path} is not open")
        self._handle.write(_line(record))
        self._handle.flush()
        if self._sync:
            os.fsync(self._handle.fileno())
        self.lines += 1

    def close(self) -> None:
        """Close the file (appending needs a `rewrite` first)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class StoredStream:
    """An event stream read back from disk: its epoch, the seq before its first event, and the
    event frames in seq order."""

    def __init__(self, epoch: str, after: int, events: list[Record]) -> None:
        self.epoch = epoch
        self.after = after
        self.events = events


class EventJournal:
    """The event stream on disk: a header line (epoch, the seq before the first event), then one
    ``event`` frame per line.

    Args:
        directory: Where the file ``events.jsonl`` lives.
        capacity: The replay buffer's capacity; the file is rewritten to the held events once it
            holds about twice as many.
        sync: ``fsync`` each event (a few milliseconds each on a busy disk). Without it an
            event survives the process (a reload, a crash) but not a power loss.
    """

    def __init__(
        self, directory: str | os.PathLike[str], capacity: int, *, sync: bool = True
    ) -> None:
        self._file = _Appender(Path(directory) / EVENTS_FILE, sync=sync)
        self._capacity = capacity

    @property
    def path(self) -> Path:
        """The journal file."""
        return self._file.path

    def load(self) -> StoredStream | None:
        """The stream the file holds, or None when there is none to continue (no file, or a
        header that is not this journal's): then the caller starts a new epoch."""
        if not self.path.exists():
            return None
        try:
            lines = _read_lines(self.path)
            header = next(lines, None)
            if not (
                isinstance(header, dict)
                and header.get("journal") == "events"
                and header.get("version") == JOURNAL_VERSION
                and isinstance(header.get("epoch"), str)
                and header["epoch"].strip()
                and isinstance(header.get("after"), int)
            ):
                log.warning("%s has no valid header; a new epoch begins", self.path)
                return None
            stream = StoredStream(header["epoch"], header["after"], [])
            last = stream.after
            for frame in lines:
                cursor = frame.get("cursor")
                seq = cursor.get("seq") if isinstance(cursor, dict) else None
                epoch = cursor.get("epoch") if isinstance(cursor, dict) else None
                if epoch != stream.epoch or not isinstance(seq, int) or seq <= last:
                    log.warning("%s: an event out of order after seq %d; read up to it", self.path,
                                last)  # fmt: skip
                    break
                stream.events.append(frame)
                last = seq
        except OSError as exc:
            log.warning("cannot read %s (%s); a new epoch begins", self.path, exc)
            return None
        return stream

    def start(self, epoch: str, after: int, events: Iterable[Record]) -> None:
        """Write the file afresh for a stream (`after`: the seq before the first of `events`)."""
        header = {"journal": "events", "version": JOURNAL_VERSION, "epoch": epoch, "after": after}
        self._file.rewrite([header, *events])

    def append(
        self, frame: Record, held: Callable[[], tuple[str, int, list[Record]]] | None = None
    ) -> None:
        """Add one event frame; when the file has grown to twice the capacity, rewrite it from
        `held()` (epoch, the seq before the oldest held event, the held events) first."""
        if held is not None and self._file.lines > 2 * self._capacity:
            self.start(*held())
        self._file.append(frame)

    def close(self) -> None:
        """Close the file."""
        self._file.close()


class KeyJournal:
    """Prog outcomes by idempotency key on disk: one ``{"key", "at", "outcome"}`` line each.

    Args:
        directory: Where the file ``prog-outcomes.jsonl`` lives.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._file = _Appender(Path(directory) / KEYS_FILE)

    @property
    def path(self) -> Path:
        """The journal file."""
        return self._file.path

    def load(self) -> list[tuple[str, float, Record]]:
        """Every stored ``(key, at, outcome)``, oldest first (a key stored twice: the later)."""
        if not self.path.exists():
            return []
        found: list[tuple[str, float, Record]] = []
        try:
            for record in _read_lines(self.path):
                key, at, outcome = record.get("key"), record.get("at"), record.get("outcome")
                if (
                    isinstance(key, str)
                    and isinstance(at, int | float)
                    and not isinstance(at, bool)
                    and isinstance(outcome, dict)
                ):
                    found.append((key, float(at), outcome))
        except OSError as exc:
            log.warning("cannot read %s (%s); stored prog outcomes are lost", self.path, exc)
        return found

    def rewrite(self, entries: Iterable[tuple[str, float, Record]]) -> None:
        """Make the file hold exactly `entries`."""
        self._file.rewrite({"key": k, "at": at, "outcome": o} for k, at, o in entries)

    def append(self, key: str, at: float, outcome: Record) -> None:
        """Add one outcome."""
        self._file.append({"key": key, "at": at, "outcome": outcome})

    @property
    def lines(self) -> int:
        """Lines in the file since it was last rewritten."""
        return self._file.lines

    def close(self) -> None:
        """Close the file."""
        self._file.close()
