"""Refreshing one storyteller's rolling digest: read the changes, ask the digest model, store.

A refresh reads what changed since the previous digest (`changes`). Nothing changed, or the
same changes as last time (the stored fingerprint), and it ends there without a model request.
Otherwise it sends one request (`agent.digest`: the previous digest and the changes, fenced, no
tools) through the model the daemon uses for everything else, so the budget door, metering,
the cost ledger and the circuit breaker all apply; the refresh is recorded as a run of kind
``digest``. Only a usable answer replaces the stored digest: a refused request (budget), a
failed one (model error), an empty answer or one cut off by ``max_output_tokens`` keep the old
digest, and the next pass tries again.

The digest model is ``[reflection] model`` or else the storyteller's attention model; its
reasoning effort ``[reflection] reasoning_effort`` or else the attention effort.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from storyteller_daemon.agent.digest import DigestOptions, clean_digest, digest_request
from storyteller_daemon.agent.fencing import Fence
from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.clock import Clock, uncancelled
from storyteller_daemon.config import ReflectionConfig
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.storytellers import Scope, Storyteller
from storyteller_daemon.errors import BudgetExceeded, ModelError
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.reflection.changes import gather_changes
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DigestResult:
    """What one refresh did.

    Attributes:
        outcome: ``refreshed``; ``unchanged`` (nothing new: no request); ``no_model``;
            ``budget_exceeded`` (the budget refused the request); ``failed`` (a model error,
            an empty or a cut-off answer): the old digest stays in all but the first.
        digest: the digest stored now (the new one, or the old one), if any.
        changes: how many changes of each kind were read.
        run_key: the key of the recorded run, when a request was made.
        cost_usd: what the request cost.
        detail: why it failed, in a few words.
    """

    outcome: str
    digest: Digest | None
    changes: dict[str, int] = field(default_factory=dict)
    run_key: str | None = None
    cost_usd: float = 0.0
    detail: str = ""


def digest_options(cfg: ReflectionConfig, storyteller: Storyteller) -> DigestOptions:
    """The digest request's model, effort and bounds for a storyteller."""
    effort: str | None = cfg.reasoning_effort or storyteller.effort_for(Scope.ATTENTION).value
    return DigestOptions(
        model=cfg.model.strip() or storyteller.model_for(Scope.ATTENTION),
        reasoning_effort=None if effort == "none" else effort,
        max_chars=cfg.digest_max_chars,
        max_output_tokens=cfg.max_output_tokens,
        service_tier=cfg.service_tier or None,
    )


class DigestRefresher:
    """Refreshes storytellers' digests.

    Args:
        store: the repositories (situations, memories and digests are read; digests written).
        runs: the run records turns are read from (None: turns are left out of the digest).
        model: the daemon's model (metered and budgeted); None: no digest is written.
        recorder: records each refresh that makes a request.
        clock: stamps the digest.
        cfg: the ``[reflection]`` section.
    """

    def __init__(
        self,
        *,
        store: Store,
        runs: RunRepository | None,
        model: Model | None,
        recorder: RunRecorder,
        clock: Clock,
        cfg: ReflectionConfig,
    ) -> None:
        self._store = store
        self._runs = runs
        self._model = model
        self._recorder = recorder
        self._clock = clock
        self._cfg = cfg

    async def refresh(self, storyteller: Storyteller, *, force: bool = False) -> DigestResult:
        """Refresh the digest if something changed since the last one (or `force`, which
        rewrites it even then, as long as there is anything to write about)."""
        if storyteller.id is None:
            raise ValueError(f"storyteller '{storyteller.name}' has no id; save it first")
        sid = storyteller.id
        previous = await self._store.digests.latest(sid)
        read_at = self._clock.now()
        since = previous.refreshed_on if previous is not None else None
        changes = await gather_changes(self._store, self._runs, sid, since, self._cfg.max_changes)
        counts = changes.counts
        fingerprint = changes.fingerprint
        seen = previous is not None and previous.fingerprint == fingerprint
        if ((changes.empty or seen) and not force) or (previous is None and changes.empty):
            if seen and not changes.empty and previous is not None:
                # Changes made in the instant the last refresh read them are read again, and
                # the fingerprint shows it; from now on they are behind `since`.
                previous = replace(previous, refreshed_on=read_at)
                await uncancelled(self._save(previous))
            return DigestResult("unchanged", previous, counts)
        if self._model is None:
            return DigestResult("no_model", previous, counts, detail="no model is configured")
        key = f"st{sid}:digest:{read_at.isoformat()}"
        fence = Fence.new()
        request = digest_request(
            storyteller.name,
            sid,
            previous.text if previous is not None else None,
            changes,
            digest_options(self._cfg, storyteller),
            fence,
        )
        try:
            async with self._recorder.digest(storyteller, key) as run:
                run.previous = previous.text if previous is not None else None
                run.changes, run.fingerprint = counts, fingerprint
                run.input = str(request.input[0]["content"])
                response = await self._model.respond(request)
                text = clean_digest(response.output_text, self._cfg.digest_max_chars)
                problem = None
                if response.incomplete_reason:
                    run.outcome, problem = "incomplete", f"cut off ({response.incomplete_reason})"
                elif not text:
                    run.outcome, problem = "empty", "the model wrote no digest"
                if problem is not None:
                    log.warning(
                        "storyteller %s: digest not refreshed: %s", storyteller.name, problem
                    )
                    return DigestResult(
                        "failed", previous, counts, key, run.context.cost_usd, problem
                    )
                digest = Digest(sid, text, fingerprint, key, read_at)
                await uncancelled(self._save(digest))
                run.digest, run.outcome = text, "refreshed"
        except BudgetExceeded as exc:
            log.warning("storyteller %s: digest not refreshed: %s", storyteller.name, exc)
            return DigestResult("budget_exceeded", previous, counts, key, detail=str(exc))
        except ModelError as exc:
            log.warning("storyteller %s: digest not refreshed: %s", storyteller.name, exc)
            return DigestResult("failed", previous, counts, key, detail=str(exc))
        log.info(
            "storyteller %s: digest refreshed (%d characters, $%.4f)",
            storyteller.name,
            len(text),
            run.context.cost_usd,
        )
        return DigestResult("refreshed", digest, counts, key, run.context.cost_usd)

    async def _save(self, digest: Digest) -> None:
        await self._store.digests.save(digest)
