"""What every command shares: the async bridge, the store, error exits and output."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from storyteller_daemon.errors import ConfigError, StorytellerError

if TYPE_CHECKING:
    from storyteller_daemon.config import Config

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_CONFIG = "storyteller.toml"
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON with stable keys instead.")]
"""The ``--json`` option every listing command takes."""
# Piped or redirected output is read in files and pagers: give tables room instead of 80 columns.
_PIPED_WIDTH = None if sys.stdout.isatty() else 200
console = Console(highlight=False, soft_wrap=True, width=_PIPED_WIDTH)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class CliState:
    """Global options, stored on the typer context."""

    config_path: str | None = None
    database_url: str | None = None
    actor: str | None = None
    """Who the audit log names instead of the OS user (the daemon running an in-game command)."""
    _loaded: Config | None = field(default=None, init=False, repr=False)

    def config(self) -> Config:
        """The configuration, read once per command (see `_load`)."""
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    def _load(self) -> Config:
        """Load the config file; with only ``--db`` given, a config with that database."""
        from storyteller_daemon.config import load_config, parse_config

        path = self.config_path
        if path is None and self.database_url is None and Path(DEFAULT_CONFIG).exists():
            path = DEFAULT_CONFIG
        if path is None:
            if self.database_url is None:
                raise ConfigError(
                    DEFAULT_CONFIG,
                    "no configuration: pass --config FILE (copy config.example.toml) "
                    "or --db DATABASE_URL",
                )
            return parse_config({"database": {"url": self.database_url}}, "--db")
        cfg = load_config(path)
        if self.database_url:
            db = cfg.database.model_copy(update={"url": self.database_url})
            cfg = cfg.model_copy(update={"database": db})
        return cfg


def state(ctx: typer.Context) -> CliState:
    """The global options of this invocation."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def working(what: str) -> contextlib.AbstractContextManager[object]:
    """A spinner saying `what` on stderr while a slow step runs; nothing off a terminal, so
    pipes, --json and logs stay clean."""
    if not err_console.is_terminal:
        return contextlib.nullcontext()
    return err_console.status(what)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one clear error line and return the exit to raise."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True)
    return typer.Exit(code)


def run_async(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """Run an async command with asyncio.run; our errors become one line and an exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return asyncio.run(fn(*args, **kwargs))
        except StorytellerError as exc:
            raise fail(str(exc), exc.exit_code) from None

    return wrapper


@asynccontextmanager
async def open_store(ctx: typer.Context, *, migrated: bool = True) -> AsyncIterator[Any]:
    """A `Store` for the configured database, closed afterwards.

    With `migrated`, refuse to touch a database whose schema is not current.
    """
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.storage.store import Store

    cfg = state(ctx).config()
    store = Store.open(
        cfg.database.url, busy_timeout_ms=cfg.database.busy_timeout_ms, clock=SystemClock()
    )
    try:
        if migrated:
            await store.db.require_current()
        yield store
    finally:
        await store.close()


def print_json(data: Any) -> None:
    """Machine-readable output for ``--json``."""
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A readable table; an explicit line when there is nothing to show."""
    if not rows:
        console.print(f"No {title.lower() if title else 'rows'} to show.")
        return
    table = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    console.print(table)


def os_user() -> str:
    """Who runs this command, as decisions and the audit log name them."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (a bare container)
        return f"uid {os.getuid()}"


def acting_user(ctx: typer.Context) -> str:
    """Who runs this command, as the audit log names them: ``--actor`` when given, else the
    operating-system user."""
    return state(ctx).actor or os_user()


def yes_no(value: bool) -> str:
    """``yes`` / ``no`` for tables."""
    return "yes" if value else "no"
