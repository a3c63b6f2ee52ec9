"""Names of the built-in tools and the two profiles that offer them.

Names, order and profile membership follow FutureMUD's storyteller so packs and prompts port
between engines. The director's tools (`DIRECTOR_TOOLS`: story plans and scene claims) are ours;
they follow FutureMUD's in both profiles, for storytellers that plan
(`domain.direction.Direction.plans`).
"""

from __future__ import annotations

from enum import StrEnum

FULL_PROFILE_TOOLS: tuple[str, ...] = (
    "CreateSituation",
    "UpdateSituation",
    "ResolveSituation",
    "ShowSituation",
    "Noop",
    "OnlinePlayers",
    "PlayerInformation",
    "ListMemoriesForPlayer",
    "ShowMemory",
    "CreateMemory",
    "UpdateMemory",
    "ForgetMemory",
    "Landmarks",
    "ShowLandmark",
    "SearchReferenceDocuments",
    "ShowReferenceDocument",
    "PathBetweenRooms",
    "PathFromCharacterToRoom",
    "PathBetweenCharacters",
    "RecentCharacterPlans",
    "CharacterPlans",
    "CurrentDateTime",
    "DateTimeForTarget",
    "CalendarDefinition",
)

FULL_ONLY_TOOLS: frozenset[str] = frozenset(
    {
        "Landmarks",
        "ShowLandmark",
        "PathBetweenRooms",
        "PathFromCharacterToRoom",
        "PathBetweenCharacters",
        "RecentCharacterPlans",
        "CharacterPlans",
        "CalendarDefinition",
    }
)

EVENT_FOCUSED_TOOLS: tuple[str, ...] = tuple(
    t for t in FULL_PROFILE_TOOLS if t not in FULL_ONLY_TOOLS
)

DIRECTOR_TOOLS: tuple[str, ...] = (
    "CreateStoryPlan",
    "UpdateStoryPlan",
    "ClaimScene",
    "ReleaseScene",
)
"""Offered after a profile's tools to storytellers that plan."""

BUILTIN_TOOL_NAMES: frozenset[str] = frozenset(FULL_PROFILE_TOOLS) | frozenset(DIRECTOR_TOOLS)

WRITING_TOOLS: frozenset[str] = frozenset(
    {
        "CreateSituation",
        "UpdateSituation",
        "ResolveSituation",
        "CreateMemory",
        "UpdateMemory",
        "ForgetMemory",
        *DIRECTOR_TOOLS,
    }
)
"""The built-ins that change what the storyteller keeps; custom tools change the game."""

READ_ONLY_TOOLS: frozenset[str] = BUILTIN_TOOL_NAMES - WRITING_TOOLS
"""The built-ins that change nothing (look-ups, and Noop)."""


class ToolProfile(StrEnum):
    """Which built-ins a turn offers."""

    FULL = "full"
    EVENT_FOCUSED = "event_focused"

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The built-in tools of this profile, in declaration order."""
        return FULL_PROFILE_TOOLS if self is ToolProfile.FULL else EVENT_FOCUSED_TOOLS
