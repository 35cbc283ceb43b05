"""Checkpoints: a session's current state appended to its history while the
session goes on (`git ao checkpoint`, `git ao-preserve --keep-worktree`, the
timer, an agent tool's hook).

A checkpoint is a preserve that keeps the worktree (`workflow.preserve_one`):
the capture reads the worktree through temporary index files in its admin dir,
with git's optional locks off, so the worktree's index and files are never
written and its index lock is never taken; agents are neither stopped nor
signalled.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from git_ao.batch import guarded, log_failure
from git_ao.context import Context
from git_ao.outcome import Action, Outcome, Status
from git_ao.preserve import workflow
from git_ao.save import unchanged
from git_ao.store.records import Session


def checkpoint(ctx: Context, sessions: Sequence[Session], *, trigger: str = "checkpoint"
               ) -> list[Outcome]:
    """Checkpoint each live session (one after the other: a checkpoint runs beside an
    agent's turn and should take one core at most). trigger: the history entry's
    cause (history.TRIGGERS). Returns one Outcome per session; a session that is
    not live is reported as nothing to do."""
    out = []
    for s in sessions:
        if not s.live:
            out.append(Outcome(s.id, Action.CHECKPOINT, Status.NOTHING,
                               f"not live ({s.state}): nothing to checkpoint"))
            continue
        if unchanged.unchanged(ctx.store.dir, s.id, s.worktree_path):
            # No git process: the stat data proves the newest entry holds this state.
            held = workflow.held_note(s) if s.save is not None and s.save.needs_attention else ""
            out.append(Outcome(s.id, Action.CHECKPOINT, Status.OK, "unchanged since the newest "
                               "entry of its history (nothing added)" + held,
                               {"unchanged": True}))
            continue
        o = guarded(functools.partial(workflow.preserve_one, ctx, s.id, True,
                                      trigger=trigger), s.id, Action.CHECKPOINT, ctx)
        o.action = Action.CHECKPOINT
        log_failure(ctx, o)
        out.append(o)
    return out

