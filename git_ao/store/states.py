"""The words git-ao stores and prints: session kinds, session states, and the rule
that makes a save pending.

Kept apart from the record classes because shell completion reads them too and
must import next to nothing.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What a session's agent is; both kinds are treated alike. The value is what the
    database (its CHECK constraint) and every output hold."""

    WORKER = "worker"
    ORCHESTRATOR = "orchestrator"


KINDS = tuple(k.value for k in Kind)


class State(StrEnum):
    """A session's state as `git ao list` and `show` print it, in JSON too (a stable
    vocabulary, git-ao(1)): live, attention (live, but its ref holds work the last
    restore could not put back), pending (saved, waiting for a restore), terminated."""

    LIVE = "live"
    ATTENTION = "attention"
    PENDING = "pending"
    TERMINATED = "terminated"


STATES = tuple(s.value for s in State)

# A session is pending when it has a save that no restore has caught up with: never
# restored, or saved again since. The save row says so itself (its `pending` column,
# set by a preserve, cleared by a restore): wall-clock times jump (a clock fast at
# shutdown and right at boot), so they are never compared to decide it.
# PENDING_SQL says it over `session_worktrees w`; `is_pending` for rows written
# before that column (an in-memory Save not yet stored, an import).
PENDING_SQL = "w.session_id IS NOT NULL AND w.pending = 1"
# The pending saves a restore naming no session brings back: all but those whose
# worktree their tool removed itself (records.Save.removed_by).
RESTORES_SQL = f"{PENDING_SQL} AND w.removed_by IS NULL"


def is_pending(saved_at: int, restored_at: int | None) -> bool:
    """The old rule, by times, for a Save that has no stored state yet."""
    return restored_at is None or saved_at > restored_at


# The tools `git ao import --tool` reads (sessions.tool holds one of them, `ao` for the
# ao daemon's): here so settings can check `import.tools` without importing them.
IMPORT_TOOLS = ("ao", "claude-code", "claude-squad", "codex", "conductor", "crystal",
                "vibe-kanban")
