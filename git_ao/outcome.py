"""What happened to one session, and the exit status a run of them implies.

Statuses and exit statuses follow git's habits: 0 when all went well (or there
was nothing to do), 3 when some work needs the user's attention, 1 when a
session was refused or failed. The worst status of a run wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from git_ao.errors import ExitStatus


class Status(StrEnum):
    """The status of one Outcome; its value is what plain and JSON output print."""

    OK = "ok"
    NOTHING = "nothing"
    ATTENTION = "attention"
    REFUSED = "refused"
    FAILED = "failed"



class Action(StrEnum):
    """The step an Outcome reports; its value is what plain and JSON output print."""

    ADD = "add"
    CHECKPOINT = "checkpoint"
    FORGET = "forget"
    HOOK = "hook"
    IMPORT = "import"
    KILL = "kill"
    PRESERVE = "preserve"
    PRUNE_HISTORY = "prune-history"
    PRUNE_RECORD = "prune-record"
    PRUNE_REF = "prune-ref"
    PRUNE_REMOTE = "prune-remote"
    PRUNE_TMP = "prune-tmp"
    PRUNE_TRASH = "prune-trash"
    PRUNE_WORKTREE = "prune-worktree"
    PUSH = "push"
    RECOVER = "recover"
    RELAUNCH = "relaunch"
    RESOLVE = "resolve"
    RESTORE = "restore"


# The exit status each Outcome status implies.
STATUS_EXIT = {Status.OK: ExitStatus.OK, Status.NOTHING: ExitStatus.OK,
               Status.ATTENTION: ExitStatus.ATTENTION, Status.REFUSED: ExitStatus.FAILED,
               Status.FAILED: ExitStatus.FAILED}


@dataclass
class Outcome:
    """What happened to one session (`action` names the step: preserve, restore, ...).

    data: the facts printed with it (JSON keys, kept as they are)."""

    session_id: str
    action: Action
    status: Status
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    started: bool = True  # False: a signal stopped the batch before this session began
    names_state: bool = False  # the message already says the session's state

    @property
    def exit_status(self) -> ExitStatus:
        return STATUS_EXIT[self.status]


def exit_status(outcomes: Iterable[Outcome]) -> ExitStatus:
    """The worst status wins: 1, then 3, then 0 (128 is raised as Fatal, never returned)."""
    codes = {o.exit_status for o in outcomes}
    for code in (ExitStatus.FAILED, ExitStatus.ATTENTION):
        if code in codes:
            return code
    return ExitStatus.OK
