"""Register a linked worktree as a live session."""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from typing import Any

from git_ao import git, gitfiles
from git_ao.context import MAX_ID, Context, lookup, validate_id
from git_ao.errors import NotARepository, Refused, Usage, one_line
from git_ao.manage.listing import list_json
from git_ao.outcome import Action, Outcome, Status
from git_ao.store.records import Session
from git_ao.store.states import KINDS, Kind


def left_by(s: Session, path: str) -> bool:
    """Is the worktree at `path` the one pending session `s`'s save left there
    (`_left_by`), rather than a new one made at its path since? Unknown (no
    worktree there to read) counts as yes."""
    admin = gitfiles.read_gitfile(os.path.join(path, ".git"))
    return admin is None or _left_by(s, admin)


def _left_by(s: Session, git_dir: str) -> bool:
    """Is the worktree whose admin dir is `git_dir` the one pending session `s`'s
    save left at its path: made before the save (its admin dir's `commondir`, which
    `git worktree add` writes once, is older), or by a restore of it that did not
    finish? Unknown counts as yes (the pending session keeps it)."""
    save = s.save
    if save is None or save.restore_started_at is not None:
        return True
    made = gitfiles.registered_ns(git_dir)
    return made is None or made <= save.saved_at


def register(ctx: Context, path: str, *, session_id: str | None = None,
             kind: str = Kind.WORKER, harness: str = "", agent_session_id: str | None = None,
             prompt: str | None = None, name: str | None = None) -> Session:
    """Register the linked worktree containing `path` as a live session.

    With no `session_id` the id is `name` (made valid by id_from_name), else the
    worktree's name as git names its admin dir (`.git/worktrees/<name>`: the
    directory's name, a number appended when another worktree of the repository
    has it), or, when a session of that id exists, `<repo>-<id>` (see free_id).
    Returns the Session (not stored on a dry run). Raises Fatal (not a
    repository), Usage (bad id or kind, a path with a newline or not in UTF-8) or
    Refused (a bare repository, a main worktree, the id taken, or the worktree
    a live session's, or the one a pending session's save left at its path:
    `_left_by`). Another worktree at a pending session's path is a new one: it
    is registered, and the save waits beside it.
    """
    if kind not in KINDS:
        raise Usage(f"invalid kind '{kind}': use worker or orchestrator")
    dirs, top = linked_worktree(path)
    sid = session_id if session_id is not None else \
        id_from_name(name or os.path.basename(dirs.git_dir.rstrip("/")))
    try:
        validate_id(sid)
    except Usage as exc:
        if session_id is not None:
            raise
        raise Usage(f"{exc} (the worktree's name); name the session with --id") from None
    # A pending save's path taken by a new worktree: the worktree is a session of
    # its own, the save stays pending beside it (its restore waits for the path).
    # The worktree the save itself left there (a removal or a restore that did not
    # finish) stays the pending session's.
    holder = ctx.store.live_at(top)
    if holder is None:
        pending = ctx.store.holder_of(top)
        holder = pending if pending is not None and _left_by(pending, dirs.git_dir) else None
    if holder is not None:
        raise Refused(f"'{top}' already belongs to session '{holder.id}' ({holder.state})")
    taken = ctx.store.get(sid)
    if taken is not None and session_id is not None:
        raise Refused(f"session '{sid}' already exists (at {taken.worktree_path}); "
                      "choose another id with --id")
    if taken is not None:
        sid = free_id(ctx, sid, repo_name(dirs.common_dir))
    branch = git.current_branch(top)
    s = Session(sid, kind, harness or "", os.path.realpath(dirs.common_dir), branch, top,
                agent_session_id, prompt)
    if not ctx.dry_run:
        ctx.store.insert(s)
        ctx.log("register", sid, "registered", kind=kind, harness=harness, workspace=top)
    return s


def linked_worktree(path: str) -> tuple[git.RepoDirs, str]:
    """The repository dirs and the real top-level path of the linked worktree
    holding `path`. Raises Fatal (no repository there, the path named), Refused
    (a bare repository or a main worktree: a fact about the path, not bad usage)
    or Usage (a path with a newline or not in UTF-8)."""
    dirs = git.repo_dirs(path)
    if dirs.is_bare:
        raise Refused(f"'{path}' is a bare repository, not a linked worktree")
    if not dirs.is_linked_worktree:
        raise Refused(f"'{dirs.toplevel}' is the main worktree of its repository; "
                      "sessions live in linked worktrees (git worktree add)")
    assert dirs.toplevel is not None  # a linked worktree has one
    top = os.path.realpath(dirs.toplevel)
    for what, name in (("worktree", top), ("repository", dirs.common_dir)):
        why = unrecordable(name)
        if why:
            raise Usage(f"{what} path '{one_line(name)}' {why}; rename the directory")
    return dirs, top


def unrecordable(path: str) -> str:
    """Why git-ao cannot record `path` (it holds a newline, or bytes that are not
    UTF-8, which git-ao records paths as), or "" when it can."""
    if "\n" in path:
        return "holds a newline, which git-ao does not record"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8, which git-ao records paths as"
    return ""


def id_from_name(name: str) -> str:
    """A valid session id made from a worktree's name: accents dropped, every run of
    other characters one '-', no leading '-' or '.', no '..' or '.lock' (git's ref
    rules), at most MAX_ID bytes; 'worktree' when nothing is left. An agent's quit
    handler runs `git ao-preserve` with no id, so the default must always work."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    sid = re.sub(r"[^A-Za-z0-9._-]+", "-", plain)
    sid = re.sub(r"\.{2,}", ".", sid).lstrip("-.")[:MAX_ID].rstrip(".")
    while sid.endswith(".lock"):
        sid = sid.removesuffix(".lock").rstrip(".")
    return sid or "worktree"


def repo_name(common_dir: str) -> str:
    """The name of a repository, usable in a session id (id_from_name): its main
    worktree's directory name (`app` for app/.git), a bare repository's without
    `.git`, or, for a hidden git dir such as `app/.bare` (a bare clone with its
    worktrees beside it), the directory holding it."""
    path = os.path.realpath(common_dir).rstrip("/")
    if os.path.basename(path).startswith(".") and os.path.dirname(path) != "/":
        path = os.path.dirname(path)
    name = id_from_name(os.path.basename(path).removesuffix(".git"))
    return "repo" if name == "worktree" else name


def free_id(ctx: Context, name: str, repo: str) -> str:
    """A default id no session has: `<repo>-<name>` when `name` is taken (two
    repositories with a `.claude/worktrees/feature` each), then `<repo>-<name>-2`,
    `-3`, ... Raises Usage when none is a valid id."""
    base = f"{repo}-{name}"[:MAX_ID - 4]
    for n in range(1, 1000):
        sid = base if n == 1 else f"{base}-{n}"
        try:
            validate_id(sid)
        except Usage:
            break
        if ctx.store.get(sid) is None:
            return sid
    raise Usage(f"session '{name}' already exists and no free id was found; "
                "name the session with --id")


def current_session(ctx: Context, path: str = ".", form: str = "", *, harness: str = "",
                    agent_session_id: str | None = None) -> Session:
    """The session of the linked worktree containing `path`, registering it first
    (id from the worktree's name, with `harness` and `agent_session_id`) when it is
    not known. Raises Usage when `path` is in no linked worktree (in no repository
    too), naming the command with ids (`form`: "git ao checkpoint ID") when given."""
    named = f"name sessions ({form})" if form else "name sessions"
    # From the path alone: a GIT_WORK_TREE or GIT_DIR left in the caller's shell
    # must never point a preserve at another session's worktree.
    try:
        dirs = git.repo_dirs(path)
    except NotARepository:
        raise Usage(f"not inside a linked worktree ({path} is in no git repository): "
                    f"{named}, or use --all") from None
    if dirs.is_bare or not dirs.is_linked_worktree:
        raise Usage(f"not inside a linked worktree: {named}, or use --all")
    assert dirs.toplevel is not None  # a linked worktree has one
    top = os.path.realpath(dirs.toplevel)
    for s in ctx.store.sessions():
        if s.worktree_path == top and s.live:
            return s
    return register(ctx, top, harness=harness, agent_session_id=agent_session_id)


# Harness names that mean the same agent program: `claude-code`, which the README
# once suggested for `git ao add --harness`, is Claude Code as the importer names it.
_SAME_HARNESS = {"claude-code": "claude"}


def record_agent(ctx: Context, s: Session, harness: str, agent_session_id: str | None,
                 *, via: str = "hook", newer: bool = True) -> Session:
    """Record what a tool's hook says of the agent working in live session `s`: its
    `harness` and its own session id. A record without them takes them; one of the
    same harness takes another agent session id when `newer` (that session started
    in this worktree: a new agent session there is the one to resume, as the
    importer takes the newest transcript), the change logged with the old id;
    otherwise, and for another harness, the record is kept as it is, logged
    (`agent-facts-kept`). Returns the session as recorded (unchanged on a dry
    run). `via` names the caller in the log."""
    recorded = _SAME_HARNESS.get(s.harness, s.harness)
    if recorded not in ("", harness) or (
            not newer and s.agent_session_id and agent_session_id
            and agent_session_id != s.agent_session_id):
        ctx.log(via, s.id, "agent-facts-kept", harness=s.harness,
                agent_session_id=s.agent_session_id, hook_harness=harness,
                hook_agent_session_id=agent_session_id)
        return s
    new_harness = s.harness or harness
    new_id = agent_session_id or s.agent_session_id
    if (new_harness, new_id) == (s.harness, s.agent_session_id) or ctx.dry_run:
        return s
    if not ctx.store.set_agent(s.id, new_harness, new_id, (s.harness, s.agent_session_id)):
        return ctx.store.get(s.id) or s  # another process recorded them meanwhile
    if s.agent_session_id and new_id != s.agent_session_id:
        ctx.log(via, s.id, "agent-session-changed", harness=new_harness,
                was=s.agent_session_id, now=new_id)
    else:
        ctx.log(via, s.id, "agent-facts-recorded", harness=new_harness, agent_session_id=new_id)
    s.harness, s.agent_session_id = new_harness, new_id
    return s


# The facts `git ao add` records, by Session attribute.
_FACTS = ("kind", "harness", "agent_session_id", "prompt")


def add(ctx: Context, path: str, *, session_id: str | None = None, keep: bool = False,
        **fields: Any) -> Outcome:
    """`git ao add`: register (see `register`) and say so.

    Idempotent: a worktree already registered as a live session gives a
    `nothing` Outcome (exit 0) when the id and every fact given (None: not given)
    are the ones recorded, or whatever they are with `keep` (`--all`); a
    different id or fact is refused, naming the recorded one. Raises what
    `register` raises."""
    given = {k: v for k, v in fields.items() if v is not None}
    if session_id is not None:
        validate_id(session_id)  # bad input first, whatever the path holds
    dirs, top = linked_worktree(path)
    holder = ctx.store.holder_of(top)
    if holder is not None and holder.live:
        if session_id not in (None, holder.id):
            raise Refused(f"'{top}' already belongs to session '{holder.id}' (live)"
                          + _registered_again(ctx, holder, session_id))
        if not os.path.isdir(holder.common_dir):
            # The repository moved and this worktree stayed where it was.
            return _repoint(ctx, holder, dirs, top, given, keep=keep)
    taken = ctx.store.get(session_id) if session_id is not None else None
    if taken is not None and taken.live and not os.path.isdir(taken.common_dir):
        return _repoint(ctx, taken, dirs, top, given, keep=keep)
    if holder is not None and holder.live:
        differ = [] if keep else _facts_differ(holder, given)
        if differ:
            raise Refused(f"'{top}' already belongs to session '{holder.id}' (live) with "
                          f"{', '.join(differ)}; 'git ao forget {holder.id}' first to "
                          "register it again")
        return Outcome(holder.id, Action.ADD, Status.NOTHING,
                       f"already registered as {holder.kind} at {holder.worktree_path}",
                       list_json(holder))
    given.setdefault("kind", Kind.WORKER)
    s = register(ctx, path, session_id=session_id, **given)
    return Outcome(s.id, Action.ADD, Status.OK,
                   f"{'would register' if ctx.dry_run else 'registered'} {s.kind} "
                   f"at {s.worktree_path}" + _lost_its_repo(ctx, s, dirs, session_id)
                   + inherited_history(s), list_json(s))


def inherited_history(s: Session) -> str:
    """For a session just registered: when its id's history already holds entries
    (an earlier session of that id, forgotten or killed, left them), one clause
    saying they are kept as its older entries and how to drop them; else "". No
    git process when there is no history ref (`history.newest_cheaply`)."""
    from git_ao.errors import AoError
    from git_ao.save import history
    ref = history.history_ref(s.id)
    try:
        top = history.newest_cheaply(s.common_dir, s.id)
        if top is None:
            return ""
        n = top.seq  # entries are numbered from 1, the oldest, and a prune numbers them again
    except AoError:
        return ""
    return (f"; {ref} already holds {n} entr{'y' if n == 1 else 'ies'} of an earlier "
            f"session '{s.id}': kept, listed as its older entries (git ao history {s.id}; "
            f"{history.drop_command(s.common_dir, s.id)} drops them)")


def _registered_again(ctx: Context, holder: Session, session_id: str | None) -> str:
    """When `session_id` is a live session whose repository is gone, and `holder`
    holds the worktree given: how to re-point that session there instead."""
    s = ctx.store.get(session_id) if session_id is not None else None
    if s is None or not s.live or os.path.isdir(s.common_dir):
        return ""
    return (f"; if it is session '{s.id}''s worktree, registered again once its repository "
            f"moved, git ao forget {holder.id} first, then this re-points '{s.id}' there")


def repoint(ctx: Context, s: Session, path: str) -> Outcome:
    """`git ao add PATH --id ID` of live session `s` whose repository is gone, for an
    import that finds its worktree at `path` (same checks, same record changes), the
    facts it records kept. Raises Refused (another session holds the worktree, the
    recorded one is still there), Fatal or Usage as `add` does."""
    dirs, top = linked_worktree(path)
    holder = ctx.store.holder_of(top)
    if holder is not None and holder.id != s.id:
        raise Refused(f"'{top}' already belongs to session '{holder.id}' ({holder.state})")
    return _repoint(ctx, s, dirs, top, {}, keep=True)


def _lost_its_repo(ctx: Context, s: Session, dirs: git.RepoDirs, given_id: str | None) -> str:
    """When the worktree's own name is the id of a live session whose repository is
    gone (the repository moved with this worktree, most likely), a new id was
    taken: say how to keep that session's id and facts instead."""
    name = id_from_name(os.path.basename(dirs.git_dir.rstrip("/")))
    other = ctx.store.get(name) if given_id is None and name != s.id else None
    if other is None or not other.live or os.path.isdir(other.common_dir):
        return ""
    return (f"; session '{other.id}' lost its repository {other.common_dir}: if this "
            f"worktree is its, git ao forget {s.id}, then git ao add {s.worktree_path} "
            f"--id {other.id} re-points it, keeping its id and facts")


def _repoint(ctx: Context, s: Session, dirs: git.RepoDirs, top: str, given: dict[str, Any],
             *, keep: bool = False) -> Outcome:
    """`git ao add PATH --id ID` for a live session whose repository is gone (it
    moved, the worktree with it or not): point the record at the worktree at `top`
    and its repository, keeping the id, the facts, the save's row and the history
    (its refs moved with the repository). Refused when the recorded worktree is
    still there elsewhere, or a fact given is not the recorded one."""
    with ctx.lock(s.id):
        now = lookup(ctx, s.id)
        old = now.worktree_path
        if os.path.lexists(old) and os.path.realpath(old) != top:
            raise Refused(f"session '{now.id}' still has its worktree at {old}: its "
                          f"repository {now.common_dir} is gone, but that is where to run "
                          f"git ao add {old} --id {now.id}")
        differ = [] if keep else _facts_differ(now, given)
        if differ:
            raise Refused(f"session '{now.id}' is recorded with {', '.join(differ)}; its "
                          "record is re-pointed with the facts it has (give none, or "
                          "those)")
        common = os.path.realpath(dirs.common_dir)
        branch = git.current_branch(top)
        verb = "would re-point" if ctx.dry_run else "re-pointed"
        if not ctx.dry_run:
            if not ctx.store.repoint(now.id, now.common_dir, common, top, branch):
                raise Refused(f"session '{now.id}' changed meanwhile; nothing is changed "
                              "(run it again)")
            ctx.log("register", now.id, "repointed", was=now.common_dir, repo=common,
                    workspace=top)
        moved = ctx.store.get(now.id) if not ctx.dry_run else None
    # Outside the session's lock: each pending session is re-pointed under its own.
    pending = _repoint_pending(ctx, now.common_dir, common)
    also = f"; {verb} pending session(s) {', '.join(pending)} with it" if pending else ""
    return Outcome(now.id, Action.ADD, Status.OK,
                   f"{verb} session '{now.id}' at {top} (repository {common}; it was "
                   f"{now.common_dir}, which is gone): its id, facts and history are "
                   f"kept{also}", list_json(moved or now))


def _repoint_pending(ctx: Context, old_common: str, common: str) -> list[str]:
    """Point each pending session of the repository that was at `old_common` (gone)
    at that repository where it is now, `common`, when its preserve ref there holds
    the recorded save (the refs moved with the repository): its worktree path moves
    with the repository when it was inside it (`gone.moved_with`), else stays.
    Returns the ids re-pointed (would be, on a dry run); nothing is deleted, and
    a session whose ref is not there is left for `git ao doctor --recover -C`."""
    from git_ao.context import REF_PREFIX
    from git_ao.fs.gone import moved_with
    from git_ao.git import query
    done = []
    for listed in ctx.store.sessions():
        if listed.common_dir != old_common or not listed.pending:
            continue
        with ctx.lock(listed.id):
            s = ctx.store.get(listed.id)
            save = s.save if s is not None else None
            if s is None or save is None or not s.pending or s.common_dir != old_common \
                    or query.ref_tip(common, REF_PREFIX + s.id) != save.preserved_commit:
                continue
            path = moved_with(s.worktree_path, old_common, common)
            if not ctx.dry_run:
                if not ctx.store.repoint(s.id, old_common, common, path, None):
                    continue
                ctx.log("register", s.id, "repointed", was=old_common, repo=common,
                        workspace=path)
            done.append(s.id)
    return done


def _facts_differ(s: Session, given: dict[str, Any]) -> list[str]:
    """Each fact in `given` that is not the one `s` records, said by `_differs`."""
    return [_differs(k, getattr(s, k), v) for k, v in given.items()
            if k in _FACTS and (getattr(s, k) or "") != v]


def _differs(name: str, recorded: str | None, given: str) -> str:
    # The prompt is never printed or logged: only that it differs.
    if name == "prompt":
        return "another prompt"
    name = name.replace("_", " ")
    return f"{name} '{recorded}', not '{given}'" if recorded else f"no {name}, not '{given}'"


def add_all(ctx: Context, path: str, **fields: Any) -> list[Outcome]:
    """`git ao add --all`: `add` each linked worktree of the repository holding
    `path` (`git worktree list`; prunable ones, whose directory is gone, left out),
    one Outcome each, a refusal not stopping the others; those already
    registered are left as they are. Raises Fatal when `path`
    is in no repository."""
    from git_ao.batch import guarded
    dirs = git.repo_dirs(path)
    outcomes = []
    for e in git.worktree_list(dirs.common_dir):
        if e.is_main or e.bare or e.prunable:
            continue
        name = os.path.basename(e.path.rstrip("/"))
        outcomes.append(guarded(functools.partial(add, ctx, e.path, keep=True, **fields),
                                name, Action.ADD, ctx))
    return outcomes

