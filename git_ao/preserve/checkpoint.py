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
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.preserve import workflow
from git_ao.save import capture, unchanged
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
            # No capture: the stat data proves the newest entry holds this state.
            held = workflow.held_note(s) if s.save is not None and s.save.needs_attention else ""
            out.append(Outcome(s.id, Action.CHECKPOINT, Status.OK, "unchanged since the newest "
                               "entry of its history (nothing added)" + held,
                               {"unchanged": True}))
            continue
        o = guarded(functools.partial(_one, ctx, s, trigger), s.id, Action.CHECKPOINT, ctx)
        o.action = Action.CHECKPOINT
        log_failure(ctx, o)
        out.append(o)
    return out


def _one(ctx: Context, s: Session, trigger: str) -> Outcome:
    """`workflow.preserve_one` keeping the worktree; a worktree in the middle of an
    operation (a rebase stopped on a conflict, unmerged paths) is skipped, said
    with status nothing: the timer and the hooks run while the user works
    through it on purpose, and no entry can hold that state (its conflict stages,
    the operation's files), so none is written, nor a part of it that would pass
    for the whole. Once it is finished or aborted, the next checkpoint saves."""
    try:
        return workflow.preserve_one(ctx, s.id, True, trigger=trigger)
    except capture.InProgress as exc:
        ctx.log("checkpoint", s.id, "skipped-in-progress", what=exc.what,
                workspace=s.worktree_path)
        return Outcome(s.id, Action.CHECKPOINT, Status.NOTHING,
                       f"skipped, nothing saved: {exc.what} in '{s.worktree_path}', a state no "
                       "history entry holds; the first checkpoint after it is finished or "
                       "aborted saves the worktree", facts(s, in_progress=exc.what))
