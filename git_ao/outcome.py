"""What happened to one session, and the exit status a run of them implies.

Statuses and exit statuses follow git's habits: 0 when all went well (or there
was nothing to do), 3 when some work needs the user's attention, 1 when a
session was refused or failed. The worst status of a run wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from git_ao.errors import ExitStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    # Types only: both modules import nothing of git-ao's (pyproject's layer
    # contract lets these two edges through).
    from git_ao.git.parse import BranchName, ObjectId
    from git_ao.store.records import Session
    from git_ao.store.states import State


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


# The records' shapes for mypy; at run time each is a plain dict, which spares
# every command the import of typing (mypy takes any name TYPE_CHECKING as true).
if TYPE_CHECKING:
    class AgentSeen(TypedDict):
        """One process found working in a worktree (`processes` in OutcomeData)."""

        pid: int
        name: str
        ties: list[str]


    # What `git ao-restore --at` did to the branch (`branch_moved` in OutcomeData);
    # functional form: "from" is a Python keyword.
    BranchMoved = TypedDict("BranchMoved", {
        "branch": "str | None", "from": str, "to": str,
        "left": int,  # commits left on no branch
        "kept_by": "ObjectId",  # the history entry's save that keeps them
    })


    class OutcomeData(TypedDict, total=False):
        """The facts an Outcome carries: what `--json` prints merged into each result's
        record, in the order they were put in, and what plain output shows. Every key
        any step writes is here, so mypy checks each write and read."""

        # every session's facts (`facts`), in this order
        workspace_path: str
        kind: str
        harness: str
        branch: BranchName | None
        repo: str
        # the `git ao list --json` record (import, add)
        id: str
        state: State | str | None  # a State after the step (cli.app); relaunch: its Launch
        agent_session_id: str | None
        preserve_ref: str | None
        preserved_commit: ObjectId | None
        detached: bool | None
        saved_at: str | None
        restored_at: str | None
        created_at: str | None  # None: not registered (a dry run)
        tool: str | None
        tool_id: str | None
        tmux_session: str | None
        group: str | None
        session_mode: str | None
        provider_conversation_id: str | None
        # preserve and checkpoint
        changed: int
        untracked: int
        ignored: int | list[str]  # preserve: a count; prune-trash: the top-level paths
        history_entry: ObjectId | None
        history_error: str  # why the capture was not appended to the history
        remote_commit: ObjectId  # restore --from: the remote's other save of a session pending here
        history_tip: ObjectId  # prune --remote: the remote's history of the session, deleted or kept
        history_held: ObjectId  # nothing appended: the newest entry's save holds the capture
        kept_work: bool  # checkpoint: the ref holds work a restore left, and stays as it is
        warning: str
        inexact: list[str]  # checkpoint: paths saved as git checks them out
        unstorable: list[str]  # untracked paths whose names git will not store
        left_out: list[str]  # checkpoint, restore --at: nested repositories and worktrees not saved
        submodules_left_out: list[str]  # checkpoint: submodules saved as their commit alone
        filter_failed: list[str]  # paths a required filter failed on (as the index holds them)
        unreadable: list[str]  # paths that cannot be read (as the index holds them); directories end in '/'
        blocked: list[str]
        trash: str
        volatile_trash: str
        late_check_hung: list[str]
        still_changing: list[str]
        captured_late: list[str]
        before_stop: ObjectId
        # preserve and restore: an earlier capture of the same preserve holding what
        # the save lacks (save/lacking.py), and its history entry's number now
        holds_less_than: ObjectId | None
        removed_by: str | None  # list: the tool that removed a pending save's worktree itself
        holds_less_entry: int | None
        processes: list[AgentSeen]
        agent_policy: str
        stopped: list[int]
        still_running: list[int]
        # preserve and restore: processes still working in the trash copy (pids)
        running_in_trash: list[int]
        # a step stopped by --timeout (batch.guarded)
        timed_out: bool
        hung: list[str]
        removed: list[str]
        # relaunch
        argv0: str
        returncode: int | None
        # restore
        from_trash: bool
        unproven: bool  # from the trash with the saved commit gone: not compared
        entry: ObjectId
        entry_number: int
        replaced: ObjectId | None
        replaced_number: int | None
        # restore --at resumed after a kill, the current state appended: the entry
        # of the state before the killed run
        before_interrupted: ObjectId
        before_interrupted_number: int
        branch_moved: BranchMoved
        left_in_place: list[str]  # ignored before the run, untracked under the entry's rules
        flags_put_back: bool
        late_writes: list[str]
        late_deleted: list[str]
        admin_restored: list[str]
        admin_not_restored: list[str]
        applied: bool
        placed: list[str]
        not_as_saved: dict[str, str]
        paths: list[str]
        index_not_kept: list[str]
        trash_skipped: str
        set_aside: str
        set_aside_files: list[str]
        set_aside_unfinished: str
        unsaved_files: list[str]
        stray_newer: list[str]
        modes_not_set: list[str]
        environment: list[str]
        environment_kept: list[str]
        environment_lost: int
        trash_holds_unsaved: str
        trash_changes: dict[str, str]
        changed_since: list[str]  # a reused worktree holding the save: paths changed since
        # checkpoint
        unchanged: bool
        in_progress: str  # skipped: the operation in progress ("a rebase in progress")
        # prune
        path: str
        size: int
        dropped: int
        kept: int
        trash_deleted: list[str]
        trash_kept: list[str]
        # push and remote
        remote: str
        ref: str
        commit: str | None  # a push row's or the remote's commit, as recorded


    # The exit status each Outcome status implies.
else:
    AgentSeen = BranchMoved = OutcomeData = dict


STATUS_EXIT = {Status.OK: ExitStatus.OK, Status.NOTHING: ExitStatus.OK,
               Status.ATTENTION: ExitStatus.ATTENTION, Status.REFUSED: ExitStatus.FAILED,
               Status.FAILED: ExitStatus.FAILED}


@dataclass
class Outcome:
    """What happened to one session (`action` names the step: preserve, restore, ...).

    data: the facts printed with it (JSON keys, kept as they are); what only the
    code reads back, never printed, is a field below instead."""

    session_id: str
    action: Action
    status: Status
    message: str
    data: OutcomeData = field(default_factory=lambda: OutcomeData())
    started: bool = True  # False: a signal stopped the batch before this session began
    names_state: bool = False  # the message already says the session's state
    # a preserve's dry run refused for a worktree it keeps: the real run saves the
    # work all the same (and a push sends that save)
    would_save: bool = False
    # a preserve that keeps the worktree: why, in the message's words (doctor says it)
    kept_for: str = ""
    # import: the session registered (on a dry run, the one the real run would
    # register, stored nowhere), so a dry run's preserve --all can judge it
    registered: Session | None = None
    # import: a refusal an earlier run reported, said again as a note (the import
    # a preserve or restore runs first prints none of these)
    said_before: bool = False
    # import: a note of a source that holds no session (an empty ao.db), which
    # `git ao import` prints and the import a preserve or restore runs first only
    # with -v
    only_note: bool = False
    # restore: a session that was not pending, said in this run but not brought
    # back by it (its worktree gone, its ref holding work): relaunch leaves it
    not_restored: bool = False
    # What the run could not save or put back as asked (data "warning" joins them,
    # each after "warning: "): -q prints them though it prints no ok record.
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> ExitStatus:
        return STATUS_EXIT[self.status]


def warn(o: Outcome, warnings: Iterable[str]) -> Outcome:
    """`o` carrying `warnings` too (one line each, no "warning: " before it): in
    `warnings` and in data "warning", joined after those it carried. Returns `o`."""
    o.warnings += [w for w in warnings if w not in o.warnings]
    if o.warnings:
        o.data["warning"] = "; ".join(f"warning: {w}" for w in o.warnings)
    return o


def exit_status(outcomes: Iterable[Outcome]) -> ExitStatus:
    """The worst status wins: 1, then 3, then 0 (128 is raised as Fatal, never returned)."""
    codes = {o.exit_status for o in outcomes}
    for code in (ExitStatus.FAILED, ExitStatus.ATTENTION):
        if code in codes:
            return code
    return ExitStatus.OK


def facts(s: Session, **extra: Unpack[OutcomeData]) -> OutcomeData:
    """The facts every Outcome about `s` carries (its JSON `data`), plus `extra`."""
    d: OutcomeData = {"workspace_path": s.worktree_path, "kind": s.kind, "harness": s.harness,
                      "branch": s.branch, "repo": s.common_dir}
    d.update(extra)
    return d
