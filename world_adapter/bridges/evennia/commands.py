"""In-game ``ais`` (storytellers) and ``aisr`` (reference documents) for a game's admins.

The words after the command are the storyteller CLI's (``storyteller ais ...``): the bridge sends
them to the connected daemon in an ``admin`` frame, with the caller's account name and highest
permission, and shows the daemon's answer. The daemon runs them through its own command line and
audit log, and checks the permission again, so a game that forgot a lock still cannot let a
Builder change anything::

    ais list                                  ais show 3
    ais pause "Harbour Ward Watch"            ais unpause 3
    ais set 3 model gpt-5-mini                ais set 3 surveillance zone 1
    ais situation list 3                      ais memory list 3
    ais invoke 3 The bells ring at midnight.  ais costs          ais turns 3
    aisr list                                 aisr search harbour tides
    aisr create Tide Tables                   ais delete 3 --yes

``ais invoke`` goes to the daemon in an ``invoke`` frame (a game's own invocation): the caller
is told at once whether the storyteller accepted the turn, and later how the turn ended.

Permissions (Evennia's hierarchy): Builder reads (``list``, ``show``, searches, costs, turns),
Admin changes (create, set, pause, unpause, invoke...), Developer deletes (``delete``,
``memory forget``). Add `StorytellerAdminCmdSet` to the character cmdset (see README.md).
"""

from __future__ import annotations

import shlex
from typing import Any

from evennia import CmdSet
from evennia.commands.default.muxcommand import MuxCommand

from . import service
from .invocations import Report, describe, invocation_words

LEVELS = ("Player", "Helper", "Builder", "Admin", "Developer")
READS = {
    "ais": {"list", "show", "view", "refsearch", "reference", "references", "costs", "turns"},
    "aisr": {"list", "show", "search"},
}
GROUPS = {"situation", "situations", "memory", "memories", "digest", "plan", "claim"}
GROUP_READS = {"list", "show", "history"}
DELETES = {"delete", "forget"}


def needed_level(command: str, words: list[str]) -> str:
    """The permission a command needs: Builder reads, Admin changes, Developer deletes."""
    verb = words[0].lower()
    sub = words[1].lower() if len(words) > 1 and command == "ais" and verb in GROUPS else ""
    if verb in DELETES or sub in DELETES:
        return "Developer"
    if verb in READS[command] or sub in GROUP_READS:
        return "Builder"
    return "Admin"


def caller_level(caller: Any) -> str:
    """The caller's highest permission in Evennia's hierarchy (superusers are Developers)."""
    for level in reversed(LEVELS):
        if caller.locks.check_lockstring(caller, f"cmd:perm({level})"):
            return level
    return "Player"


def _plain(text: str) -> str:
    """Text shown as it is: Evennia reads ``|`` as the start of a colour code."""
    return text.replace("|", "||")


def _invoke(caller: Any, words: list[str]) -> None:
    """``ais invoke``: an ``invoke`` frame; the answer and the outcome are told to the caller."""

    def report(what: Report) -> None:
        good = getattr(what, "accepted", True)
        caller.msg(_plain(describe(what)) if good else f"|r{_plain(describe(what))}|n")

    try:
        storyteller, text = invocation_words(words)
        service.invoke_storyteller(storyteller, text, callback=report)
    except ValueError as exc:
        caller.msg(str(exc))


class _StorytellerAdminCommand(MuxCommand):
    locks = "cmd:perm(Builder)"
    help_category = "Storyteller"

    def func(self) -> None:
        caller = self.caller
        try:
            words = shlex.split(self.args or "")
        except ValueError:
            caller.msg("Unbalanced quotes.")
            return
        if not words:
            caller.msg(f"Usage: {self.key} <verb> [words]. See 'help {self.key}'.")
            return
        needed, level = needed_level(self.key, words), caller_level(caller)
        if LEVELS.index(level) < LEVELS.index(needed):
            caller.msg(f"{self.key} {words[0]} needs the {needed} permission.")
            return
        if self.key == "ais" and words[0].lower() == "invoke":
            _invoke(caller, words)
            return
        account = getattr(self, "account", None) or caller

        def reply(text: str | None, error: str | None) -> None:
            if error is not None:
                caller.msg(f"|r{_plain(error)}|n")
            else:
                caller.msg(_plain(text or ""))

        if not service.send_admin(self.key, words[0], words[1:], account.key, level, reply):
            caller.msg("The storyteller daemon is not connected.")


class CmdAis(_StorytellerAdminCommand):
    """
    Storytellers: list, show, create, set, pause, unpause, invoke, delete.

    Usage:
      ais list | show <storyteller> | create <name> | delete <storyteller> --yes
      ais pause <storyteller> | unpause <storyteller>
      ais set <storyteller> <setting> <value...>   (model, surveillance, tool, subscribe...)
      ais situation list|show|scope ...  ais memory list|show|history|forget ...
      ais invoke <storyteller> <text>    ais costs [storyteller]    ais turns [storyteller]
      ais refsearch <storyteller> <words>

    Quote names with spaces ("Harbour Ward Watch") or use the id. Builders may read, Admins
    change, Developers delete.
    """

    key = "ais"


class CmdAisr(_StorytellerAdminCommand):
    """
    Reference documents: list, show, search, create, set, delete.

    Usage:
      aisr list | show <document> | search <words> | create <name>
      aisr set <document> <field> <value...> | delete <document> --yes

    Builders may read, Admins change, Developers delete.
    """

    key = "aisr"


class StorytellerAdminCmdSet(CmdSet):
    """The storyteller's admin commands, ``ais`` and ``aisr``."""

    key = "storyteller_admin"

    def at_cmdset_creation(self) -> None:
        self.add(CmdAis())
        self.add(CmdAisr())
