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


class Status(StrEnum):
    """The status of one Outcome; its value is what plain and JSON output print."""

    OK = "ok"
    NOTHING = "nothing"
    ATTENTION = "attention"
    REFUSED = "refused"
    FAILED = "failed"



# The exit status each Outcome status implies.
STATUS_EXIT = {Status.OK: 0, Status.NOTHING: 0, Status.ATTENTION: 3, Status.REFUSED: 1,
               Status.FAILED: 1}


@dataclass
class Outcome:
    """What happened to one session (`action` names the step: preserve, restore, ...).

    data: the facts printed with it (JSON keys, kept as they are)."""

    session_id: str
    action: str
    status: Status
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_status(self) -> int:
        return STATUS_EXIT[self.status]


def exit_status(outcomes: Iterable[Outcome]) -> int:
    """The worst status wins: 1, then 3, then 0 (128 is raised as Fatal, never returned)."""
    codes = {o.exit_status for o in outcomes}
    for code in (1, 3):
        if code in codes:
            return code
    return 0
