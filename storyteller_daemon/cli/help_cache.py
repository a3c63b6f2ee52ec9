"""The root's help, kept as typer last printed it: ``storyteller --help`` without typer or rich.

Rendering the root's help costs typer, click and rich (about 0.15 s of a 0.2 s start here) while
the text changes only with the code and the terminal. The first ``storyteller --help`` prints it
through typer and keeps exactly what was printed; later ones print that text back. It is kept
under a key that holds everything the text depends on: this package's version and the source
of the modules that write it (the command table and the global options, the console set-up),
the installed typer, click and rich (their location and modification time), how the program
was started (its name is in the usage line), the Python version,
whether the output is a terminal and its size, and the environment variables rich and typer
read (``COLUMNS``, ``NO_COLOR``, ``FORCE_COLOR``, ``TERM``...). A change to any of them is a new
key, so a kept text never outlives what it was printed by.

Kept in ``$XDG_CACHE_HOME/storyteller`` (``~/.cache/storyteller``); a cache that cannot be read
or written is passed over, and the help is printed through typer as always. Standard library
only: this module runs before anything else is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

HELP_ARGS = (["--help"],)
"""The command lines whose output is kept: the root's help."""
SOURCES = ("root.py", "support.py")
"""The modules (of this folder) that write the root's help."""
LIBRARIES = ("typer", "click", "rich")
ENVIRONMENT = (
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "TERM",
    "COLORTERM",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERMINAL_WIDTH",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
)
"""Environment variables that change how rich and typer render (besides ``*TYPER*`` ones)."""


def cache_dir() -> Path:
    """Where kept texts go: ``$XDG_CACHE_HOME/storyteller``, else ``~/.cache/storyteller``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "storyteller"


def key(argv: list[str], stdout: TextIO, *, sources: Path | None = None) -> str | None:
    """The key of the text `argv` prints on `stdout`, or None when its output is not kept;
    `sources` is the folder of the modules that write it (this one's)."""
    if argv not in HELP_ARGS:
        return None
    from storyteller_daemon import __version__

    # The program's name as it was started (``storyteller``, ``python -m ...``) is in the text.
    program = sys.argv[0] if sys.argv else ""
    parts: list[str] = [__version__, repr(argv), program, sys.version, sys.executable]
    here = sources or Path(__file__).parent
    for name in SOURCES:
        parts.append(hashlib.sha256((here / name).read_bytes()).hexdigest())
    for library in LIBRARIES:
        spec = importlib.util.find_spec(library)
        origin = spec.origin if spec is not None else None
        parts.append(f"{library}={origin}:{os.stat(origin).st_mtime_ns if origin else ''}")
    terminal = _isatty(stdout)
    parts.append(f"tty={terminal}")
    if terminal:
        with contextlib.suppress(OSError, ValueError):
            size = os.get_terminal_size(stdout.fileno())
            parts.append(f"size={size.columns}x{size.lines}")
    for name in sorted(os.environ):
        if name in ENVIRONMENT or "TYPER" in name:
            parts.append(f"{name}={os.environ[name]}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def kept(text_key: str) -> str | None:
    """The text kept under `text_key`, if any."""
    try:
        return (cache_dir() / f"help-{text_key}.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def keep(text_key: str, text: str) -> None:
    """Keep `text` under `text_key` (atomically; nothing when the cache cannot be written)."""
    folder = cache_dir()
    target = folder / f"help-{text_key}.txt"
    partial = folder / f".help-{text_key}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()


class _Recording:
    """`stdout` as rich and click see it (a terminal or not, its size), keeping what passes."""

    def __init__(self, stdout: TextIO) -> None:
        self._stdout = stdout
        self.written: list[str] = []

    def write(self, text: str) -> int:
        count = self._stdout.write(text)  # click probes with bytes: the stream refuses them
        self.written.append(text)
        return count

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stdout, name)


@contextlib.contextmanager
def recording() -> Iterator[_Recording]:
    """`sys.stdout` recorded while the block runs."""
    stdout = sys.stdout
    tee = _Recording(stdout)
    sys.stdout = tee
    try:
        yield tee
    finally:
        sys.stdout = stdout


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
