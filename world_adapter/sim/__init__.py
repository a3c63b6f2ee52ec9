"""The embedded sim world: a small harbour town that implements `WorldClient` in-process.

`SimWorld.harbour_town()` builds the town: the Harbour Ward (rooms 101-108) and the Old Town
(rooms 201-205), three players and five NPCs, and a catalogue of progs written in Python whose
effects show up in characters' output and in the event stream.
"""

from world_adapter.sim.world import SimWorld

__all__ = ["SimWorld"]
