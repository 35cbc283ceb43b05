"""A session's history: every save of it kept, newest first, under one ref.

`refs/ao/history/<id>` points at a chain of small commits, one per entry:

    E  tree: the save's worktree tree        parents: the previous entry (none
                                             for the first), the save W

W is the stash-shaped commit `capture` wrote (git_ao/save/capture.py), so
`git stash show -p --include-untracked <W>` reads every entry, the chain keeps
every save reachable (`git gc` never prunes one), and pushing the ref pushes
them all. E's message carries trailers: the time in nanoseconds, what took the
save (`TRIGGERS`), the counts of changed and untracked paths, HEAD, the branch,
the index and untracked trees, the entry's position from the oldest (`Ao-Seq`,
so the chain is read with one `git log -n`) and the save's private config
(the JSON of `local_state.collect`), so one `git cat-file` of the tip tells an
identical save and a restore needs nothing but the entry.

Appending is one `git update-ref <ref> <new> <old>`: git compares and swaps
under the ref's lock, so a kill leaves the old chain or the new one, never half
an entry, and two appenders at once both land (the loser retries on the new
tip). A save identical to the newest entry (same HEAD, branch, trees and
private config) adds nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass

from git_ao import crashpoint, git
from git_ao.errors import AoError, GitError, utc_time
from git_ao.git import query
from git_ao.git.parse import ObjectId
from git_ao.save import capture

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Sequence

    from git_ao.fs.gone import Gone
    from git_ao.store.records import Session

HISTORY_PREFIX = "refs/ao/history/"
TRIGGERS = ("checkpoint", "preserve", "restore", "timer", "hook")
# Tries of the compare-and-swap before an append gives up (each loses only to
# another append that landed).
APPEND_TRIES = 20

_T_SESSION = "Ao-Session"
_T_TIME = "Ao-Time"
_T_TRIGGER = "Ao-Trigger"
_T_CHANGED = "Ao-Changed"
_T_UNTRACKED = "Ao-Untracked"
_T_HEAD = "Ao-Head"
_T_BRANCH = "Ao-Branch"
_T_INDEX = "Ao-Index-Tree"
_T_UNTRACKED_TREE = "Ao-Untracked-Tree"
_T_SEQ = "Ao-Seq"
_T_LOCAL = capture.LOCAL_TRAILER


def history_ref(session_id: str) -> str:
    """The history ref of a session: refs/ao/history/<id>."""
    return HISTORY_PREFIX + session_id


def drop_command(common_dir: str, session_id: str) -> str:
    """The command that drops a session id's history (`git update-ref -d` of its
    ref in the repository `common_dir`), as a shell reads it back: what forget
    and add print when an id's history outlives its session."""
    import shlex
    return f"git -C {shlex.quote(common_dir)} update-ref -d {history_ref(session_id)}"


@dataclass
class Entry:
    """One entry of a history. number: 1 for the newest. commit: the entry commit
    E; save: the stash-shaped save W. time_ns: when it was taken (wall clock,
    ns). branch None: HEAD was detached. untracked_tree None: no untracked files."""

    number: int
    commit: ObjectId
    save: ObjectId
    time_ns: int
    trigger: str
    changed: int
    untracked: int
    head: str
    branch: str | None
    worktree_tree: str
    index_tree: str
    untracked_tree: str | None
    seq: int
    private_config: str | None

    def same_state(self, other: Entry | State) -> bool:
        """Same HEAD, branch, trees and private config?"""
        return (self.head, self.branch, self.worktree_tree, self.index_tree,
                self.untracked_tree, _norm(self.private_config)) == (
            other.head, other.branch, other.worktree_tree, other.index_tree,
            other.untracked_tree, _norm(other.private_config))

    def saved_trees(self) -> tuple[str, str | None, str | None, str | None]:
        """(HEAD, index tree, worktree tree, untracked tree), as `capture.saved_trees`
        reads them from a save."""
        return self.head, self.index_tree, self.worktree_tree, self.untracked_tree

    def as_json(self) -> dict[str, object]:
        return {"number": self.number, "commit": self.save, "entry": self.commit,
                "time_ns": self.time_ns, "time": utc_time(self.time_ns), "trigger": self.trigger,
                "changed": self.changed, "untracked": self.untracked, "head": self.head,
                "branch": self.branch}


@dataclass
class State:
    """What a save holds, to compare with an entry (see `Entry.same_state`)."""

    head: str
    branch: str | None
    worktree_tree: str
    index_tree: str
    untracked_tree: str | None
    private_config: str | None


def _norm(private_config: str | None) -> str:
    if not private_config:
        return "{}"
    return json.dumps(json.loads(private_config), sort_keys=True, separators=(",", ":"))


def digest(st: State) -> str:
    """A digest of what `st` holds: equal for two states `Entry.same_state` calls the
    same (HEAD, branch, trees and private config)."""
    import hashlib  # here: only a restore --at that stopped part way needs it
    parts = (st.head, st.branch or "", st.worktree_tree, st.index_tree,
             st.untracked_tree or "", _norm(st.private_config))
    return hashlib.sha1("\0".join(parts).encode(), usedforsecurity=False).hexdigest()


def state_of(cap: capture.Capture) -> State:
    """The State a capture holds (its trees must be computed)."""
    assert cap.worktree_tree and cap.index_tree
    return State(cap.head, cap.branch, cap.worktree_tree, cap.index_tree, cap.untracked_tree,
                 cap.private_config)


def current_state(cwd: str, cap: capture.Capture) -> State:
    """The State `cap` holds, its trees HEAD's where the capture computed none (a
    clean worktree, as `capture.ensure_commit` writes it), to compare with an entry
    before anything is appended. Raises GitError."""
    if cap.worktree_tree and cap.index_tree:
        return state_of(cap)
    head_tree = git.trees_of(cwd, [cap.head])[0]
    assert head_tree is not None
    return State(cap.head, cap.branch, cap.worktree_tree or head_tree,
                 cap.index_tree or head_tree, cap.untracked_tree, cap.private_config)


def _message(session_id: str, trigger: str, seq: int, time_ns: int, changed: int,
             untracked: int, st: State) -> str:
    local = _norm(st.private_config)
    lines = [(_T_SESSION, session_id), (_T_TIME, str(time_ns)), (_T_TRIGGER, trigger),
             (_T_CHANGED, str(changed)), (_T_UNTRACKED, str(untracked)), (_T_HEAD, st.head),
             (_T_BRANCH, st.branch or "-"), (_T_INDEX, st.index_tree),
             (_T_UNTRACKED_TREE, st.untracked_tree or "-"), (_T_SEQ, str(seq)),
             (_T_LOCAL, local)]
    body = "\n".join(f"{k}: {v}" for k, v in lines)
    return f"git-ao history of {session_id}: {trigger}\n\n{body}\n"


def _parse(commit: str, tree: str, parents: list[str], message: str, number: int
           ) -> Entry | None:
    """The Entry of an entry commit, None when the commit is no entry."""
    t: dict[str, str] = {}
    for ln in message.splitlines():
        key, sep, value = ln.partition(": ")
        if sep and key.startswith("Ao-"):
            t[key] = value
    try:
        seq = int(t[_T_SEQ])
        save = parents[-1]
        local = t.get(_T_LOCAL, "{}")
        return Entry(number, ObjectId(commit), ObjectId(save), int(t[_T_TIME]), t[_T_TRIGGER],
                     int(t[_T_CHANGED]), int(t[_T_UNTRACKED]), t[_T_HEAD],
                     None if t.get(_T_BRANCH, "-") == "-" else t[_T_BRANCH], tree,
                     t[_T_INDEX], None if t.get(_T_UNTRACKED_TREE, "-") == "-"
                     else t[_T_UNTRACKED_TREE], seq, None if local == "{}" else local)
    except (KeyError, ValueError, IndexError):
        return None


def at_mark_path(data_dir: str, session_id: str) -> str:
    """The mark an `--at` run leaves while it changes the worktree, under the data
    dir (git_ao/restore/at.py writes it): "<entry of the state before the run>
    <target entry> [<digest of what a failed run left>]"."""
    return os.path.join(data_dir, "restore-at", session_id)


def read_at_mark(data_dir: str, session_id: str) -> tuple[str, str, str]:
    """(entry commit of the state before the run, target entry commit, digest of
    what a failed run left or "") from the mark of an --at run that has not
    finished (killed or failed part way), or ("", "", "") when there is none."""
    try:
        with open(at_mark_path(data_dir, session_id)) as fh:
            marked, target, half_done, *_ = (fh.read().split() + ["", "", ""])[:3]
    except (FileNotFoundError, NotADirectoryError):
        return "", "", ""
    return marked, target, half_done


def interrupted_at_hint(data_dir: str, s: Session) -> str:
    """What `git ao show`, `list` and `doctor` say of a live session whose last
    `--at` was killed or failed part way (its mark is left, and the entry it
    appended is still the newest: no checkpoint recorded the worktree since):
    the entry it was bringing back, the entry of the state before it, and the
    commands that finish it or go back; "" for any other."""
    if not s.live or s.pending or not os.path.exists(at_mark_path(data_dir, s.id)) \
            or not os.path.isdir(s.common_dir):
        return ""
    marked, target, _ = read_at_mark(data_dir, s.id)
    listed = entries(s.common_dir, s.id)
    if not listed or listed[0].commit != marked or listed[0].trigger != "restore":
        return ""  # stale: the next --at removes it
    before = listed[0]
    aim = next((e for e in listed if e.commit == target), None)
    to = f"entry {aim.number} ({aim.save[:12]})" if aim else f"entry {target[:12]}"
    again = f"git ao-restore {s.id} --at {at_name(aim, listed)[:12]} again finishes it " \
        "(anything written since is recorded first), or " if aim else ""
    return (f"an --at to {to} was interrupted, its worktree part way there; the state "
            f"before it is entry {before.number} ({before.save[:12]}): {again}"
            f"git ao-restore {s.id} --at {at_name(before, listed)[:12]} goes back to it")


def at_name(e: Entry, listed: Sequence[Entry]) -> str:
    """The commit `git ao-restore --at` is told to name `e` by among the entries
    `listed`: its save, which retention's rewrites keep (git ao-prune writes the
    entries it keeps again, with new commits), unless another entry shares that
    save (the same trees, other private state): then the entry itself."""
    return e.save if sum(x.save == e.save for x in listed) == 1 else e.commit


def newest(cwd: str, session_id: str) -> Entry | None:
    """The newest entry of the session's history (one `git cat-file`), None when it
    has none. Raises GitError when the ref names something unreadable."""
    tip = git.rev_parse(cwd, history_ref(session_id))
    if tip is None:
        return None
    tree, parents, message = query.commit_object(cwd, tip)
    return _parse(tip, tree, parents, message, 1)


def newest_cheaply(common_dir: str, session_id: str) -> Entry | None:
    """`newest`, with no git process when the session has no history ref (read from
    the ref file or `packed-refs`, `query.ref_tip`) or its tip is a loose object.
    Raises GitError when the ref names something unreadable."""
    tip = query.ref_tip(common_dir, history_ref(session_id))
    if tip is None:
        return None
    tree, parents, message = query.commit_object(common_dir, tip)
    return _parse(tip, tree, parents, message, 1)


def newest_note(common_dir: str, session_id: str, *, then: str = "") -> str:
    """For an outcome that says nothing was saved: one clause naming the newest
    history entry that holds changes, its time and the command that brings it back
    (`then` goes before it: "after git ao-restore ID, " for a session still
    pending); "" when there is none or the history cannot be read."""
    try:
        top = newest_cheaply(common_dir, session_id)
    except AoError:
        return ""
    if top is None or not (top.changed or top.untracked):
        return ""  # a clean entry: a checkout of the branch already brings it back
    return (f"its newest history entry ({utc_time(top.time_ns)}, {top.trigger}: "
            f"{top.changed} changed, {top.untracked} untracked) holds work: "
            f"{then}git ao-restore {session_id} --at 1 brings it back")


def gone_advice(gone: Gone, s: Session, others: Sequence[Session] = ()) -> str:
    """`gone.advice(s)`, naming the newest history entry that holds work when no
    preserve ref holds the session's last checkpoint. others: see
    gone.repo_gone_advice."""
    return gone.advice(s, lambda: newest_note(s.common_dir, s.id, then="after those, "),
                       others)


class Unread:
    """The newest entry not read yet: `add` reads it (`newest`)."""


UNREAD = Unread()


def newest_of(refs: dict[str, git.RefRead] | None, session_id: str) -> Entry | None | Unread:
    """The newest entry as `git.read_refs` read the history ref with the others: None
    when the ref does not exist, UNREAD when it could not be read that way or names
    no entry (`add` then reads it as `newest` does)."""
    if refs is None:
        return UNREAD
    got = refs.get(history_ref(session_id))
    if got is None:
        return None
    entry = _parse(got.oid, got.tree, got.parents, got.message, 1) if got.tree else None
    return UNREAD if entry is None else entry


def entries(cwd: str, session_id: str) -> list[Entry]:
    """Every entry, newest first, numbered from 1 (`git cat-file` of the tip, then
    one `git log --first-parent -n <seq>`). [] when the session has no history."""
    top = newest(cwd, session_id)
    if top is None:
        return []
    out = []
    for n, (commit, tree, parents, message) in enumerate(
            query.first_parent_log(cwd, top.commit, top.seq), start=1):
        e = _parse(commit, tree, parents, message, n)
        if e is None:
            break
        out.append(e)
        if e.seq <= 1:
            break
    return out


def holding(cwd: str, session_id: str, save: str) -> Entry | None:
    """The newest entry whose save is `save`, else the newest holding the same state
    (HEAD, index, worktree and untracked trees: a save identical to the newest entry
    adds none, so another entry holds it); None when none does. Raises GitError."""
    found = entries(cwd, session_id)
    for e in found:
        if e.save == save:
            return e
    if not found:
        return None
    trees = capture.saved_trees(cwd, save)
    for e in found:
        if e.saved_trees() == trees:
            return e
    return None


def first_entry(worktree: str, session_id: str) -> str:
    """What takes a session's first history entry: `git ao checkpoint ID`, or a first
    commit when the worktree's branch is unborn (a checkpoint refuses it)."""
    try:
        unborn = os.path.isdir(worktree) and git.rev_parse(worktree, "HEAD") is None
    except AoError:
        unborn = False
    if unborn:
        return f"its branch has no commit yet: make a first commit in {worktree}, then " \
            f"git ao checkpoint {session_id} takes one"
    return f"git ao checkpoint {session_id} takes one"


def branch_commit(s: Session, branch: str) -> str | None:
    """The newest commit the session knows `branch` at: the HEAD of its newest
    history entry taken on that branch (the first parent of the entry's save),
    else its record's save's HEAD when that save was on it; None when neither
    knows one (or the history cannot be read). Reads the history only (git
    cat-file, git log), so the ref of the branch itself may be gone."""
    try:
        top = newest_cheaply(s.common_dir, s.id)
        found = [top] if top is not None and top.branch == branch else (
            entries(s.common_dir, s.id) if top is not None else [])
    except AoError:
        found = []
    for e in found:
        if e.branch == branch and e.head:
            return e.head
    save = s.save
    if save is not None and save.branch == branch and not save.detached and save.head:
        return save.head
    return None


def unborn_refusal(s: Session, exc: capture.Unborn) -> capture.CannotCapture:
    """What to say of HEAD on a branch with no commit (`capture.inspect`'s Unborn):
    when the session knows a commit of that branch (`branch_commit`), its ref was
    deleted (`git update-ref -d`, `git branch -D` in another worktree) and `git branch
    <branch> <commit>` brings it back (a first commit would make a new root commit
    of the whole index instead); else `exc` itself (a branch never committed)."""
    if exc.branch is None:
        return exc
    known = branch_commit(s, exc.branch)
    if known is None:
        return exc
    return capture.Unborn(
        f"branch '{exc.branch}' in '{exc.path}' was deleted (HEAD is on it, its ref is "
        f"gone; session '{s.id}' last saw it at {known[:12]}): git branch {exc.branch} "
        f"{known[:12]} brings it back, then run it again", exc.branch, exc.path)


def find(cwd: str, session_id: str, at: str) -> Entry:
    """The entry `at` names: its number (1 the newest), or a commit id or prefix of
    the entry or of its save. Raises AoError naming what exists."""
    found = entries(cwd, session_id)
    if not found:
        raise AoError(f"session '{session_id}' has no history yet ({first_entry(cwd, session_id)})")
    if at.isdigit() and len(at) < 7:
        n = int(at)
        if not 1 <= n <= len(found):
            raise AoError(f"no history entry {at}: '{session_id}' has entries 1 to "
                          f"{len(found)} (git ao history {session_id})")
        return found[n - 1]
    low = at.lower()
    oid = git.rev_parse(cwd, f"{at}^{{commit}}") if len(at) >= 4 else None
    # An entry commit names one entry; a save may be held by several (the same
    # trees taken twice with other private state), so an entry match goes first.
    hits = ([e for e in found if oid == e.commit] or [e for e in found if oid == e.save]) \
        if oid else []
    if not hits:
        hits = [e for e in found if e.commit.startswith(low)] or \
            [e for e in found if e.save.startswith(low)]
    if len(hits) > 1 and all(e.save == hits[0].save for e in hits):
        # One save the history lists for several entries (the same trees taken
        # again with other private state): the newest of them, as listed first.
        return hits[0]
    if len(hits) != 1:
        raise AoError(f"'{at}' names {'no' if not hits else 'more than one'} entry of the "
                      f"history of '{session_id}' (git ao history {session_id})")
    return hits[0]


def append(cwd: str, session_id: str, save: str, st: State, trigger: str, *,
           changed: int, untracked: int, time_ns: int | None = None) -> Entry | None:
    """Append save W (`save`, holding `st`) to the session's history, unless the
    newest entry holds the same state. Returns the new Entry, or None when nothing
    was added (`add`). Raises GitError."""
    return add(cwd, session_id, save, st, trigger, changed=changed, untracked=untracked,
               time_ns=time_ns)[0]


def add(cwd: str, session_id: str, save: str, st: State, trigger: str, *,
        changed: int, untracked: int, time_ns: int | None = None,
        top: Entry | None | Unread = UNREAD) -> tuple[Entry | None, Entry]:
    """Append save W (`save`, holding `st`) to the session's history, unless the
    newest entry holds the same state. Returns (the new Entry or None when nothing
    was added, the newest entry now: the new one, or the one that holds `st`).
    top: the newest entry as the caller read it (`newest_of`), else it is read here.

    The entry commit is written, then the ref moved with compare-and-swap on the
    tip read (`git update-ref <ref> <new> <old>`; for the first entry, the ref must
    not exist yet): another append landing in between makes git refuse, and this
    one is built again on the new tip, read again, up to APPEND_TRIES times.
    Raises GitError.
    """
    assert trigger in TRIGGERS, trigger
    ref = history_ref(session_id)
    when = time_ns if time_ns is not None else time.time_ns()
    for _attempt in range(APPEND_TRIES):
        if isinstance(top, Unread):
            top = newest(cwd, session_id)
        if top is not None and top.same_state(st):
            return None, top
        seq = top.seq + 1 if top is not None else 1
        parents = ([top.commit] if top is not None else []) + [save]
        commit = git.commit_tree(cwd, st.worktree_tree, parents,
                                 _message(session_id, trigger, seq, when, changed, untracked, st))
        crashpoint.hit("history:before-ref")
        if git.swap_ref(cwd, ref, commit, top.commit if top is not None else None,
                        message=f"git-ao history {trigger}"):
            crashpoint.hit("history:after-ref")
            entry = Entry(1, commit, ObjectId(save), when, trigger, changed, untracked, st.head,
                          st.branch, st.worktree_tree, st.index_tree, st.untracked_tree, seq,
                          st.private_config)
            return entry, entry
        top = UNREAD
    raise GitError(["update-ref", ref], 1, f"{ref} kept moving under {APPEND_TRIES} appends")


def planned(session_id: str, save: str, st: State, trigger: str, *, changed: int,
            untracked: int, top: Entry | None, time_ns: int | None = None
            ) -> tuple[Entry, bytes] | None:
    """The entry `add` would append on `top` for save W (`save`, holding `st`), as
    (the Entry, its commit's bytes for `git.write_objects`), computed without a
    process; None when git would rewrite its message (`git.build_commit`). The
    caller writes the commit and moves the ref from `top` with compare and swap."""
    assert trigger in TRIGGERS, trigger
    when = time_ns if time_ns is not None else time.time_ns()
    seq = top.seq + 1 if top is not None else 1
    parents = ([top.commit] if top is not None else []) + [save]
    built = git.build_commit(st.worktree_tree, parents, _message(
        session_id, trigger, seq, when, changed, untracked, st), when=when // 1_000_000_000)
    if built is None:
        return None
    return Entry(1, built[0], ObjectId(save), when, trigger, changed, untracked, st.head,
                 st.branch, st.worktree_tree, st.index_tree, st.untracked_tree, seq,
                 st.private_config), built[1]


def clean_as_newest(cap: capture.Capture, top: Entry | None) -> bool:
    """Does `top` hold the clean worktree `cap` found (no commit written: the same
    HEAD and branch, nothing changed, the same private config)? Then nothing is
    appended for it."""
    return cap.commit is None and top is not None and top.head == cap.head \
        and top.branch == cap.branch and top.changed == 0 and top.untracked == 0 \
        and top.untracked_tree is None and top.worktree_tree == top.index_tree \
        and _norm(top.private_config) == _norm(cap.private_config)


def append_capture(cwd: str, session_id: str, cap: capture.Capture, meta: capture.Meta,
                   trigger: str) -> Entry | None:
    """Append what `cap` holds, writing a stash-shaped commit for a clean worktree
    first (`capture.ensure_commit`) only when the newest entry differs. Returns the
    new Entry or None (identical to the newest). Raises GitError."""
    return add_capture(cwd, session_id, cap, meta, trigger)[0]


def add_capture(cwd: str, session_id: str, cap: capture.Capture, meta: capture.Meta,
                trigger: str, *, top: Entry | None | Unread = UNREAD
                ) -> tuple[Entry | None, Entry]:
    """`append_capture`, returning (the new Entry or None, the newest entry now) as
    `add` does; top: the newest entry as the caller read it. Raises GitError."""
    if cap.commit is None:
        if isinstance(top, Unread):
            top = newest(cwd, session_id)
        if clean_as_newest(cap, top):
            assert top is not None
            return None, top  # clean at the same HEAD, as the newest entry was
        cap = dataclasses.replace(cap)  # the caller's capture still says "nothing written"
        capture.ensure_commit(cwd, cap, meta)
    assert cap.commit is not None
    return add(cwd, session_id, cap.commit, state_of(cap), trigger,
               changed=len(cap.changed), untracked=len(cap.untracked), top=top)


def rewrite(cwd: str, session_id: str, keep: list[Entry], old_tip: str) -> str | None:
    """Make the history hold only `keep` (newest first, a subset of the entries read
    with the tip `old_tip`): the kept entries are written again oldest first on
    one another, then the ref moved with compare-and-swap on `old_tip`. Returns the
    new tip, or None when an append moved the ref meanwhile (nothing changed; read
    again and retry). Raises GitError."""
    prev: str | None = None
    for seq, e in enumerate(reversed(keep), start=1):
        st = State(e.head, e.branch, e.worktree_tree, e.index_tree, e.untracked_tree,
                   e.private_config)
        parents = ([prev] if prev else []) + [e.save]
        prev = git.commit_tree(cwd, e.worktree_tree, parents,
                               _message(session_id, e.trigger, seq, e.time_ns, e.changed,
                                        e.untracked, st))
    assert prev is not None, "a history keeps its newest entry"
    if not git.swap_ref(cwd, history_ref(session_id), prev, old_tip,
                        message="git-ao prune history"):
        return None
    return prev


def size_bytes(cwd: str, session_id: str) -> int | None:
    """Bytes on disk of the objects only the history keeps (not reachable from a
    branch or tag), `git rev-list --disk-usage --objects` (git 2.38+); None when
    git cannot tell."""
    return query.disk_usage(cwd, [history_ref(session_id)], ["--branches", "--tags"])
