"""What every command shares: the async bridge, the store, error exits, operator input and output.

Input helpers turn operator text into values or one-line `ValidationError`s, so a typo never
reaches the database and never prints more than one error line.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import inspect
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from storyteller_daemon.errors import ConfigError, StorytellerError, ValidationError

if TYPE_CHECKING:
    from storyteller_daemon.config import Config

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CONFIG = "storyteller.toml"
DEFAULT_TOKEN_ENV = "STORYTELLER_BRIDGE_TOKEN"  # noqa: S105 - the NAME of a variable
"""The variable a bridge token is read from unless the operator names another."""
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
            import asyncio  # here, not at the top: `storyteller --help` needs no event loop

            return asyncio.run(fn(*args, **kwargs))
        except StorytellerError as exc:
            raise fail(str(exc), exc.exit_code) from None

    return wrapper


@asynccontextmanager
async def open_store(ctx: typer.Context, *, migrated: bool = True) -> AsyncIterator[Any]:
    """A `Store` for the configured database, closed afterwards.

    With `migrated`, refuse to touch a database whose schema is not current.
    """
    from storyteller_daemon.storage.store import Store

    cfg = state(ctx).config()
    from storyteller_daemon.clock import SystemClock

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


FileOption = Annotated[
    Path | None,
    typer.Option(
        "--file", "-f", help="Read the text from this file ('-' for stdin).", dir_okay=False
    ),
]
"""Where long text comes from when it is not typed inline."""


def parse_id(text: str, what: str) -> int:
    """A positive integer id typed by the operator.

    Args:
        text: the argument as typed.
        what: what the id names, for the error (e.g. ``"situation"``).

    Raises:
        ValidationError: the text is not a positive whole number.
    """
    value = text.strip()
    if not value.isdigit() or int(value) <= 0:
        raise ValidationError(f"'{text}' is not a valid {what} id; use a positive whole number.")
    return int(value)


def check_new_name(name: str, what: str) -> str:
    """A name for a new or renamed record, stripped.

    Purely numeric names are refused because every reference is tried as an id first, so such a
    record could only ever be reached by a different number.
    """
    clean = name.strip()
    if not clean:
        raise ValidationError(f"A {what} needs a non-blank name.")
    if clean.isdigit():
        raise ValidationError(f"A {what} name cannot be only digits; it would be read as an id.")
    return clean


def read_text(words: Sequence[str] | None, file: Path | None, what: str) -> str:
    """Text given inline (words joined by spaces) or read from a file; ``-`` means stdin.

    Raises:
        ValidationError: neither or both sources were given, or the file cannot be read.
    """
    inline = " ".join(words or ())
    if (file is None) == (not inline):
        raise ValidationError(
            f"Give the {what} either as text or with --file, not both or neither."
        )
    if file is None:
        return sys.stdin.read() if inline == "-" else inline
    if str(file) == "-":
        return sys.stdin.read()
    try:
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"Cannot read {file}: {exc.strerror or exc}.") from None
    except UnicodeDecodeError:
        raise ValidationError(f"Cannot read {file}: it is not UTF-8 text.") from None


def format_time(value: datetime | None) -> str:
    """A UTC timestamp to the minute, for tables."""
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def say(line: str) -> None:
    """Print one line verbatim (operator text may contain rich markup characters)."""
    console.print(line, markup=False)


WIDE_COLUMNS = frozenset({"Name", "Model", "Title", "Folder", "Type", "Keywords"})
"""Columns of free text, which may wrap; ids, flags and times never do."""


def listing(
    items: Sequence[T],
    *,
    as_json: bool,
    data: Callable[[T], Any],
    title: str,
    columns: Sequence[str],
    row: Callable[[T], Sequence[Any]],
) -> None:
    """`items` as a JSON list of `data` (``--json``), or as a `table` of `row`."""
    if as_json:
        print_json([data(item) for item in items])
    else:
        table(title, columns, [row(item) for item in items])


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    wide: Collection[str] = WIDE_COLUMNS,
) -> None:
    """A compact table whose cells are shown literally, never read as rich markup.

    Args:
        title: shown above the table, and in the line printed instead when there are no rows.
        columns: column headings.
        rows: cell values; None shows as blank.
        wide: headings of the columns that may wrap; the rest never do, so ids and flags stay
            readable on a narrow terminal.
    """
    if not rows:
        say(f"No {title[0].lower() + title[1:] if title else 'rows'} to show.")
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    grid = Table(
        title=escape(title) if title else None,
        box=box.SIMPLE_HEAD,
        header_style="bold",
        padding=(0, 1, 0, 0),
        show_edge=False,
    )
    for column in columns:
        grid.add_column(escape(column), no_wrap=column not in wide, overflow="fold")
    for row in rows:
        grid.add_row(*(Text("" if v is None else str(v)) for v in row))
    console.print(grid)


class AliasGroup(TyperGroup):
    """A command group that also answers to other names (FutureMUD's spellings) it does not list.

    Aliases are resolved by name rather than registered as hidden copies, so each costs nothing
    when the command tree is built.
    """

    aliases: ClassVar[dict[str, str]] = {}

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command called `cmd_name`, or the one it is an alias of."""
        return super().get_command(ctx, self.aliases.get(cmd_name.lower(), cmd_name))


def command_group(help_text: str, **settings: Any) -> typer.Typer:
    """A typer app whose commands may have aliases (see `register` and `alias`)."""
    group = type("AliasGroup", (AliasGroup,), {"aliases": {}})
    settings.setdefault("no_args_is_help", True)
    return typer.Typer(help=help_text, cls=group, **settings)


def alias(app: typer.Typer, name: str, *aliases: str) -> None:
    """Let `app` run its command or subgroup `name` under each of `aliases` too."""
    group = app.info.cls
    if not (isinstance(group, type) and issubclass(group, AliasGroup)):
        raise TypeError("aliases need a group made by command_group()")
    group.aliases.update({a.lower(): name for a in aliases})


def register(app: typer.Typer, name: str, *aliases: str, lenient: bool = False) -> Callable[[F], F]:
    """Register a command under `name`; its aliases work too and its help lists them.

    Args:
        app: the command group (from `command_group` when there are aliases).
        name: the command's documented name.
        *aliases: other names that run the same command.
        lenient: pass unknown ``-x`` words through as arguments (filters, negative numbers).
    """

    def decorate(fn: F) -> F:
        doc = inspect.getdoc(fn) or ""
        if aliases:
            doc += "\n\nAliases: " + ", ".join(aliases) + "."
            alias(app, name, *aliases)
        settings = {"ignore_unknown_options": True} if lenient else None
        app.command(name, help=doc, context_settings=settings)(fn)
        return fn

    return decorate
