"""The ``storyteller`` command: admin verbs, database, seed packs, the daemon and the demo.

The command tree is the module tree: `root` holds the table of top-level commands (each
imported only when it runs, asks for its own help or completes its arguments) and the global
options; ``cli/ais/set/budget.py`` is ``storyteller ais set budget``. ``storyteller --help`` is
printed back from `help_cache` once typer has printed it, so asking for it again costs little
more than starting Python.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from storyteller_daemon.cli import help_cache


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    text_key = help_cache.key(argv, sys.stdout)
    if text_key is not None:
        text = help_cache.kept(text_key)
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
            sys.exit(0)
    from storyteller_daemon.cli.root import run

    if text_key is None:
        run()
        return
    with help_cache.recording() as printed:
        try:
            run()
        except SystemExit as done:
            if done.code in (0, None):
                help_cache.keep(text_key, "".join(printed.written))
            raise


def __getattr__(name: str) -> Any:
    """The root's names (`app`, `COMMANDS`, `load`...), from `root` on first use."""
    if name.startswith("__") or name == "root":
        raise AttributeError(name)
    root = importlib.import_module("storyteller_daemon.cli.root")
    return getattr(root, name)
