"""``[cluster]``: its bounds, and SQLite refusing it with one line naming the setting."""

from __future__ import annotations

import pytest

from storyteller_daemon.config import check_cluster_database, parse_config
from storyteller_daemon.errors import ConfigError


def test_clustering_on_sqlite_is_refused_naming_the_setting() -> None:
    cfg = parse_config({"cluster": {"enabled": True, "instance": "a"}}, "st.toml")
    with pytest.raises(ConfigError) as caught:
        check_cluster_database(cfg, "sqlite+aiosqlite:///st.db")
    message = str(caught.value)
    assert "cluster.enabled" in message and "PostgreSQL" in message
    assert "\n" not in message
    check_cluster_database(cfg, "postgresql+asyncpg://u@h/db")
    check_cluster_database(parse_config({}, "st.toml"), "sqlite+aiosqlite:///st.db")


def test_a_renewal_interval_over_half_the_lease_is_refused() -> None:
    with pytest.raises(ConfigError, match="cluster: renew_seconds"):
        parse_config({"cluster": {"lease_seconds": 10.0, "renew_seconds": 6.0}}, "st.toml")
    with pytest.raises(ConfigError, match="cluster.instance"):
        parse_config({"cluster": {"instance": "two words"}}, "st.toml")
