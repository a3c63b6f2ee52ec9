"""The value types configuration sections are made of.

Bounded numbers, environment-variable names (which refuse a pasted secret with a pointed
message), database URLs normalised to the async drivers the daemon uses, and `_Section`, the
strict, frozen base of every section that rejects unknown keys.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_LOOKING = re.compile(
    r"^(sk-|sk_|xox|ghp_|https?://|Bearer\s)|discord(app)?\.com/api/webhooks", re.IGNORECASE
)

NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]


def _check_env_name(value: str) -> str:
    """Accept an environment-variable name; reject a pasted secret with a pointed message."""
    if value == "":
        return value
    if _SECRET_LOOKING.search(value) or not ENV_NAME_PATTERN.match(value):
        raise ValueError(
            "must be the NAME of an environment variable (like OPENAI_API_KEY), "
            "not the secret itself; put the secret in the environment"
        )
    return value


EnvVarName = Annotated[str, AfterValidator(_check_env_name)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}


def normalise_database_url(value: str) -> str:
    """A database URL the daemon can open, from a URL or a plain SQLite file path.

    ``demo.db`` becomes ``sqlite+aiosqlite:///demo.db``; ``sqlite://`` and ``postgresql://``
    get the async drivers the daemon uses.

    Raises:
        ValueError: a URL of a database the daemon does not support.
    """
    value = value.strip()
    scheme, sep, rest = value.partition("://")
    if not sep:
        return f"sqlite+aiosqlite:///{value}"
    driver = _ASYNC_DRIVERS.get(scheme.lower())
    if driver is None:
        raise ValueError(
            f"unsupported database URL scheme {scheme!r}: use sqlite+aiosqlite:///FILE, "
            "postgresql+asyncpg://USER@HOST/DB or a plain SQLite file path"
        )
    return f"{driver}://{rest}"
