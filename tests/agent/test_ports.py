"""The storage repositories satisfy the agent's persistence protocols.

The typed assignments are checked by mypy (``mypy tests/agent/test_ports.py``); the signature
comparison checks the same at test time, so a drift in either file fails here.
"""

from __future__ import annotations

import inspect

import pytest

from storyteller_daemon.agent.ports import (
    DigestStore,
    MemoryStore,
    ProviderQueries,
    ReferenceStore,
    SceneClaimStore,
    SituationStore,
    StoryPlanStore,
)
from storyteller_daemon.storage.digests import DigestRepository
from storyteller_daemon.storage.memories import MemoryRepository
from storyteller_daemon.storage.provider_queries import ProviderQueryRepository
from storyteller_daemon.storage.references import ReferenceRepository
from storyteller_daemon.storage.scene_claims import SceneClaimRepository
from storyteller_daemon.storage.situations import SituationRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.storage.story_plans import StoryPlanRepository

PAIRS: list[tuple[type, type]] = [
    (SituationStore, SituationRepository),
    (MemoryStore, MemoryRepository),
    (DigestStore, DigestRepository),
    (ReferenceStore, ReferenceRepository),
    (StoryPlanStore, StoryPlanRepository),
    (SceneClaimStore, SceneClaimRepository),
    (ProviderQueries, ProviderQueryRepository),
]


def test_the_store_hands_out_repositories_that_fit(sqlite_store: Store) -> None:
    situations: SituationStore = sqlite_store.situations
    memories: MemoryStore = sqlite_store.memories
    references: ReferenceStore = sqlite_store.references
    plans: StoryPlanStore = sqlite_store.plans
    claims: SceneClaimStore = sqlite_store.claims
    queries: ProviderQueries = sqlite_store.queries
    assert isinstance(plans, StoryPlanStore) and isinstance(claims, SceneClaimStore)
    assert isinstance(queries, ProviderQueries)
    assert isinstance(situations, SituationStore)
    assert isinstance(memories, MemoryStore)
    assert isinstance(references, ReferenceStore)


def _shape(function: object) -> list[tuple[str, object, bool]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [
        (p.name, p.kind, p.default is inspect.Parameter.empty)
        for p in signature.parameters.values()
    ]


@pytest.mark.parametrize(("protocol", "repository"), PAIRS)
def test_protocol_methods_match_the_repository_signatures(protocol: type, repository: type) -> None:
    methods = [
        name
        for name, member in vars(protocol).items()
        if inspect.iscoroutinefunction(member) and not name.startswith("_")
    ]
    assert methods
    for name in methods:
        expected = getattr(protocol, name)
        actual = getattr(repository, name)
        assert inspect.iscoroutinefunction(actual), name
        assert _shape(actual) == _shape(expected), name
        defaults = [p.default for p in inspect.signature(expected).parameters.values()]
        assert [p.default for p in inspect.signature(actual).parameters.values()] == defaults, name
