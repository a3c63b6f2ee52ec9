"""The daemon's exception tree, classified by who must act.

```
StorytellerError
├── ConfigError            operator: fix the config file
├── StorageError           operator: the database is unreachable or not migrated
│   ├── NotMigratedError
│   └── LeaseLost          a daemon of a cluster wrote for a storyteller it no longer holds
├── ServiceUnavailable     operator: something the command needs (the game) cannot be reached
├── NotFoundError          operator/model: an id or name names nothing
├── ConflictError          operator: a unique name is taken
├── ValidationError        operator/model: a value breaks a domain rule
├── InterchangeError       operator: an imported XML document is unsafe or malformed
├── ModelError             the language-model boundary
│   ├── ModelTransientError   429 / 5xx / timeout: retried with backoff
│   └── ModelFatalError       auth, unknown model, bad request: the turn ends, alerted;
│                             a refused key or model pauses its requests (agent/models/breaker.py)
├── BudgetExceeded         a turn or cost budget ran out: the turn ends, the daemon lives
└── ToolError              raised inside a tool; becomes {"ok": false, "error": ...}
```

Third-party exceptions are translated into these at the module that imports the library.

Each class names the exit code the CLI ends with (sysexits.h): 65 (EX_DATAERR) for input that
names nothing or breaks a rule, 69 (EX_UNAVAILABLE) for a database, game or model endpoint that
cannot be reached, 78 (EX_CONFIG) for configuration; usage mistakes exit 64 (EX_USAGE).
"""

from __future__ import annotations

EX_USAGE = 64
EX_DATAERR = 65
EX_UNAVAILABLE = 69
EX_CONFIG = 78


class StorytellerError(Exception):
    """Base of every error the daemon raises on purpose."""

    exit_code = EX_DATAERR


class ConfigError(StorytellerError):
    """The configuration file is missing, unparsable or invalid.

    Attributes:
        path: the file that was read.
        key: dotted key path of the offending value, if any.
        problem: what is wrong, in one line.
    """

    exit_code = EX_CONFIG

    def __init__(self, path: str, problem: str, key: str | None = None) -> None:
        self.path = path
        self.key = key
        self.problem = problem
        where = f"{path}: {key}: " if key else f"{path}: "
        super().__init__(where + problem)


class StorageError(StorytellerError):
    """The database could not be reached or refused an operation."""

    exit_code = EX_UNAVAILABLE


class NotMigratedError(StorageError):
    """The database schema is older than this code; run `storyteller db upgrade`."""

    exit_code = EX_CONFIG


class LeaseLost(StorageError):
    """The database refused a write of a daemon whose lease on the storyteller is gone (another
    daemon took it, or it was never held): the write did not happen."""


class ServiceUnavailable(StorytellerError):
    """Something a command needs (the game, a server) cannot be reached now."""

    exit_code = EX_UNAVAILABLE


class NotFoundError(StorytellerError):
    """An id or name does not identify an existing record."""


class ConflictError(StorytellerError):
    """A record with the same natural key already exists."""


class ValidationError(StorytellerError):
    """A value breaks a domain rule (bad scope, bad effort, out-of-range count...)."""


class InterchangeError(StorytellerError):
    """An imported document is unsafe, malformed or holds invalid values."""


REQUEST_NOT_SENT = "not_sent"
"""`ModelError.request_status` of a request that was held back before it was sent."""


class ModelError(StorytellerError):
    """Something went wrong at the language-model boundary.

    Attributes:
        status: the HTTP status the endpoint answered, when it answered one.
        request_status: how the request ended, as the cost ledger records it: ``timeout``,
            ``connection_error``, ``unreachable``, ``http_503``, ``bad_response``... (``error``
            when the endpoint did not say).
        input_billed: whether the provider may bill the request's input although no answer
            came (the body reached it: a timeout, a dropped connection, an unreadable answer).
        billed_attempts: how many times it may bill that input (the HTTP client's retries that
            went out and got no status each count).
    """

    exit_code = EX_UNAVAILABLE

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        request_status: str | None = None,
        input_billed: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.request_status = request_status or (f"http_{status}" if status else "error")
        self.input_billed = input_billed
        self.billed_attempts = 1


class ModelTransientError(ModelError):
    """Rate limit, server error or timeout: worth retrying later."""


class ModelFatalError(ModelError):
    """Authentication failure, unknown model or a rejected request: retrying will not help."""


class BudgetExceeded(StorytellerError):
    """A per-turn or per-period budget (rounds, time, tokens, money) is exhausted."""

    exit_code = EX_UNAVAILABLE


class ToolError(StorytellerError):
    """A tool could not do what was asked; the message is shown to the model."""
