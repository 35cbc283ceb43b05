"""Restore sessions saved on another machine (`git ao-restore --from REMOTE`).

In a clone on this machine: list the remote's `refs/ao/preserved/<id>`, fetch
the ones this machine does not know (the preserve commit brings its HEAD's
history along), rebuild each session's records from the commit's own Ao-*
trailers (recover.rebuild, as `git ao doctor --recover` does), and hand them to
the usual restore workflow. A session that came back in full has its remote
ref deleted (git_ao/remote/pushes.py, under a lease on the commit fetched).

The recorded workspace path stays the authority. A mapping (`--map-path
OLD=NEW`, the restore.mapPath setting) that matches it says where the worktree
goes instead, and the mapped path is what the session records from then on.
A path this machine cannot hold (its parent directory missing or not
writable: another home directory) without a mapping is refused with one line.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence

from git_ao import git
from git_ao.context import REF_PREFIX, Context, preserve_ref
from git_ao.errors import AoError, Refused
from git_ao.git import query, remotes, worktree
from git_ao.git.parse import ObjectId
from git_ao.manage.recover import Orphan, rebuild
from git_ao.outcome import Action, Outcome, OutcomeData, Status, facts
from git_ao.remote import namespace, pushes
from git_ao.restore import target as target_mod
from git_ao.restore import workflow as restore
from git_ao.save import history
from git_ao.store import pathmap
from git_ao.store.records import Save, Session


def restore_from(ctx: Context, here: str, remote_name: str, ids: Sequence[str],
                 maps: Sequence[tuple[str, str]], *, timeout: float, jobs: int = 1,
                 progress: Callable[[Outcome], object] | None = None,
                 stop: threading.Event | None = None, set_aside_stray: bool = False,
                 bound: float | None = None) -> list[Outcome]:
    """Fetch, adopt and restore the sessions `remote_name` holds (all, or `ids`), in
    the repository containing `here`. set_aside_stray, bound: `restore.restore`'s
    set_aside_stray and timeout (`git ao-restore --set-aside-stray`, `--timeout`).

    maps: (old prefix, new prefix) pairs; the longest matching old prefix wins. timeout:
    seconds each ls-remote and fetch may take. A session this machine already
    knows is not fetched again: a pending one is restored as usual, any other is
    left as it is. Returns one Outcome per session (adoption refusals, then the
    restore's). Raises Fatal when `here` is not in a repository, GitError when
    the remote cannot be listed or fetched in time.
    """
    pushes.check_remote(remote_name)
    repo = os.path.realpath(git.repo_dirs(here).common_dir)
    listed = remotes.ls_remote(repo, remote_name, REF_PREFIX + "*",
                               history.HISTORY_PREFIX + "*", timeout=timeout)
    refs = namespace.ids_under(listed, REF_PREFIX)
    # The histories pushed with the saves: fetched with the sessions fetched.
    hists = namespace.ids_under(listed, history.HISTORY_PREFIX)
    out: list[Outcome] = []
    for sid in ids:
        if sid not in refs:
            out.append(Outcome(sid, Action.RESTORE, Status.REFUSED,
                               f"{remote_name} has no {REF_PREFIX}{sid}"))
    known: list[Session] = []
    fetch: list[str] = []
    others: dict[str, ObjectId] = {}  # pending here, another commit on the remote
    for sid in (ids or sorted(refs)):
        if sid not in refs:
            continue
        s = ctx.store.get(sid)
        if s is None:
            fetch.append(sid)
        elif s.pending and not ids and s.save is not None and not s.save.restores_by_default:
            # Its tool removed its worktree on purpose: as the restore of every
            # pending session here, one naming no session leaves it.
            from git_ao.manage.listing import left_pending
            out.append(left_pending(s))
        elif s.pending:
            known.append(s)
            local = s.save.preserved_commit if s.save is not None else None
            if local != refs[sid]:
                others[sid] = refs[sid]
        else:
            out.append(Outcome(sid, Action.RESTORE, Status.NOTHING, f"already known here "
                               f"({s.state}); {remote_name}'s copy is left as it is",
                               facts(s)))

    adopted: dict[str, str] = {}
    came: dict[str, str] = {}  # by id: what became of its history (`_take_history`)

    def shown(o: Outcome) -> object:
        # The restore workflow shows each outcome as it ends: named before that.
        _name_others([o], remote_name, others)
        _say_elsewhere(o, adopted)
        _say_history(o, came)
        return progress(o) if progress is not None else None

    if ctx.dry_run:
        out += _would_adopt(ctx, repo, remote_name, fetch, refs, maps, timeout,
                            set_aside_stray, hists)
        if progress is not None:
            for o in out:
                progress(o)
        return out + _name_others(restore.restore(
            ctx, known, jobs=jobs, progress=shown if progress is not None else None,
            stop=stop,
            set_aside_stray=set_aside_stray, timeout=bound), remote_name, others)
    if fetch:
        namespace.fetch_incoming(repo, remote_name, fetch, timeout=timeout,
                                 histories=[sid for sid in fetch if sid in hists])
        try:
            for sid in fetch:
                got = _adopt(ctx, repo, remote_name, sid, maps, set_aside_stray, came)
                if isinstance(got, Outcome):
                    out.append(got)
                else:
                    known.append(got)
                    adopted[sid] = refs[sid]
        finally:
            namespace.drop_incoming(repo, fetch)
    if progress is not None:
        for o in out:  # the restore workflow reports its own through `progress`
            progress(o)
    restored = restore.restore(ctx, known, jobs=jobs,
                               progress=shown if progress is not None else None, stop=stop,
                               set_aside_stray=set_aside_stray, timeout=bound)
    for o in restored:
        _say_elsewhere(o, adopted)
        _say_history(o, came)
        if o.status == Status.OK and o.session_id in adopted:
            # Back in full here: the remote copy is deleted by the next push, only
            # while the remote still holds what was fetched.
            pushes.set_have(ctx.store, o.session_id, remote_name, repo, adopted[o.session_id],
                            want="")
    pushes.queue_restored(ctx, restored)
    return out + _name_others(restored, remote_name, others)


def _say_elsewhere(o: Outcome, adopted: Mapping[str, str]) -> None:
    """A session adopted from the remote never had a trash copy on this machine: its
    ignored paths stay on the machine that saved it, and the outcome says so."""
    lost = o.data.get("environment_lost")
    if o.session_id in adopted and isinstance(lost, int):
        o.message = o.message.replace(target_mod.environment_note(lost),
                                      target_mod.environment_elsewhere_note(lost))


def _say_history(o: Outcome, came: dict[str, str]) -> None:
    """Say once, in the outcome of a session fetched from the remote, what became
    of its history (`_take_history`)."""
    said = came.pop(o.session_id, "")
    if said:
        o.message += f"; {said}"


def _nothing() -> None:
    """Nothing to undo."""


def _take_history(repo: str, remote_name: str, sid: str) -> tuple[str, Callable[[], None]]:
    """Make the history fetched with a session (refs/ao/incoming-history/<id>) its
    history here: created when this repository has none, moved on when the one
    here is an older state of it, never replacing another chain. Returns what
    became of it (a clause for the outcome, '' when none was fetched) and how to
    undo it (the adoption refused). Raises GitError."""
    incoming = git.rev_parse(repo, pushes.INCOMING_HISTORY_PREFIX + sid)
    ref = history.history_ref(sid)
    if incoming is None:
        return "", _nothing
    local = git.rev_parse(repo, ref)
    came = f"its history came with it ({ref}: git ao history {sid})"
    if local == incoming:
        return came, _nothing
    if local is not None and not query.is_ancestor(repo, local, incoming):
        return (f"{ref} here is another chain than {remote_name}'s ({incoming[:12]}), which "
                "stays there; this one is kept"), _nothing
    git.update_ref(repo, ref, incoming, local or git.NO_OBJECT,
                   message=f"git-ao restore --from {remote_name}")

    def undo() -> None:
        if local is None:
            git.drop_ref_if_at(repo, ref, incoming)
        else:
            git.update_ref(repo, ref, local, incoming, message="git-ao restore --from: refused")

    return came, undo


def _name_others(restored: list[Outcome], remote_name: str,
                 others: Mapping[str, ObjectId]) -> list[Outcome]:
    """Say, in the outcome of each session restored from this machine's own save,
    that `remote_name` holds another commit for its id (`others`), and how to look at
    it: two saves of one session need the user (attention). The local save is the
    one restored; the remote's is never fetched into the preserve ref."""
    for o in restored:
        oid = others.get(o.session_id)
        if oid is None or "remote_commit" in o.data:  # said once, before it is shown
            continue
        o.message += (f"; {remote_name} holds another commit for {o.session_id} "
                      f"({oid[:12]}), left as it is: look at it with git fetch {remote_name} "
                      f"{REF_PREFIX}{o.session_id} && git stash show -p --include-untracked "
                      "FETCH_HEAD")
        o.data["remote_commit"] = oid
        if o.status in (Status.OK, Status.NOTHING):
            o.status = Status.ATTENTION
    return restored


def _adopt(ctx: Context, repo: str, remote_name: str, sid: str,
           maps: Sequence[tuple[str, str]], set_aside_stray: bool = False,
           came: dict[str, str] | None = None) -> Session | Outcome:
    """Make the fetched refs/ao/incoming/<id> this machine's pending session: its
    preserve ref (created, never replacing one), and its records rebuilt from the
    commit's trailers with the workspace path mapped, once the restore is judged
    able to go there (`_judged`). Returns the Session, or an Outcome saying why it
    was refused (nothing of it is kept then, so a later run with --map-path finds
    it new). The history fetched with it becomes its history here
    (`_take_history`, said in `came`), first: the save's private config is read
    from its entry."""
    oid = git.rev_parse(repo, pushes.INCOMING_PREFIX + sid)
    if oid is None:
        return Outcome(sid, Action.RESTORE, Status.REFUSED, f"{REF_PREFIX}{sid} was not fetched "
                       f"from {remote_name}")
    with ctx.lock(sid):
        if ctx.store.get(sid) is not None:
            return Outcome(sid, Action.RESTORE, Status.NOTHING, "already known here")
        ref = preserve_ref(sid)
        local = git.rev_parse(repo, ref)
        if local is not None and local != oid:
            return Outcome(sid, Action.RESTORE, Status.REFUSED, f"{ref} here holds another commit "
                           f"({local[:12]}); it is not replaced (git ao doctor --recover -C . "
                           "adopts it)")
        created = local is None
        if created:
            git.update_ref(repo, ref, oid, git.NO_OBJECT, message=f"git-ao restore --from {remote_name}")
        said, undo = "", _nothing
        try:
            said, undo = _take_history(repo, remote_name, sid)
            s, save = rebuild(ctx.store, Orphan(repo, ref, oid))
            recorded = s.worktree_path
            path, why = target(repo, s, maps, git.worktree_list(repo))
            if path is not None:
                s.worktree_path = save.worktree_path = path
                path, why, _ = _judged(ctx, s, save, remote_name, recorded, set_aside_stray)
        except AoError as exc:
            path, why = None, str(exc)
        if path is None:
            undo()
            if created:
                git.drop_ref_if_at(repo, ref, oid)
            ctx.log("restore", sid, "refused-from-remote", remote=remote_name, commit=oid,
                    detail=why)
            return Outcome(sid, Action.RESTORE, Status.REFUSED, why, {"repo": repo,
                                                                 "remote": remote_name})
        s.terminated, save.restored_at = True, None
        ctx.store.insert_recovered(s, save)
        tip = git.rev_parse(repo, pushes.INCOMING_HISTORY_PREFIX + sid)
        if tip is not None and git.rev_parse(repo, history.history_ref(sid)) == tip:
            # The remote holds this history: the lease of this machine's next push.
            pushes.set_histories_pushed(ctx.store, [(sid, remote_name, tip)])
        ctx.log("restore", sid, "adopted-from-remote", remote=remote_name, commit=oid,
                workspace=path, recorded=recorded if recorded != path else None,
                history=tip)
        if came is not None and said:
            came[sid] = said
        return s


def _judged(ctx: Context, s: Session, save: Save, remote_name: str, recorded: str,
            set_aside_stray: bool) -> tuple[str | None, str, Status]:
    """Judge the restore of the session `s` would fetch at its (mapped) path as the
    restore itself will (`restore.would_restore`): a directory in the way, a branch
    checked out elsewhere. Returns (path, the dry run's line, the status the real
    run gives: attention for a directory it sets aside) or (None, the refusal,
    refused), in words for --from: nothing of the session is kept here, and
    --map-path puts it elsewhere."""
    try:
        would = restore.would_restore(ctx, s, save, set_aside_stray=set_aside_stray)
        return s.worktree_path, would.message, would.status
    except Refused as exc:
        return None, _from_refusal(str(exc), s.id, remote_name, recorded), Status.REFUSED


def _from_refusal(why: str, sid: str, remote_name: str, recorded: str) -> str:
    """A restore's refusal said of a session --from did not record: the run to try
    again is a --from run (no session is pending here), and --map-path is the way
    elsewhere."""
    why = why.replace(" (still pending)", "") \
        .replace(f"git ao-restore {target_mod.STRAY_OPTION} {sid}",
                 f"git ao-restore --from {remote_name} {target_mod.STRAY_OPTION} {sid}") \
        .replace("run git ao-restore again", f"run git ao-restore --from {remote_name} again")
    return (f"{why}; nothing of {sid} is kept on this machine: to restore it elsewhere, "
            f"git ao-restore --from {remote_name} --map-path "
            f"{os.path.dirname(recorded.rstrip('/'))}=NEW {sid}")


def target(repo: str, s: Session, maps: Sequence[tuple[str, str]],
           entries: Sequence[git.WorktreeEntry], *, dry_run: bool = False
           ) -> tuple[str | None, str]:
    """Where the adopted session `s` goes here (`place`), unless the path is already
    a worktree of the repository (`entries`: its `git worktree list`). Returns
    (path, '') or (None, the one-line reason). The real run and the dry run
    (which creates no directory) both judge with this."""
    path, why = place(s.worktree_path, maps, dry_run=dry_run)
    if path is not None and worktree.find(list(entries), path) is not None:
        return None, f"'{path}' is already a worktree of this repository"
    return path, why


def _would_adopt(ctx: Context, repo: str, remote_name: str, fetch: Sequence[str],
                 refs: Mapping[str, ObjectId],
                 maps: Sequence[tuple[str, str]], timeout: float,
                 set_aside_stray: bool = False,
                 hists: Mapping[str, ObjectId] | None = None) -> list[Outcome]:
    """A dry run of the adoption: what the real run would decide for each of `fetch`,
    judged as it judges (`target`, the local ref, `_judged`), from the commits
    fetched into a temporary directory outside the repository, removed after: no
    ref, object or record is written. hists: the histories `remote_name` holds,
    by id, which the real run fetches with the sessions. Raises GitError when the
    fetch fails."""
    hists = hists or {}
    out: list[Outcome] = []
    entries = git.worktree_list(repo)
    with tempfile.TemporaryDirectory(prefix="git-ao-dry-run-") as objects:
        remotes.peek_refs(repo, remote_name, [REF_PREFIX + sid for sid in fetch], objects,
                            timeout=timeout)
        for sid in fetch:
            oid, ref = refs[sid], preserve_ref(sid)
            local = git.rev_parse(repo, ref)
            data: OutcomeData = {"repo": repo, "remote": remote_name}
            if local is not None and local != oid:
                out.append(Outcome(sid, Action.RESTORE, Status.REFUSED, f"{ref} here holds another "
                                   f"commit ({local[:12]}); it would not be replaced", data))
                continue
            lost = 0
            try:
                told = remotes.peeked_message(repo, oid, objects)
                s, save = rebuild(None, Orphan(repo, ref, oid), told)
                lost = _ignored_elsewhere(ctx, sid, told[1])
                recorded = s.worktree_path
                path, why = target(repo, s, maps, entries, dry_run=True)
                status = Status.OK
                if path is not None:
                    s.worktree_path = save.worktree_path = path
                    path, why, status = _judged(ctx, s, save, remote_name, recorded,
                                                set_aside_stray)
            except AoError as exc:
                path, why = None, str(exc)
            if path is None:
                # The real run's refusal, word for word: it registers nothing either.
                out.append(Outcome(sid, Action.RESTORE, Status.REFUSED, why, data))
                continue
            msg = f"would fetch {ref} ({oid[:12]}){_with_history(repo, sid, hists)} from " \
                f"{remote_name} and restore it at {path}"
            if path != recorded:
                msg += f" (recorded at {recorded})"
            parent = os.path.dirname(path.rstrip("/"))
            if not os.path.lexists(parent):
                msg += f", creating {parent}"
            if os.path.lexists(path):
                msg += f"; {why}"  # the restore's own line: what it does with what is there
            done: OutcomeData = {**data, "workspace_path": path, "preserved_commit": oid}
            if lost:
                # As the real run's restore says it (`_say_elsewhere`).
                msg = msg.replace(target_mod.environment_note(lost), "") + \
                    target_mod.environment_elsewhere_note(lost)
                done["environment_lost"] = lost
            out.append(Outcome(sid, Action.RESTORE, status, msg, done))
    return out


def _ignored_elsewhere(ctx: Context, sid: str, message: str) -> int:
    """How many ignored paths the save whose commit message is `message` held that a
    restore here would not bring back: its `Ao-Ignored` count, when no trash entry
    of `sid` here holds ignored files (the real run says so: `_say_elsewhere`)."""
    from git_ao.save import capture
    from git_ao.store import trash
    count = capture.parse_trailers(message).get(capture.IGNORED_TRAILER, "")
    if not count.isdigit() or not int(count):
        return 0
    return int(count) if trash.latest_for(ctx.store.dir, sid, environment=True) is None else 0


def _with_history(repo: str, sid: str, hists: Mapping[str, ObjectId]) -> str:
    """What a dry run says of the history the real run would fetch with a session
    (`_take_history` decides there, once it holds the commits)."""
    tip = hists.get(sid)
    if tip is None:
        return ""
    ref = history.history_ref(sid)
    local = git.rev_parse(repo, ref)
    if local is None or local == tip:
        return f" and its history {ref} ({tip[:12]})"
    return (f" and its history {ref} ({tip[:12]}), taken only where it continues the one "
            f"here ({local[:12]})")


def adopted_of(outcomes: Sequence[Outcome]) -> list[tuple[str, str, str, str]]:
    """(id, remote, repository, commit) of each session a dry run of `restore_from`
    would fetch and restore: the real run deletes its remote copy after."""
    return [(o.session_id, o.data["remote"], o.data["repo"], commit)
            for o in outcomes if o.action == Action.RESTORE and o.status == Status.OK
            and "remote" in o.data and "repo" in o.data
            and (commit := o.data.get("preserved_commit"))]


def place(recorded: str, maps: Sequence[tuple[str, str]], *, dry_run: bool = False
          ) -> tuple[str | None, str]:
    """Where a worktree recorded at `recorded` goes on this machine: the mapped path
    when a mapping matches, else the recorded one, when this machine can hold it
    (`possible`). Returns (path, '') or (None, the one-line reason). dry_run: the
    directories `_make_parents` would create are not made, and count as there."""
    mapped = pathmap.apply(recorded, maps)
    target = mapped or recorded
    if mapped:
        prefix = pathmap.match(recorded, maps)[1]  # type: ignore[index]
        if dry_run:
            if _would_make_parents(target, prefix):
                return target, ""
        else:
            made = _make_parents(target, prefix)
            if made:
                return None, made
    if possible(target):
        return target, ""
    if mapped:
        return None, (f"'{recorded}' maps to '{target}', whose parent directory is missing "
                      "or not writable here; create it or map elsewhere")
    return None, (f"'{recorded}' cannot exist on this machine (its parent directory is "
                  f"missing or not writable); use --map-path "
                  f"{os.path.dirname(recorded)}=NEW")


def _would_make_parents(target: str, prefix: str) -> bool:
    """Would `_make_parents` create the parent of `target` (and so make it possible)?"""
    parent = os.path.dirname(target.rstrip("/")) or "/"
    return os.path.isdir(prefix) and not os.path.lexists(parent) and target != prefix \
        and os.access(prefix, os.W_OK | os.X_OK)


def _make_parents(target: str, prefix: str) -> str:
    """Create the missing directories between the mapped prefix `prefix` and the
    parent of `target`, when `prefix` is a directory here: the user named that
    place, and a new machine rarely has the layout below it yet. A prefix that
    does not exist is left to the caller's refusal. Returns '' or the one-line
    reason a directory could not be made."""
    parent = os.path.dirname(target.rstrip("/")) or "/"
    if not os.path.isdir(prefix) or os.path.lexists(parent) or target == prefix:
        return ""
    try:
        os.makedirs(parent)
    except OSError as exc:
        return (f"cannot create '{parent}' below the mapped '{prefix}': "
                f"{exc.strerror or exc}")
    return ""


def possible(path: str) -> bool:
    """Can this machine hold a worktree at `path`: its parent directory exists and is
    writable? (A missing parent means another machine's layout, such as another
    home directory: directories are never created there unasked.)"""
    parent = os.path.dirname(path.rstrip("/")) or "/"
    return os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK)


def maps_from(option: Sequence[str], setting: object) -> list[tuple[str, str]]:
    """The mappings of `--map-path` values, then of the restore.mapPath setting (a
    string or a list of them). Raises ValueError on a malformed one."""
    values = list(option)
    if isinstance(setting, str):
        values.append(setting)
    elif isinstance(setting, list):
        values += [v for v in setting if isinstance(v, str)]
    return pathmap.parse_all(values)
