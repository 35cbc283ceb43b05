"""`git ao-restore ID --at N|COMMIT`: a live worktree takes the state of one entry
of its session's history, exactly, and the session stays live.

The order, under the session's lock: find the entry; refuse a locked index, a
HEAD now on another branch than the entry's, or a process working in the
worktree (what it writes after the capture would be in no entry); capture the
current state; when it is the entry's already, stop there and add nothing (an
entry added then would shift every number a script reuses); refuse a path the
run leaves in place (ignored, a name git will not store, or what git status
does not show) where the entry writes (`_check_in_the_way`); else append the
current state to the history (trigger "restore"), so this restore can itself be
undone; refuse when a second walk sees a write since the first; only then
change the worktree (the mark written first, for a rerun): the untracked
files the entry's paths would meet (and untracked .gitignore files) are removed,
the index flags that hide files from the reset cleared, `git reset --hard` puts
HEAD (and the branch it names), the index and the tracked files on the entry's
HEAD, the entry's save is applied like `git stash apply --index`
(git_ao/save/apply.py), the other captured untracked files are removed unless
the entry's rules ignore them, its index flags, modes and empty directories are
put back (git_ao/save/local_state.py), and the result proven to hold exactly the
entry (git_ao/proof/restored.py). Ignored files are never touched: one the
entry's rules no longer ignore is left and named. A kill at any point leaves
both the replaced state and the entry in the history; a step that fails (a
directory made immutable) says whether the worktree changed and what brings the
replaced state back (`_stopped`).

A branch the reset moves is said, from which commit to which, with the commits
it leaves on no branch: the entry of the replaced state keeps them (its save's
first parent is the old HEAD), and `git branch rescue <old>` names them again.
The numbers said are those after the run; what a script would reuse is a commit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from git_ao import crashpoint, git
from git_ao.agents import processes
from git_ao.context import Context, lookup, session_paths
from git_ao.errors import AoError, GitError, Refused
from git_ao.fs import walk
from git_ao.fs.gone import gone_worktree
from git_ao.git import index, query, worktree
from git_ao.git import lock as gitlock
from git_ao.git.parse import BranchName, IndexFlags, ObjectId
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.outcome import warn as with_warnings
from git_ao.proof.restored import holds
from git_ao.save import apply, capture, history, local_state
from git_ao.store.records import Save, Session, now_ns

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from git_ao.outcome import OutcomeData


def restore_at(ctx: Context, session_id: str, at: str) -> Outcome:
    """Bring the live session's worktree to the history entry `at` names (a number,
    1 the newest, or a commit id of the entry or its save). Returns an Outcome;
    raises Refused (not live, no such entry, a locked index, another branch, a
    state that cannot be captured) before anything in the worktree changes."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if not s.live or s.pending:
            raise Refused(f"session '{s.id}' is {s.state}, not live: git ao-restore {s.id} "
                          "brings it back first")
        path = s.worktree_path
        gone = gone_worktree(s)
        if gone is not None or not os.path.isdir(path):
            # What list and restore say of it, naming only what will work.
            raise Refused(history.gone_advice(gone, s) if gone is not None else
                          f"'{path}' is gone; git ao-preserve {s.id} records it, then "
                          f"git ao-restore {s.id}")
        v = worktree.verify(s.common_dir, path, git.worktree_list(s.common_dir))
        try:
            entry = history.find(path, s.id, at)
        except AoError as exc:
            raise Refused(str(exc)) from None
        index_lock = os.path.join(v.git_dir, "index.lock")
        if os.path.exists(index_lock):
            raise Refused(f"the index of '{path}' is locked: "
                          f"{gitlock.describe(index_lock, path)} (nothing changed)")
        _check_working(path)
        walked = walk.walk(path)  # before the status: its stat data gives the modes
        _check_output(path, walked)
        try:
            # A nested repository or worktree is left out, as a checkpoint leaves it,
            # and left where it is (`_check_nested`).
            st = capture.inspect(path, v.git_dir, leave_nested=True)
        except capture.InProgress as exc:
            # Before the branch: a rebase or a bisect detaches HEAD, and git switches
            # no branch until the operation is over.
            raise Refused(f"{exc}, then run it again (nothing changed)") from None
        except capture.CannotCapture as exc:
            # HEAD on another branch says so first, one with no commit yet too (`git
            # checkout --orphan`): its switch back is what works, not a commit there.
            now = git.current_branch(path)
            if now != entry.branch:
                raise _other_branch(s, path, entry, now, unborn=True) from None
            if isinstance(exc, capture.Unborn):
                exc = history.unborn_refusal(s, exc)
            raise _unrecordable(exc) from None
        _check_nested_sessions(ctx, s, path, st.left_out)
        if st.branch != entry.branch:
            raise _other_branch(s, path, entry, st.branch)
        assert st.head is not None  # inspect refuses an unborn branch
        left = query.left_behind(path, st.head, entry.head, st.branch) \
            if st.head != entry.head else 0
        meta = capture.Meta(s.id, s.kind, s.harness, path, capture.session_facts(s))
        try:
            # A dry run makes the trees (no commit) and judges them as the real run
            # does, every refusal below included.
            # A submodule's own state is left out, as a checkpoint leaves it
            # (`_check_submodules`: never touched).
            cap = capture.capture(path, v.git_dir, None if ctx.dry_run else meta,
                                  write=not ctx.dry_run, st=st, walked=walked,
                                  leave_nested=True, leave_submodules=True)
        except capture.CannotCapture as exc:
            raise _unrecordable(exc) from None
        state = history.current_state(path, cap)  # what this run replaces, worked out once
        if _holds_entry(path, entry, state, cap, walked, st.left_out):
            # Compared before any append: the state this run would replace is the
            # entry itself, and an entry added for it would renumber the others.
            if ctx.dry_run:
                return Outcome(s.id, Action.RESTORE, Status.NOTHING,
                               f"{path} already holds entry {entry.number} "
                               f"({entry.save[:12]}): nothing would change", facts(s))
            ctx.log("restore", s.id, "at-nothing", entry=entry.commit)
            _unmark(ctx.store.dir, s.id)  # a killed run that had finished its work
            return Outcome(s.id, Action.RESTORE, Status.NOTHING,
                           f"{path} already holds entry {entry.number} ({entry.save[:12]}): "
                           "nothing changed and no entry was added" + _lacked(ctx, s, entry),
                           facts(s, entry=entry.commit, preserved_commit=entry.save,
                                 entry_number=entry.number, replaced=None,
                                 replaced_number=None, history_entry=None))
        # Before the append: a refusal adds nothing.
        _check_mounts(path)
        _check_nested(path, entry, st.left_out)
        _check_submodules(path, entry, cap)
        unseen_ignored, unseen = _unseen(path, walked, cap, st.left_out)
        left_ignored = cap.ignored + unseen_ignored
        # Ignored files holding the entry's own bytes at its paths: written over.
        own = _check_in_the_way(path, entry, left_ignored, cap.unstorable, unseen)
        # A killed run of this command appended the state it replaced, then changed
        # part of the worktree: what is here now is its half-done work, unless the
        # user wrote since (`_new_work`), which is recorded as a normal run does.
        resumed, earlier = _resumption(ctx.store.dir, path, s.id, entry, cap, state,
                                       keep=ctx.dry_run)
        if ctx.dry_run:
            moving = f", which would {_move(st.branch, st.head, entry.head, left)}" \
                if st.head != entry.head else ""
            # What the real run names once it is done, judged before it.
            would = facts(s)
            staying = [p for p in _untracked_after(path, v.git_dir, entry, walked, left_ignored)
                       if p not in own]
            if staying:
                would["left_in_place"] = staying
            if cap.unstorable:
                would["unstorable"] = cap.unstorable
            if st.left_out:
                would["left_out"] = st.left_out
            if cap.submodules_left:
                would["submodules_left_out"] = sorted(cap.submodules_left)
            notes = _left_notes(staying, cap.unstorable, st.left_out, cap.submodules_left)
            if resumed is not None:
                first = (f"would go on with the --at that was interrupted (the state before it "
                         f"is entry {resumed.number} ({resumed.save[:12]}) of the history, "
                         "recorded then; nothing would be recorded for the half-done "
                         "worktree), bringing")
            elif earlier is not None:
                first = (f"would record the current state (written since the --at that was "
                         f"interrupted, whose state before it is entry {earlier.number} "
                         f"({earlier.save[:12]})), then bring")
            else:
                first = "would record the current state, then bring"
            return with_warnings(Outcome(
                s.id, Action.RESTORE, Status.OK, f"{first} "
                f"{path} to entry {entry.number} ({entry.save[:12]}){moving}"
                + "".join(f"; {n}" for n in notes), would), notes)
        entry_untracked = query.ls_tree_paths(path, entry.untracked_tree) \
            if entry.untracked_tree else []
        ahead = _entry_paths(path, entry, entry_untracked)
        flags = query.index_flags(path)
        if resumed is not None:
            # Only the killed run's half-done work is here (nothing of it is in no
            # entry): the entry it appended is still what undoes this one. The
            # half-done capture is only logged (its commit stays readable until git gc).
            before = None
            undo: history.Entry | None = resumed
            ctx.log("restore", s.id, "at-resumed", replaced=resumed.save, half_done=cap.commit)
        else:
            before = history.append_capture(path, s.id, cap, meta, "restore")
            undo = history.newest(path, s.id)
            if earlier is not None:
                # Written since the killed run: recorded like any state --at replaces.
                ctx.log("restore", s.id, "at-resumed", replaced=earlier.save,
                        recorded=before.commit if before else None)
        assert undo is not None  # the capture was appended, or the newest holds it
        # The numbers after the append (a checkpoint takes no session lock: read them).
        listed = history.entries(path, s.id)
        numbers = {e.commit: e.number for e in listed}
        number = numbers.get(entry.commit, entry.number + (1 if before else 0))
        undo_number = numbers.get(undo.commit, 1)
        undo_name = history.at_name(undo, listed)
        data = facts(s, entry=entry.commit, preserved_commit=entry.save, entry_number=number,
                     replaced=undo.save, replaced_number=undo_number,
                     history_entry=before.commit if before else None)
        also = ""
        if earlier is not None and earlier.commit != undo.commit:
            earlier_number = numbers.get(earlier.commit, earlier.number + (1 if before else 0))
            earlier_name = history.at_name(earlier, listed)
            data["before_interrupted"] = earlier.save
            data["before_interrupted_number"] = earlier_number
            also = (f"; the state before the --at that was interrupted is entry "
                    f"{earlier_number} ({earlier.save[:12]}): git ao-restore {s.id} --at "
                    f"{earlier_name[:12]} brings it back")
        if st.left_out:
            data["left_out"] = st.left_out
        if cap.submodules_left:
            data["submodules_left_out"] = sorted(cap.submodules_left)
        moved = ""
        if st.head != entry.head:
            data["branch_moved"] = {"branch": st.branch, "from": st.head, "to": entry.head,
                                    "left": left, "kept_by": undo.save}
            moved = "; " + _move(st.branch, st.head, entry.head, left, undo_number, s.id,
                                 done=True)
        label = f"entry {number} ({entry.save[:12]})"
        ctx.log("restore", s.id, "at-start", entry=entry.commit, replaced=undo.save)
        # The untracked files the entry's paths would meet go first, and the untracked
        # .gitignore files (their rules are not the entry's); the others once the
        # entry is in place, where its ignore rules decide: one they ignore is left
        # as it is, as every ignored file is.
        meeting = _meets(cap.untracked, ahead)
        met = set(meeting)
        meeting += [p for p in cap.untracked if p not in met
                    and p.rpartition("/")[2] == ".gitignore"]
        meeting += own
        # A write that lands after the capture and before the reset would be in no
        # entry and gone: anything written since the walk refuses the run, looked for
        # right before the worktree changes, and each file is compared again as it
        # is removed.
        again = walk.walk(path)
        written = walk.changed_since(walked, again)
        if written:
            ctx.log("restore", s.id, "at-written", paths=",".join(written[:5]))
            # The append renumbered the entries: the retry names the entry by commit.
            raise Refused(f"{_listed(written)} changed while the current state was recorded: "
                          f"something is still writing in '{path}'; stop it first (the state "
                          f"recorded is entry {undo_number} of the history; nothing else "
                          f"changed), then retry by the entry's commit, which no later entry "
                          f"renumbers: git ao-restore {s.id} --at "
                          f"{history.at_name(entry, listed)[:12]} (entry {number} now)")
        _mark(ctx.store.dir, s.id, undo.commit, entry.commit)  # a rerun reads it
        try:
            late = _clear_untracked(path, meeting,
                                    local_state.load(cap.private_config).empty_dirs or [], again)
            _unflag(path, flags, cap.config, entry.head,
                    local_state.load(cap.private_config).intent_to_add or [])
            git.reset_hard(path, entry.head)
            crashpoint.hit("restore-at:after-reset")
            wc = local_state.load(entry.private_config)
            problems: list[str] = [f"{_listed(late)} written during the run, kept as written"] \
                if late else []
            if not (entry.changed == 0 and entry.untracked == 0
                    and entry.worktree_tree == entry.index_tree):
                applied = apply.apply(path, entry.save, sparse=wc.sparse_checkout is not None)
                if applied.outcome != "clean":
                    shown = f"; {', '.join(applied.paths[:5])}" if applied.paths else ""
                    problems.append(f"the apply stopped ({applied.outcome}: {applied.detail}"
                                    f"{shown})")
                elif wc.recheckout:
                    apply.recheckout(path, v.git_dir, entry.save)
            in_place: list[str] = []
            rest = set(cap.untracked) - set(meeting)
            if not problems and (rest or left_ignored):
                untracked_now = git.status(path, ignored=False).untracked
                late = _clear_untracked(path, [p for p in untracked_now if p in rest], [], again)
                if late:
                    problems.append(f"{_listed(late)} written during the run, kept as written")
                # Ignored before this run, untracked under the entry's rules: left in place.
                in_place = [p for p in untracked_now if p not in rest
                            and walk.under(p, left_ignored) and p not in own]
            if not problems:
                problems += apply.put_flags(path, wc, fresh=False, leave=cap.submodules_left)
                for rel in wc.empty_dirs or []:
                    try:
                        os.makedirs(os.path.join(path, rel), exist_ok=True)
                    except OSError:
                        problems.append(f"the empty directory {rel} could not be made")
                # Every path but those the run leaves alone: a reset keeps the bits of
                # a file whose content it keeps, and of every directory.
                leave = [*git.status(path).ignored, *left_ignored, *in_place, *cap.unstorable]
                problems += [f"the permission bits of {p} could not be set"
                             for p in local_state.settle_modes(path, wc, leave, own)]
            save = Save(s.id, s.common_dir, path,
                        BranchName(entry.branch) if entry.branch else None,
                        ObjectId(entry.head), entry.branch is None, "", ObjectId(entry.save),
                        entry.private_config, now_ns())
            if not problems and not holds(path, v.git_dir, save,
                                          in_place + cap.unstorable + st.left_out,
                                          leave_submodules=bool(cap.submodules_left)):
                problems.append("the worktree does not hold exactly the entry")
            if in_place:
                data["left_in_place"] = in_place
            undo_hint = f"entry {undo_number} ({undo.save[:12]}): git ao-restore {s.id} --at " \
                f"{undo_name[:12]} undoes it{also}"
            ctx.log("restore", s.id, "at-done" if not problems else "at-attention",
                    entry=entry.commit, replaced=undo.save, problems="; ".join(problems) or None)
            _unmark(ctx.store.dir, s.id)
            if problems:
                return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                               f"{path} brought to {label}{moved}, but {'; '.join(problems)}; the "
                               f"state it replaced is {undo_hint}", data)
            if cap.unstorable:
                data["unstorable"] = cap.unstorable
            notes = _left_notes(in_place, cap.unstorable, st.left_out, cap.submodules_left)
            kept = "".join(f"; {n}" for n in notes)
            return with_warnings(Outcome(
                s.id, Action.RESTORE, Status.OK,
                f"{path} is at {label}{moved}{kept}; the state it replaced is {undo_hint}"
                f"{_lacked(ctx, s, entry)}", data), notes)
        except (AoError, OSError) as exc:
            # Stopped part way (a directory made immutable or read-only, a full disk):
            # say what changed and what brings the state before the run back.
            return _stopped(ctx, s, path, v.git_dir, exc, label, undo, undo_number,
                            undo_name, entry, resumed is not None, data)


def _stopped(ctx: Context, s: Session, path: str, git_dir: str, exc: AoError | OSError,
             label: str, undo: history.Entry, undo_number: int, undo_name: str,
             entry: history.Entry, resumed: bool, data: OutcomeData) -> Outcome:
    """The Outcome of a run that failed (`exc`) once it began to change the
    worktree. The worktree is read again: when it still holds the state recorded
    first (`undo`, entry `undo_number`), nothing changed and the mark goes; else
    the mark stays, naming that state as the one that undoes the run, with what
    the worktree holds now, so a rerun appends nothing for this half-done state
    and appends any other (a change made after this run) as it would."""
    if isinstance(exc, OSError):
        what = f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    else:
        what = gitlock.explain(str(exc))  # a lock file: held or stale, as guarded says
    ctx.log("restore", s.id, "at-failed", entry=entry.commit, replaced=undo.save, error=what)
    try:
        # Read as the run read it (the walk first: modes), a nested repository left out.
        walked = walk.walk(path)
        st = capture.inspect(path, git_dir, leave_nested=True)
        now: history.State | None = history.current_state(path, capture.capture(
            path, git_dir, None, write=False, st=st, walked=walked, leave_nested=True,
            leave_submodules=True))
    except (AoError, OSError):
        now = None  # kept as a kill's mark: the next run takes this state as half-done
    first = "recorded before this run" if resumed else "recorded first"
    if now is not None and undo.same_state(now):
        _unmark(ctx.store.dir, s.id)
        return Outcome(s.id, Action.RESTORE, Status.FAILED,
                       f"{what}; nothing in the worktree changed: its state is entry "
                       f"{undo_number} ({undo.save[:12]}) of the history, {first}; fix the "
                       f"cause and run the command again", data)
    if now is not None:
        _mark(ctx.store.dir, s.id, undo.commit, entry.commit, history.digest(now))
    return Outcome(s.id, Action.RESTORE, Status.FAILED,
                   f"{what}; the worktree is part way to {label}: its state before the run "
                   f"is entry {undo_number} ({undo.save[:12]}) of the history, {first}; fix "
                   f"the cause, then git ao-restore {s.id} --at {undo_name[:12]} brings that "
                   f"state back, or run the command again", data)


def _left_notes(in_place: Sequence[str], unstorable: Sequence[str],
                left_out: Sequence[str] = (), subs: dict[str, str] | None = None
                ) -> list[str]:
    """What --at leaves in place that the entry does not hold, one line each: the
    nested repositories and worktrees the state recorded first leaves out, named
    as a checkpoint names them (`left_out`: never touched), the submodules whose
    own state it leaves out (`subs`, {path: what of it}: never touched either,
    their checked-out commit is the entry's, `_check_submodules`), the files ignored
    before that the entry's rules do not ignore (`in_place`), and the untracked
    names git will not store (`unstorable`: in no entry, so never removed, since
    the undo could not bring them back)."""
    notes = []
    if left_out:
        shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        notes.append(f"{len(left_out)} nested repository or worktree path(s) left out of "
                     f"the save: {shown}")
    if subs:
        named = [f"{p} ({why})" for p, why in sorted(subs.items())]
        shown = ", ".join(named[:5]) + (", ..." if len(named) > 5 else "")
        notes.append(f"{len(subs)} submodule(s) saved only as the commit each has checked "
                     f"out, their own state left out of the save and left as it is: {shown}")
    if in_place:
        notes.append(f"{_listed(list(in_place))}, ignored before, left in place (untracked "
                     "under the entry's ignore rules)")
    if unstorable:
        notes.append(f"{_listed(list(unstorable))}, whose names git will not store, left in "
                     "place")
    return notes


def _other_branch(s: Session, path: str, entry: history.Entry, branch: str | None, *,
                  unborn: bool = False) -> Refused:
    """The refusal of a HEAD on `branch` (None: detached), not the entry's, naming
    what puts it back. unborn: `branch` may have no commit yet."""
    now = f"branch '{branch}'" if branch else "a detached HEAD"
    if unborn and branch and not query.branch_exists(s.common_dir, branch):
        now += " (no commit yet)"
    was = f"branch '{entry.branch}'" if entry.branch else "a detached HEAD"
    return Refused(f"HEAD is on {now}, entry {entry.number} was taken on {was}: "
                   f"{_switch_back(s.common_dir, path, entry)}, then run it again "
                   "(nothing changed)")


def _switch_back(common_dir: str, path: str, entry: history.Entry) -> str:
    """The command that puts HEAD back where `entry` was taken, as it will work now:
    the entry's branch when it exists and no other worktree has it, the branch made
    again at the entry's HEAD when it is gone, the entry's HEAD detached."""
    if entry.branch is None:
        return f"git switch --detach {entry.head[:12]}"
    if not query.branch_exists(common_dir, entry.branch):
        return (f"branch '{entry.branch}' is gone: git switch -c {entry.branch} "
                f"{entry.head[:12]} makes it again at the entry's HEAD")
    for e in git.worktree_list(common_dir):
        if e.branch == f"refs/heads/{entry.branch}" and not worktree.same_path(e.path, path):
            return (f"branch '{entry.branch}' is checked out in {e.path}: switch that "
                    f"worktree to another branch, then git switch {entry.branch}")
    return f"git switch {entry.branch}"


def _lacked(ctx: Context, s: Session, entry: history.Entry) -> str:
    """When `entry` holds the earlier capture the session's save lacked
    (`Save.holds_less_than`), the record stops naming it (list and show no longer
    say it); returns the clause that says so, else ""."""
    earlier = s.save.holds_less_than if s.save is not None else None
    if not earlier:
        return ""
    if entry.save != earlier:
        try:
            trees = capture.saved_trees(s.common_dir, earlier)
        except AoError:
            return ""
        if trees != entry.saved_trees():
            return ""
    ctx.store.mark_holds_less(s.id, None)
    ctx.log("restore", s.id, "holds-less-ended", entry=entry.commit)
    return "; that is the state the last save lacked, back now"
def _untracked_after(path: str, git_dir: str, entry: history.Entry, walked: walk.Walk,
                     ignored: Sequence[str]) -> list[str]:
    """The files ignored now (`ignored`: 'dir/' for a whole directory; --at leaves
    them in place) that the entry's ignore rules do not ignore: what the real run
    names as left in place (`left_in_place`), judged before anything changes. The
    rules after the run are the repository's and the `.gitignore` files of the
    entry's worktree and untracked trees and of those left in place, written into
    a temporary directory outside the repository (removed after) for `git
    check-ignore`. Raises GitError, OSError."""
    import tempfile  # here: only a dry run judges this beforehand
    dirs = tuple(p for p in ignored if p.endswith("/"))
    named = {p for p in ignored if not p.endswith("/")}
    files = [rel for rel, e in walked.entries.items()
             if e.kind != "other" and (rel in named or rel.startswith(dirs))]
    if not files:
        return []
    rules: dict[str, bytes] = {}
    for rel in files:
        if rel.rpartition("/")[2] == ".gitignore" and walked.entries[rel].kind == "file":
            with open(os.path.join(path, rel), "rb") as fh:
                rules[rel] = fh.read()
    for tree in (entry.worktree_tree, entry.untracked_tree):
        for rel, (mode, oid) in (query.ls_tree_entries(path, tree) if tree else {}).items():
            if rel.rpartition("/")[2] == ".gitignore" and mode in ("100644", "100755"):
                rules[rel] = query.blob_bytes(path, oid)
    with tempfile.TemporaryDirectory(prefix="git-ao-rules-") as scratch:
        for rel, text in rules.items():
            full = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as fh:
                fh.write(text)
        still = query.check_ignore_by_rules_in(git_dir, scratch, files)
    return sorted(p for p in files if p not in still)


def _unrecordable(exc: capture.CannotCapture) -> Refused:
    """The refusal of a run whose current state cannot be recorded as an entry first.
    A file that would not come back byte for byte is one by design: a checkpoint
    saves it as git checks it out, as it stays in the worktree, but --at replaces
    it, and the entry that undoes the run must give it back as it is."""
    why = "; --at replaces such files, and the entry recording the state it replaces " \
        "would hold them only as git checks them out: no undo could give their bytes " \
        "back" if isinstance(exc, capture.Inexact) else ""
    return Refused(f"the current state cannot be recorded first: {exc}{why} (nothing changed)")


def _move(branch: str | None, old: str, new: str, left: int, kept_by: int = 1,
          session_id: str = "", done: bool = False) -> str:
    """The words for HEAD (its branch, or a detached HEAD) moving from `old` to `new`,
    leaving `left` commits on no branch or tag, which history entry `kept_by` keeps."""
    what = f"branch '{branch}'" if branch else "the detached HEAD"
    line = f"{what} moved" if done else f"move {what}"
    line += f" from {old[:12]} to {new[:12]} (git reset --hard)"
    if not left:
        return line
    them = "it" if left == 1 else "them"
    where = f"entry {kept_by} of the history ({history.history_ref(session_id)})" if done \
        else "the entry of the replaced state"
    return (f"{line}, leaving {left} commit{'' if left == 1 else 's'} on no branch: {where} "
            f"keeps {them}, git branch rescue {old[:12]} gets {them} back")


def _check_working(path: str) -> None:
    """Raise Refused when a process other than this command and its own shell works
    in the worktree (`processes.find`: its working directory, an open file or its
    executable there): --at rewrites files under it, and what it writes between the
    capture and the reset would be in no entry."""
    found = processes.find(path)
    if found:
        shown = "; ".join(a.describe() for a in found[:3]) + (
            f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise Refused(f"processes work in '{path}' ({shown}): --at rewrites the worktree "
                      "under them; stop them first (nothing changed)")


def _unflag(path: str, flags: IndexFlags, conf: dict[str, str], head: str,
            intent: Sequence[str]) -> None:
    """Clear the index flags that make `git reset --hard` pass a file by (assume-
    unchanged; skip-worktree outside a sparse checkout, whose patterns own it), so
    the reset writes every tracked file, and take out of the index the
    intent-to-add entries `intent` at a path the entry's HEAD `head` has: the
    reset keeps an entry whose blob and mode are the tree's (an empty file) with
    its intent-to-add flag, which leaves the path deleted from the index though
    HEAD has it (`git status` shows "DA"), and writes those fresh from the tree.
    The entry's own flags are put back after. flags: `query.index_flags` of the
    worktree, read before the run changed it. Raises GitError."""
    index.set_index_flag(path, flags.assume_unchanged, "--no-assume-unchanged")
    if conf.get("core.sparsecheckout") != "true":
        index.set_index_flag(path, flags.skip_worktree, "--no-skip-worktree")
    if intent:
        index.set_index_flag(path, sorted(query.tree_entries_at(path, head, intent)),
                             "--force-remove")


def _check_output(path: str, walked: walk.Walk) -> None:
    """Raise Refused when this command's standard output or error is a file inside
    the worktree (`git ao-restore --at 2 >> notes.txt`): --at would remove it
    (it is saved in the replaced state) and write the outcome into a file that is
    gone."""
    try:
        dev = os.lstat(path).st_dev
    except OSError:
        return
    inodes = {e.ino: rel for rel, e in walked.entries.items() if e.kind == "file"}
    for fd, name in ((1, "standard output"), (2, "standard error")):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_dev == dev and st.st_ino in inodes:
            raise Refused(f"the {name} of this command is '{inodes[st.st_ino]}' inside the "
                          "worktree, which --at rewrites; send it elsewhere (nothing changed)")


def _unseen(path: str, walked: walk.Walk, cap: capture.Capture, left_out: Sequence[str] = ()
            ) -> tuple[list[str], list[str]]:
    """What the walk found that the capture's `git status` listed nowhere (not in
    the index, not untracked, not ignored as status said), and so no entry holds
    and --at leaves where it is. Status never enters a directory standing where
    the index has a gitlink, nor, with `--ignored=matching`, one an ignore rule
    matches where the index has a file or symbolic link (a tracked file deleted
    and an ignored directory made in its place); it lists no FIFO or socket.
    Returns (those an ignore rule covers, the others); a repository nested there
    (a directory holding `.git`) is named once, as 'dir/'. left_out: the nested
    repositories status listed ('dir/'), which the capture left out and
    `_check_nested` judges. Raises GitError."""
    modes = query.index_modes(path)
    ign_files = {p for p in cap.ignored if not p.endswith("/")}
    ign_dirs = tuple(p for p in cap.ignored if p.endswith("/"))
    known = set(cap.untracked) | set(cap.unstorable) | set(cap.filter_failed) | set(left_out)

    def seen(rel: str) -> bool:
        return rel in modes or rel in known or rel in ign_files or rel.startswith(ign_dirs)

    outer = [n for n in walked.nested if not any(n.startswith(m + "/") for m in walked.nested)]
    found = [n + "/" for n in outer if not seen(n) and not seen(n + "/")]
    inside = tuple(n + "/" for n in outer)
    found += [rel for rel in walked.entries if not rel.startswith(inside) and not seen(rel)]
    found = [p for p in found if os.path.lexists(os.path.join(path, p.rstrip("/")))]
    if not found:
        return [], []
    # git check-ignore stops at a path inside a gitlink ("is in submodule"): those
    # are asked of no rule.
    links = tuple(p + "/" for p, mode in modes.items() if mode == "160000")
    ask = [p for p in found if not p.startswith(links)]
    try:
        ignored = query.check_ignore(path, ask) if ask else set()
    except GitError:
        ignored = set()
    return [p for p in found if p in ignored], [p for p in found if p not in ignored]


def _check_in_the_way(path: str, entry: history.Entry, ignored: list[str],
                      unstorable: list[str], unseen: Sequence[str] = ()) -> list[str]:
    """Raise Refused when a path --at leaves where it is (an `ignored` one, which it
    never touches; an untracked one whose name git will not store, which is in no
    entry: `unstorable`; one git status does not show: `unseen`, see `_unseen`)
    stands where the entry writes: on one of its files, as a directory holding it
    where the entry has a file, or as a file where the entry has a directory or a
    gitlink. `git reset --hard` deletes what is in the way of its files, with
    everything a directory there holds, and the apply stops part way on it: so
    this is judged before anything changes, in a dry run too. The entry's files
    are those of its HEAD (the reset writes them all) and of its index, worktree
    and untracked trees. A directory where the entry has a gitlink is left as it
    is (git checks a gitlink out into the directory there). An ignored file that
    holds the entry's own file there already (`_holding_entry_bytes`) is in no way:
    those are returned, for the run to write over."""
    left = {p.rstrip("/"): (p.endswith("/"), "ignored") for p in ignored}
    left.update({p: (False, "unstorable") for p in unstorable})
    left.update({p.rstrip("/"): (p.endswith("/"), "unseen") for p in unseen})
    if not left:
        return []
    trees = _entry_trees(entry)
    kinds = _entry_kinds(path, entry, left)

    def file_at(rel: str) -> bool:  # a file or symbolic link of the entry
        return "blob" in kinds.get(rel, set())

    def link_at(rel: str) -> bool:  # a gitlink of the entry
        return "commit" in kinds.get(rel, set())

    n = entry.number
    clashes: dict[str, str] = {}  # the entry's path -> what stands in its way
    whats: dict[str, str] = {}  # the entry's path -> the kind of path in its way
    own: dict[str, str] = {}  # the entry's path -> an ignored file standing on it
    for rel, (is_dir, what) in sorted(left.items()):
        kind = "directory" if is_dir else "file"
        held = {"ignored": "ignored", "unstorable": "whose name git will not store",
                "unseen": "which git status does not show"}[what]
        here = f"a {kind} ignored here" if what == "ignored" else f"a {kind} here {held}"
        parts = rel.split("/")
        holder = next(("/".join(parts[:i]) for i in range(1, len(parts))
                       if file_at("/".join(parts[:i]))), None)
        if holder is not None:
            if holder not in clashes:
                clashes[holder] = f"{holder} of entry {n} would land on a directory here " \
                    f"that holds {rel}{'/' if is_dir else ''}, {held}"
                whats[holder] = what
        elif file_at(rel) or (link_at(rel) and not is_dir):
            if rel not in clashes:
                clashes[rel] = f"{rel} of entry {n} would land on {here}"
                whats[rel] = what
                if what == "ignored" and not is_dir:
                    own[rel] = rel
        elif "tree" in kinds.get(rel, set()) and not is_dir:
            if rel not in clashes:
                clashes[rel] = f"entry {n} has a directory at {rel}, {here}"
                whats[rel] = what
        elif "tree" in kinds.get(rel, set()):
            # The entry's files inside a directory ignored here: what is already on
            # their way is ignored too.
            for tree in trees:
                for f in query.ls_tree_paths(path, tree, under=rel):
                    stop = _standing(path, rel, f)
                    if stop is not None and f not in clashes:
                        what_is = "a directory" if os.path.isdir(os.path.join(path, stop)) \
                            and not os.path.islink(os.path.join(path, stop)) else "a file"
                        clashes[f] = f"{f} of entry {n} would land " + (
                            f"on {what_is} ignored here" if stop == f
                            else f"under {stop}, {what_is} ignored here")
                        whats[f] = what
                        if stop == f and what == "ignored" and what_is == "a file":
                            own[f] = f
    same = _holding_entry_bytes(path, entry, sorted(own))
    for rel in same:
        del clashes[rel]
    if clashes:
        said = list(clashes.values())
        shown = "; ".join(said[:3]) + (f"; and {len(said) - 3} more" if len(said) > 3 else "")
        why = {whats[c] for c in clashes}
        rules = [w for c, w in _LEFT_RULES.items() if c in why]
        them = "it" if len(said) == 1 else "them"
        raise Refused(f"{shown}, and {' and '.join(rules)}: move {them} away first "
                      "(nothing changed)")
    return same


def _check_nested_sessions(ctx: Context, s: Session, path: str, nested: Sequence[str]) -> None:
    """Raise Refused when one of the `nested` repositories and worktrees ('dir/',
    relative to `path`) is the worktree of another session: that session is
    preserved first, and restored after."""
    if not nested:
        return
    sessions = session_paths(ctx.store)
    for rel in nested:
        full = os.path.realpath(os.path.join(path, rel.rstrip("/")))
        inner = sessions.get(full)
        if inner is not None and inner != s.id:
            raise Refused(f"session '{inner}' lives in '{full}', nested in this worktree, "
                          f"which the reset could meet: git ao-preserve {inner} first, and "
                          f"git ao-restore {inner} after (nothing changed)")


def _entry_trees(entry: history.Entry) -> list[str]:
    """The entry's HEAD, index, worktree and untracked trees, each once."""
    return list(dict.fromkeys(t for t in (entry.head, entry.index_tree, entry.worktree_tree,
                                          entry.untracked_tree) if t))


def _entry_kinds(path: str, entry: history.Entry, rels: Iterable[str]
                 ) -> dict[str, set[str]]:
    """{path: the kinds ('blob', 'tree', 'commit') the entry's trees hold there} for
    each of `rels` and every directory above it (`query.tree_kinds`, one `git
    ls-tree` per tree)."""
    asked = sorted({"/".join(parts[:i]) for parts in (rel.split("/") for rel in rels)
                    for i in range(1, len(parts) + 1)})
    kinds: dict[str, set[str]] = {}
    for tree in _entry_trees(entry):
        for p, kind in query.tree_kinds(path, tree, asked).items():
            kinds.setdefault(p, set()).add(kind)
    return kinds


def _check_nested(path: str, entry: history.Entry, nested: Sequence[str]) -> None:
    """Raise Refused when the entry writes at or inside one of the `nested`
    repositories and worktrees ('dir/', relative to `path`), which --at leaves
    as they are, as a checkpoint leaves them out: the entry has something at
    that path or below it (in its HEAD, index, worktree or untracked tree, or an
    empty directory below it), or a file or gitlink where a directory holding it
    is. An empty directory of the entry at that very path is the directory that
    is there. Judged before anything changes, in a dry run too."""
    if not nested:
        return
    dirs = [rel.rstrip("/") for rel in nested]
    kinds = _entry_kinds(path, entry, dirs)
    empty = local_state.load(entry.private_config).empty_dirs or []
    n = entry.number
    for d in dirs:
        parts = d.split("/")
        above = next(("/".join(parts[:i]) for i in range(1, len(parts))
                      if kinds.get("/".join(parts[:i]), set()) & {"blob", "commit"}), None)
        if above is not None:
            what = "a submodule" if "commit" in kinds[above] else "a file"
            why = f"entry {n} has {what} at {above}, where a directory here holds it"
        elif d in kinds:
            what = "a directory" if kinds[d] == {"tree"} else \
                "a submodule" if "commit" in kinds[d] else "a file"
            why = f"entry {n} has {what} at {d}"
        elif any(e.startswith(d + "/") for e in empty):
            why = f"entry {n} has an empty directory inside it"
        else:
            continue
        raise Refused(f"{d}/ is a nested repository, which --at leaves as it is, and {why}: "
                      "move it away first (nothing changed)")


# What a private config records of permission bits: `_holds_entry` compares what
# --at would make of them, not how each state happens to write them down.
_MODE_KEYS = ("mode_base", "modes", "dir_modes")


def _holds_entry(path: str, entry: history.Entry, now: history.State,
                 cap: capture.Capture, walked: walk.Walk, left_out: Sequence[str]) -> bool:
    """Does the worktree (`cap`, its state `now`, `walked`) already hold what --at
    restores of the entry? The same HEAD, branch, trees and private config (`Entry.same_state`),
    or all of them but the permission bits as written down, when every file and
    directory --at would give the entry's bits to has them already
    (`local_state.unsettled`). The bits a private config writes down count the
    ignored files too (its base is the most common bits of all), which --at never
    touches: an ignored file left in place, or chmodded, must not make the worktree
    differ from the entry it holds in all --at restores."""
    if entry.same_state(now):
        return True
    if (entry.head, entry.branch, entry.worktree_tree, entry.index_tree,
            entry.untracked_tree) != (now.head, now.branch, now.worktree_tree,
                                      now.index_tree, now.untracked_tree):
        return False
    want, have = local_state.load(entry.private_config), local_state.load(now.private_config)
    for wc in (want, have):
        for key in _MODE_KEYS:
            setattr(wc, key, None)
    if want.to_json() != have.to_json():
        return False
    wc = local_state.load(entry.private_config)
    unseen_ignored, _ = _unseen(path, walked, cap, left_out)
    leave = [*cap.ignored, *unseen_ignored, *cap.unstorable, *left_out]
    return local_state.unsettled(path, wc, leave, walked) == []


def _check_submodules(path: str, entry: history.Entry, cap: capture.Capture) -> None:
    """Raise Refused when a submodule whose own state the capture left out
    (`cap.submodules_left`: uncommitted changes, commits or stashes on no remote)
    has another commit checked out than the entry's worktree holds at its path, or
    the entry has no gitlink there. --at never touches inside a submodule (its
    reset does not recurse), so only a submodule already at the entry's commit
    leaves the worktree holding the entry; checking another commit out there is
    the user's to do, with that work. Judged before anything changes, in a dry
    run too."""
    if not cap.submodules_left:
        return
    rels = sorted(cap.submodules_left)
    now = query.tree_entries_at(path, cap.worktree_tree, rels) if cap.worktree_tree else {}
    then = query.tree_entries_at(path, entry.worktree_tree, rels)
    n = entry.number
    for rel in rels:
        have = now.get(rel, ("", ""))[1]
        mode, want = then.get(rel, ("", ""))
        if mode == "160000" and want == have:
            continue
        what = f"entry {n} has {want[:12]} there" if mode == "160000" \
            else f"entry {n} has no submodule there"
        fix = f"check {want[:12]} out inside it (git -C {rel} checkout {want[:12]}, its " \
            "changes committed or stashed there first), then run it again" \
            if mode == "160000" else "commit and push its work inside it first"
        raise Refused(f"submodule '{rel}' has {cap.submodules_left[rel]}, which --at leaves "
                      f"as it is, and {have[:12] or 'no commit'} checked out where {what}: "
                      f"{fix} (nothing changed)")


def _holding_entry_bytes(path: str, entry: history.Entry, rels: Sequence[str]) -> list[str]:
    """Those of the ignored files `rels` that already hold what the entry leaves at
    their path: the same kind (a file with the same executable bit, or a symbolic
    link) and the bytes a checkout of the entry's worktree or untracked tree writes
    there. Written over, they lose nothing (an `--at` to an entry whose rules ignore
    an untracked file leaves it, and its undo writes that file back)."""
    if not rels:
        return []
    final: dict[str, tuple[str, str]] = {}
    for tree in (entry.untracked_tree, entry.worktree_tree):
        if tree:
            final.update(query.tree_entries_at(path, tree, rels))
    out = []
    for rel in rels:
        mode, oid = final.get(rel, ("", ""))
        full = os.path.join(path, rel)
        try:
            st = os.lstat(full)
            if mode == "120000":
                same = stat.S_ISLNK(st.st_mode) and \
                    os.fsencode(os.readlink(full)) == query.blob_bytes(path, oid)
            elif mode in ("100644", "100755"):
                same = stat.S_ISREG(st.st_mode) and \
                    bool(st.st_mode & 0o100) == (mode == "100755") and \
                    _read(full) == query.checkout_bytes(path, oid, rel)
            else:
                same = False
        except (OSError, GitError):
            same = False
        if same:
            out.append(rel)
    return out


def _read(full: str) -> bytes:
    with open(full, "rb") as fh:
        return fh.read()


# Why --at leaves in place each kind of path `_check_in_the_way` names.
_LEFT_RULES = {
    "ignored": "--at never touches an ignored file",
    "unstorable": "--at leaves such a name in place (no entry holds it)",
    "unseen": "--at leaves what git status does not show in place (no entry holds it)",
}


def _standing(path: str, top: str, rel: str) -> str | None:
    """What stands on the way to writing the file `rel` below the directory `top`
    (both relative to `path`): `rel` itself when something is there, else the
    nearest directory on the way that is not one (a file or a symbolic link), else
    None."""
    parts = rel.split("/")
    for i in range(top.count("/") + 2, len(parts) + 1):
        sub = "/".join(parts[:i])
        full = os.path.join(path, sub)
        if not os.path.lexists(full):
            return None
        if sub == rel or os.path.islink(full) or not os.path.isdir(full):
            return sub
    return None


def _listed(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _entry_paths(path: str, entry: history.Entry, untracked: list[str]) -> set[str]:
    """The paths an entry writes beyond its HEAD's tree (those `git reset --hard`
    does not clear the way for): its changed tracked paths and its `untracked`
    files."""
    out = set(query.changed_paths(path, entry.head, entry.worktree_tree))
    out.update(query.changed_paths(path, entry.head, entry.index_tree))
    out.update(untracked)
    return out


def _meets(untracked: list[str], paths: set[str]) -> list[str]:
    """Those of `untracked` at one of `paths`, inside one, or holding one."""
    dirs = {p[:i] for p in paths for i, c in enumerate(p) if c == "/"}
    out = []
    for p in untracked:
        parents = {p[:i] for i, c in enumerate(p) if c == "/"}
        if p in paths or p in dirs or parents & paths:
            out.append(p)
    return out


def _check_mounts(path: str) -> None:
    """Raise Refused when a mount point lies inside the worktree (`walk.mounts_inside`:
    another file system, or a bind mount of the same one, of a directory or a
    file): the hard reset, the apply and the clearing of untracked files would
    remove across it, and nothing is removed across a mount."""
    try:
        inside = walk.mounts_inside(path)
    except OSError as exc:
        raise Refused(f"'{path}' cannot be read ({exc.strerror}), so it is not known to hold "
                      "no mount point; nothing changed") from None
    if inside:
        raise Refused(f"'{inside[0]}' is a mount point inside the worktree; nothing is removed "
                      "across a mount (nothing changed)")


def _mark_path(data_dir: str, session_id: str) -> str:
    return history.at_mark_path(data_dir, session_id)


def _mark(data_dir: str, session_id: str, undo_entry: str, target: str,
          half_done: str = "") -> None:
    """Say, before the worktree changes, that a run is under way whose replaced
    state is the history entry commit `undo_entry` and whose target is the entry
    commit `target`; half_done: once a run failed part way, the `history.digest`
    of the state it left. Raises OSError."""
    os.makedirs(os.path.dirname(_mark_path(data_dir, session_id)), exist_ok=True)
    tmp = _mark_path(data_dir, session_id) + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(f"{undo_entry} {target} {half_done}".rstrip() + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, _mark_path(data_dir, session_id))


def _unmark(data_dir: str, session_id: str) -> None:
    try:
        os.unlink(_mark_path(data_dir, session_id))
    except FileNotFoundError:
        pass


def _resumption(data_dir: str, path: str, session_id: str, entry: history.Entry,
                cap: capture.Capture, now: history.State, *, keep: bool = False
                ) -> tuple[history.Entry | None, history.Entry | None]:
    """(resumed, earlier) for a run to `entry` whose current state is `cap` (`now`). When a
    killed or failed run of this command left its mark (`_interrupted`): resumed is
    the entry it appended (the state before it), which still undoes this run, when
    the worktree holds only that run's work (the digest of what a failed run left,
    or, after a kill, nothing `_new_work` finds); else earlier is that entry, and
    the current state, holding what was written since, is appended as a normal run
    appends it. What the killed run left is judged against the entry it was
    bringing back (`entry` when that one is gone), whatever this run brings back.
    keep: leave a stale mark (a dry run changes nothing)."""
    top, aim, half_done = _interrupted(data_dir, path, session_id, now, keep=keep)
    if top is None:
        return None, None
    if half_done or not _new_work(path, top, aim or entry, now, cap.private_config):
        return top, None
    return None, top


def _new_work(path: str, before: history.Entry, target: history.Entry, now: history.State,
              private_config: str | None) -> bool:
    """Does the state `now`, found after a run to `target` was killed, hold what
    neither `before` (the state that run replaced) nor `target` holds: another
    HEAD, a file (staged, in the worktree or untracked) whose mode and content
    neither has at its path, or an empty directory neither records? A kill leaves
    the worktree part way between the two: each file is one of theirs. Anything
    else was written after the kill, and a state holding it must be in an entry
    before the run replaces it. Raises GitError."""
    if now.head not in (before.head, target.head):
        return True
    known: dict[str, set[tuple[str, str]]] = {}
    for e in (before, target):
        for tree in dict.fromkeys(t for t in (e.head, e.index_tree, e.worktree_tree,
                                              e.untracked_tree) if t):
            for p, blob in query.ls_tree_entries(path, tree).items():
                known.setdefault(p, set()).add(blob)
    for tree in dict.fromkeys(t for t in (now.index_tree, now.worktree_tree,
                                          now.untracked_tree) if t):
        for p, blob in query.ls_tree_entries(path, tree).items():
            if blob not in known.get(p, ()):
                return True
    dirs = {d for e in (before, target)
            for d in local_state.load(e.private_config).empty_dirs or []}
    return any(d not in dirs for d in local_state.load(private_config).empty_dirs or [])


def _interrupted(data_dir: str, path: str, session_id: str, now: history.State, *,
                 keep: bool = False
                 ) -> tuple[history.Entry | None, history.Entry | None, bool]:
    """(the newest history entry, the entry that run was bringing back, whether a
    digest of the half-done state matched)
    when a killed or failed run of this command appended it (its mark is left and
    names it, trigger "restore") and the worktree (`cap`) does not hold that run's
    target (`now`, the worktree's state), else (None, None, False). A mark naming another entry (a checkpoint came
    since) is stale and removed (unless `keep`), and so is the mark of a run that
    failed part way when the worktree no longer holds what that run left (changed
    since by hand: a state of the user's, which the rerun appends)."""
    marked, target, half_done = history.read_at_mark(data_dir, session_id)
    if not marked:
        return None, None, False
    top = history.newest(path, session_id)
    if top is not None and top.commit == marked and top.trigger == "restore":
        try:
            aim = history.find(path, session_id, target)
        except AoError:
            aim = None
        if (aim is None or not aim.same_state(now)) \
                and (not half_done or history.digest(now) == half_done):
            return top, aim, bool(half_done)
    if not keep:
        _unmark(data_dir, session_id)
    return None, None, False


def _clear_untracked(path: str, untracked: list[str], empty_dirs: list[str],
                     seen: walk.Walk) -> list[str]:
    """Remove the untracked files (not ignored) the capture just saved, and the
    directories they leave empty, and the empty directories it recorded (the
    entry makes its own again). Raises Refused before removing anything when a
    mount point lies inside the worktree (`_check_mounts`, checked again here, as
    a mount may have come since). seen: the walk taken right before; a file whose
    stat data differs from it was written since and is kept. Returns those kept."""
    _check_mounts(path)
    kept: list[str] = []
    parents = {os.path.join(path, d) for d in empty_dirs}
    for rel in untracked:
        f = os.path.join(path, rel)
        try:
            if walk.Entry.of(os.lstat(f)) != seen.entries.get(rel):
                kept.append(rel)  # written since `seen`: its bytes are in no entry
                continue
            os.unlink(f)
        except FileNotFoundError:
            pass
        crashpoint.hit("restore-at:clear")
        d = os.path.dirname(f)
        while d != path and d.startswith(path + os.sep):
            parents.add(d)
            d = os.path.dirname(d)
    for d in list(parents):
        while d != path and d.startswith(path + os.sep):
            parents.add(d)
            d = os.path.dirname(d)
    for d in sorted(parents, key=lambda p: -p.count(os.sep)):
        try:
            os.rmdir(d)
        except OSError:
            pass  # not empty: an ignored file or another's work stays
    return kept
