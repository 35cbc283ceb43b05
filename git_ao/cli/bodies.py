"""The bodies of the commands the light entry (entry.py) also runs: `git ao list`
and `git ao-restore`. The click commands call these, and so does the light
entry, so both paths decide and print alike. Nothing here imports click."""

from __future__ import annotations

import os
import sys

from git_ao.cli.app import (
    App,
    SignalStop,
    check_ids,
    existing_dir,
    finish,
    import_first,
    named_sessions,
    usage,
    with_state,
)
from git_ao.errors import ExitStatus, current_directory

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from typing import Any

    from git_ao.outcome import Outcome


def list_sessions(app: App, states: tuple[str, ...], repo_path: str | None,
                  all_: bool) -> int:
    """`git ao list`: the sessions of this repository (of `repo_path`, of every one
    with `all_` or outside a repository) in `states` (all when empty), then the
    hint lines. Returns the exit status."""
    from git_ao.fs.gone import gone_worktree
    from git_ao.manage.listing import (
        holds_less_hint,
        interrupted_at_hint,
        list_json,
        preserve_refs,
        ref_gone_hint,
        removed_by_hint,
        trash_work_hint,
    )
    if all_ and repo_path:
        usage("give --repo or --all, not both")
    sessions = app.store.sessions()
    repo = None if all_ else _repo_of(repo_path, {s.common_dir for s in sessions})
    shown = [s for s in sessions if repo is None or s.common_dir == repo]
    hidden = len(sessions) - len(shown)
    refs = preserve_refs(shown)
    records: list[dict[str, Any]] = [{**list_json(s, refs, app.store.dir)}
                                          for s in shown]
    listed = {r["id"] for r in records if not states or r["state"] in states}
    app.printer.sessions([r for r in records if r["id"] in listed])
    for s in shown:
        gone = gone_worktree(s) if s.id in listed else None
        if gone is not None:
            from git_ao.save import history  # only for a worktree gone: a listing needs none
            app.printer.hint(f"{s.id}: {history.gone_advice(gone, s, sessions)}")
        removed = removed_by_hint(s) if s.id in listed else ""
        if removed:
            app.printer.hint(f"{s.id}: {removed}")
        less = holds_less_hint(s) if s.id in listed else ""
        if less:
            app.printer.hint(f"{s.id}: {less}")
        lost = ref_gone_hint(s, app.store.dir, refs) if s.id in listed else ""
        if lost:
            app.printer.hint(f"{s.id}: {lost}")
        half = interrupted_at_hint(app.store.dir, s) if s.id in listed else ""
        if half:
            app.printer.hint(f"{s.id}: {half}")
        copy = trash_work_hint(s, app.store.dir) if s.id in listed else ""
        if copy:
            app.printer.hint(f"{s.id}: {copy}")
    if hidden and repo_path is None and not app.printer.quiet and not app.printer.json_mode:
        app.printer.hint(f"{hidden} session(s) of other repositories not listed; "
                         "'git ao list --all' lists them")
    if repo is not None and repo in refs and repo_path is None:
        # The notice every command gives, from the refs read above.
        from git_ao.manage.unrecorded import unrecorded_here
        app.refs_noticed = True
        notice = unrecorded_here(existing_dir(app.where), lambda: app.store, refs[repo])
        if notice:
            app.printer.error("warning", notice)
    return ExitStatus.OK


def _repo_of(path: str | None, recorded: set[str]) -> str | None:
    """The repository (its common git dir, as sessions record it) at `path`; with no
    path, the one the command runs in, or None outside any (then every session).
    Read from git's files when they name one of the `recorded` common dirs, or
    no repository at all, and nothing in the environment, the owner or a file
    system boundary could make git answer otherwise (no process then, nor the
    modules that run one); else from git."""
    from git_ao import gitfiles
    here = current_directory()
    by_files = path is None and not any(os.environ.get(v) for v in _DISCOVERY_ENV)
    found = gitfiles.discover(here) if by_files else None
    if by_files and found is None:
        return None  # no `.git` nor git dir above: git's discovery finds none either
    if found is not None:
        common = gitfiles.discovered_as_git_would(here, found)
        if common is not None and common in recorded:
            return common
    from git_ao import git
    from git_ao.errors import Fatal
    try:
        dirs = git.repo_dirs(path or current_directory())
    except Fatal:
        if path is not None:
            raise
        return None
    return os.path.realpath(dirs.common_dir)


_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                  "GIT_DISCOVERY_ACROSS_FILESYSTEM")


def restore(app: App, ids: tuple[str, ...], no_launch: bool, jobs: int | None,
            from_: str | None, map_path: tuple[str, ...], set_aside_stray: bool,
            at: str | None, *, timeout: float | None = None) -> int:
    """`git ao-restore`: see its click command. timeout: `--timeout` seconds (None:
    the restore.timeout setting, else no bound). Returns the exit status."""
    from git_ao.outcome import Action
    check_ids(ids)
    if at is not None:
        return _restore_at(app, ids, at, from_ or map_path)
    jobs = jobs or app.settings.get("restore.jobs")
    if timeout is None:
        timeout = app.settings.get("restore.timeout")
    if from_ or map_path:
        from git_ao.batch import default_jobs
        from git_ao.cli import remote_opts
        return remote_opts.restore_from(app, ids, from_, map_path, jobs or default_jobs(),
                                        no_launch, set_aside_stray=set_aside_stray,
                                        bound=timeout)
    refused: list[Outcome] = []
    if ids:
        sessions, refused = named_sessions(app, ids, Action.RESTORE)
    else:
        refused += [o for o in import_first(app) if o.status != "nothing"]
        known = app.store.sessions()
        # Not a save whose worktree its tool removed on purpose: a restore naming it.
        sessions = [s for s in known if s.save is not None and s.save.restores_by_default]
        for s in known:
            if s.pending and s.save is not None and not s.save.restores_by_default:
                from git_ao.manage.listing import left_pending
                left = left_pending(s)
                app.printer.outcome(left)
                refused.append(left)
        from git_ao.fs.gone import gone_worktree
        if any(gone_worktree(s) is not None for s in known):
            # here: a boot with every worktree where it was loads no workflow module
            from git_ao.context import gone_live
            for o in gone_live(known):
                app.printer.outcome(o)
                refused.append(o)
    if not sessions:
        if not refused and not app.printer.json_mode and app.store.new:
            # A boot after the data dir was lost, or a new home directory: the work
            # may still be in preserve refs no record knows. Said also with -q.
            app.printer.error("warning", f"the database is new ({app.store.db_path} did not "
                              "exist): if sessions were saved before the data dir was lost, "
                              "git ao doctor --recover finds their preserve refs (it "
                              "searches the home directory; -C REPO or DIR names others)")
        if not refused and not app.printer.json_mode and not app.printer.quiet:
            sys.stderr.write("nothing to restore: no pending sessions\n")
            from git_ao.manage.doctor import empty_database_hint
            hint = empty_database_hint(app.store)
            if hint:
                sys.stderr.write(f"hint: {hint}\n")
                app.refs_noticed = True
        return finish(app, "restore", refused)
    # Only now the restore code: with nothing pending (a boot) it is never run.
    from git_ao.agents import relaunch
    from git_ao.batch import default_jobs
    from git_ao.cli import remote_opts
    from git_ao.restore import workflow
    jobs = jobs or default_jobs()
    ctx = app.ctx
    with SignalStop() as signals:
        with app.printer.progress(len(sessions), "restoring") as advance:
            outcomes = refused + workflow.restore(ctx, sessions, jobs=jobs,
                                                 progress=with_state(app, advance),
                                                 stop=signals.event,
                                                 set_aside_stray=set_aside_stray,
                                                 timeout=timeout)
        if not app.dry_run:
            outcomes += relaunch.relaunch_all(ctx, app.settings, outcomes, no_launch,
                                             signals.event, app.printer.outcome,
                                             app.printer.hint)
        outcomes += remote_opts.retry_pushes(app, outcomes)
    status = finish(app, "restore", outcomes)
    return signals.interrupted(app, "restore", outcomes, "still pending") or status


def _restore_at(app: App, ids: tuple[str, ...], at: str, remote: object) -> int:
    """`git ao-restore [ID] --at N|COMMIT`: one live session (with no ID, the one
    whose worktree holds the current directory) takes that history entry's state."""
    from git_ao.batch import guarded
    from git_ao.cli.app import usage
    from git_ao.cli.common import session_here
    from git_ao.outcome import Action
    from git_ao.restore.at import restore_at
    if remote:
        usage("--at restores a live session from its own history; it takes no --from")
    if len(ids) > 1:
        usage("--at takes one session id")
    if not at.strip():
        usage("--at needs an entry number or a commit")
    sid = ids[0] if ids else session_here(app, "git ao-restore ID --at N").id
    o = guarded(lambda: restore_at(app.ctx, sid, at), sid, Action.RESTORE, app.ctx)
    app.printer.outcome(o)
    return finish(app, "restore", [o])


def checkpoint(app: App, ids: tuple[str, ...], all_: bool, trigger: str,
               hook_input: bool) -> int:
    """`git ao checkpoint`: each named session (every live one with `all_`, the one
    whose worktree holds the hook's "cwd" with `hook_input`, else the current
    worktree's) appended to its history with `trigger`. Returns the exit status."""
    if sum(map(bool, (ids, all_, hook_input))) > 1:
        usage("give session ids, --all or --hook-input, not more than one")
    from git_ao.outcome import Action, Outcome, Status
    from git_ao.preserve import checkpoint as cp
    check_ids(ids)
    refused: list[Outcome] = []
    if hook_input:
        from git_ao.cli.entry import cwd_of
        from git_ao.cli.entry import hook_input as read_input
        from git_ao.errors import AoError
        try:
            doc = read_input(sys.stdin.buffer.read())
            where = cwd_of(doc) or current_directory()
        except ValueError as exc:
            where = None
            outcomes = [Outcome("-", Action.CHECKPOINT, Status.NOTHING,
                                f"the hook's input names no directory ({exc}): nothing to do")]
        if where is not None:
            from git_ao.importers.claude_hook import checkpoint_session
            try:
                s = checkpoint_session(app.ctx, doc, where)
            except AoError as exc:
                outcomes = [Outcome("-", Action.CHECKPOINT, Status.NOTHING, f"{where}: {exc}")]
            else:
                outcomes = cp.checkpoint(app.ctx, [s], trigger=trigger)
        if where is None:
            # Exit 0 as documented (never a failed turn), but input that names no
            # directory goes to the log, which the page says has what happened. A
            # directory in no linked worktree is not logged: a session in the main
            # worktree runs the hook after every turn.
            import contextlib
            # A log that cannot be written (a damaged data dir) fails no turn.
            with contextlib.suppress(Exception):
                app.ctx.log("hook", None, "hook-input-refused", reason=outcomes[0].message)
        for o in outcomes:
            app.printer.outcome(o)
        # A refusal or failure says so (1, or 3 for attention), as the command does; a
        # tool's hook runner shows it without failing the turn (never 2, which blocks
        # in Claude Code). No session at that directory is nothing to do (0).
        return finish(app, "checkpoint", outcomes)
    if all_:
        sessions = [s for s in app.store.sessions() if s.live]
    elif ids:
        sessions, refused = named_sessions(app, ids, Action.CHECKPOINT)
    else:
        # Here only: a session named or --all needs no registering module.
        from git_ao.manage.register import current_session
        sessions = [current_session(app.ctx, current_directory(), "git ao checkpoint ID")]
    outcomes = cp.checkpoint(app.ctx, sessions, trigger=trigger)
    for o in outcomes:
        app.printer.outcome(o)
    return finish(app, "checkpoint", refused + outcomes)
