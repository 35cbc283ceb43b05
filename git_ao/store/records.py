"""The records git-ao keeps per session: the session itself and its last save.

The Python names say what the values are; the SQLite columns (and the JSON keys
of `git ao list --json`) keep their original names:

    Session.common_dir     sessions.repo                  (JSON "repo")
    Session.worktree_path  sessions.workspace_path        (JSON "workspace_path")
    Save.common_dir        session_worktrees.repo
    Save.private_config    session_worktrees.worktree_config
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from git_ao.store.states import State, is_pending

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from git_ao.git.parse import BranchName, ObjectId


def now_ns() -> int:
    """Wall-clock time in integer nanoseconds since the epoch (the unit of every stored time)."""
    return time.time_ns()


@dataclass
class Save:
    """The session_worktrees row: what one preserve recorded."""

    session_id: str
    common_dir: str  # the repository's common git dir
    worktree_path: str
    branch: BranchName | None
    head: ObjectId | None
    detached: bool
    preserve_ref: str  # "" when the worktree was clean
    preserved_commit: ObjectId | None
    private_config: str | None  # JSON: sparse-checkout patterns, per-worktree config, flags
    saved_at: int
    restored_at: int | None = None
    # A restore applied the work only in part (conflict, blocked apply): the ref
    # holds work the worktree may lack, so a new preserve must not replace it.
    needs_attention: bool = False
    restore_started_at: int | None = None  # ns; set just before `git worktree add`
    # The stored states (states.PENDING_SQL); None on a Save not read from the store.
    pending_state: bool | None = None
    ref_state: bool | None = None
    # The save of an earlier capture of the same preserve that holds what this one
    # lacks (save/lacking.py): named until a new preserve, an --at that brings it
    # back, or `git ao resolve`.
    holds_less_than: ObjectId | None = None
    # The tool that removed the worktree itself (claude-code: its WorktreeRemove
    # hook), the save being git-ao's copy of what it removed: pending, but the
    # restore of every pending session leaves it (`restores_by_default`); only a
    # restore naming it brings it back. None for any other save.
    removed_by: str | None = None

    @property
    def restores_by_default(self) -> bool:
        """Does a restore naming no session (the boot's) bring this save back? Every
        pending save but one its tool removed on purpose (`removed_by`)."""
        return self.pending and not self.removed_by

    @property
    def restore_interrupted(self) -> bool:
        """Did a restore of this save start and never finish (a kill, a crash)?
        record_save replaces the row, so a start recorded is this save's."""
        return self.pending and self.restore_started_at is not None

    @property
    def pending(self) -> bool:
        """Has no restore caught up with this save (states.PENDING_SQL)?"""
        if self.pending_state is not None:
            return self.pending_state
        return is_pending(self.saved_at, self.restored_at)

    @property
    def holds_ref(self) -> bool:
        """Is the preserve ref still this save's (pending, a checkpoint not yet
        superseded, or kept by a restore)?"""
        if self.ref_state is not None:
            return bool(self.preserve_ref) and self.ref_state
        return bool(self.preserve_ref) and (self.restored_at is None
                                            or self.saved_at >= self.restored_at)


@dataclass
class Session:
    """The sessions row, with its save (or None) attached."""

    id: str
    kind: str
    harness: str
    common_dir: str  # the repository's absolute common git dir
    branch: BranchName | None
    worktree_path: str
    agent_session_id: str | None = None
    prompt: str | None = None
    terminated: bool = False
    created_at: int = 0
    updated_at: int = 0
    save: Save | None = field(default=None, repr=False)
    group_id: str | None = None  # the ao daemon session this worktree is part of
    session_mode: str | None = None  # the daemon's 'tui' or 'chat'
    provider_conversation_id: str | None = None  # a chat-mode session's resume handle
    tool: str | None = None  # the tool that made it (git ao import --tool): claude-code, ...
    tool_id: str | None = None  # that tool's own id for it
    tmux_session: str | None = None  # the tmux session the tool ran its agent in

    @property
    def pending(self) -> bool:
        return self.save is not None and self.save.pending

    @property
    def live(self) -> bool:
        return not self.terminated

    @property
    def state(self) -> State:
        """LIVE, PENDING or TERMINATED (listing.state tells ATTENTION apart)."""
        if self.live:
            return State.LIVE
        return State.PENDING if self.pending else State.TERMINATED
