"""`git ao import`: register the ao daemon's live sessions as git-ao sessions.

daemon_db reads the daemon's `ao.db` (read-only, schema version checked). Each
live daemon session becomes one git-ao session per worktree: the session's own
workspace (id `<daemon id>`) and, for a session of a workspace project, each
repository's worktree (id `<daemon id>.<repo name>`), linked by `group_id`.

A daemon row that cannot be registered (no path yet, a path that is gone, an
id git-ao cannot use) is reported as refused once and remembered in git-ao's
database (`import_notes`); later runs mention it without failing, so the exit
status says whether anything new went wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from git_ao import groups
from git_ao.context import Context, validate_id
from git_ao.errors import AoError
from git_ao.importers import daemon_db
from git_ao.importers.names import AO
from git_ao.importers.notes import said_once
from git_ao.importers.worktrees import linked_root
from git_ao.manage.listing import list_json
from git_ao.manage.register import register
from git_ao.outcome import Action, Outcome, Status

default_path = daemon_db.default_path


@dataclass
class Unit:
    """One worktree of a daemon session, to register as one git-ao session."""

    id: str
    path: str
    branch: str | None
    group: str | None
    daemon: daemon_db.DaemonSession
    root_of_workspace: bool = False


def units(d: daemon_db.DaemonSession) -> list[Unit]:
    """The worktrees of daemon session `d`: its workspace, then each active repository
    worktree that is not the workspace itself (a single-repo session lists its
    one worktree there too)."""
    children = [w for w in d.worktrees if w.state == daemon_db.ACTIVE_WORKTREE
                and os.path.normpath(w.worktree_path or "/") != os.path.normpath(
                    d.workspace_path or "/")]
    group = d.id if children else None
    out = [Unit(d.id, d.workspace_path, d.branch, group, d, root_of_workspace=bool(children))]
    for w in children:
        out.append(Unit(groups.child_id(d.id, w.repo_name), w.worktree_path,
                        w.branch or None, group, d))
    return out


def run(ctx: Context, db_path: str) -> tuple[list[Outcome], daemon_db.DaemonDb]:
    """Import every live session of the daemon database at `db_path`.

    ctx: Context (dry_run: nothing is registered or remembered).
    Returns (one Outcome per worktree, the database read). Raises Fatal when the
    database cannot be read or has a schema git-ao does not know (daemon_db.read)."""
    db = daemon_db.read(db_path)
    if db.holds_none is not None:
        # No daemon wrote it (a file made empty, another program's database): no
        # session to import, which is no failure of a shutdown's or boot's import.
        ctx.log("import", None, "no-daemon-sessions", source=db_path, why=db.holds_none)
        return [Outcome(AO, Action.IMPORT, Status.NOTHING,
                        f"'{db_path}' is {db.holds_none}: it holds no ao daemon session; "
                        "nothing imported", only_note=True)], db
    source = os.path.realpath(db_path)
    notes = ctx.store.import_notes(source)
    outcomes, seen = [], set()
    for d in db.sessions:
        if d.problem is not None:
            # A value git-ao does not know: this session only, said once.
            seen.add(d.id)
            o = Outcome(d.id, Action.IMPORT, Status.REFUSED, f"daemon session {d.id}: {d.problem}")
            unit = Unit(d.id, d.workspace_path, d.branch, None, d)
            outcomes.append(said_once(ctx, source, unit.id, o, notes))
            continue
        for u in units(d):
            seen.add(u.id)
            o = _one(ctx, u)
            outcomes.append(said_once(ctx, source, u.id, o, notes))
    if not ctx.dry_run:
        for gone in set(notes) - seen:
            ctx.store.drop_import_note(source, gone)
    return outcomes, db


def _one(ctx: Context, u: Unit) -> Outcome:
    d = u.daemon
    part = f" (part of daemon session {u.group})" if u.group and u.id != u.group else ""
    try:
        validate_id(u.id)
    except AoError as exc:
        return Outcome(u.id, Action.IMPORT, Status.REFUSED, str(exc))
    existing = ctx.store.get(u.id)
    if existing is not None:
        return Outcome(u.id, Action.IMPORT, Status.NOTHING, f"already known ({existing.state}){part}",
                       list_json(existing))
    if not u.path or not os.path.isdir(u.path):
        return Outcome(u.id, Action.IMPORT, Status.REFUSED,
                       f"workspace path {u.path or '(none)'} does not exist{part}")
    if u.root_of_workspace and not linked_root(u.path):
        # A workspace root that is a plain directory holds no work of its own: its
        # repositories' worktrees are the sessions.
        return Outcome(u.id, Action.IMPORT, Status.NOTHING, f"workspace root {u.path} is not a linked "
                       "worktree; its repositories are imported as "
                       f"{groups.child_id(d.id, '<repo>')}")
    try:
        s = register(ctx, u.path, session_id=u.id, kind=d.kind, harness=d.harness,
                               agent_session_id=d.agent_session_id, prompt=d.prompt)
        if not ctx.dry_run:
            ctx.store.set_daemon_facts(s.id, group_id=u.group, session_mode=d.session_mode,
                                       provider_conversation_id=d.provider_conversation_id)
    except AoError as exc:
        return Outcome(u.id, Action.IMPORT, Status.REFUSED, f"{exc}{part}")
    s.group_id, s.session_mode = u.group, d.session_mode
    s.provider_conversation_id = d.provider_conversation_id
    note = ""
    if u.branch and s.branch and u.branch != s.branch:
        note = f" (the daemon said branch {u.branch}; git says {s.branch})"
    ctx.log("import", s.id, "dry-run" if ctx.dry_run else "registered",
            workspace=s.worktree_path, harness=s.harness or None, group=u.group)
    rec = list_json(s)
    return Outcome(s.id, Action.IMPORT, Status.OK,
                   f"{'would register' if ctx.dry_run else 'registered'} {s.kind} "
                   f"at {s.worktree_path}{note}{part}", rec, registered=s)

