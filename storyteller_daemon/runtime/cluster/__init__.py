"""Several daemons over one PostgreSQL database (docs/operations.md, "Running a cluster").

`LeaseKeeper` (`keeper`) holds this daemon's share of the storytellers by leases on the
daemon's clock; `LeasedSettings` (`settings`) shows the settings watch only those, so the
daemon routes and runs only what it holds; `InvocationForwarder` (`forwarding`) carries a game's
invocation to the daemon running its storyteller. `ports` is the lease repository as the
keeper sees it.
"""

from storyteller_daemon.runtime.cluster.forwarding import InvocationForwarder
from storyteller_daemon.runtime.cluster.keeper import LeaseKeeper
from storyteller_daemon.runtime.cluster.settings import LeasedSettings

__all__ = ["InvocationForwarder", "LeaseKeeper", "LeasedSettings"]
