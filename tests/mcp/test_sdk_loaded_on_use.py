"""The MCP SDK is imported when a configured server is first opened, not with the daemon: a
daemon with no MCP servers does not pay for it at start-up."""

from __future__ import annotations

import subprocess
import sys


def test_the_daemon_imports_no_mcp_sdk_until_a_server_is_used() -> None:
    script = (
        "import sys\n"
        "import storyteller_daemon.app\n"
        "import storyteller_daemon.mcp\n"
        "print(','.join(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.',"
        " 'mcp_types')))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""
