"""git ao-restore: bring pending sessions back, then relaunch their agents."""

import os

import click

from git_ao.cli import remote_opts
from git_ao.cli.common import (
    CONTEXT_SETTINGS,
    App,
    Command,
    IntRange,
    SignalStop,
    check_ids,
    complete_ids,
    complete_remotes,
    finish,
    import_first,
    named_sessions,
    options,
    run,
    with_state,
)
from git_ao.outcome import Action, Outcome


@click.command("ao-restore", cls=Command, context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids("pending"))
@click.option("--no-launch", is_flag=True, help="Do not run the configured relaunch command.")
@click.option("-j", "--jobs", type=IntRange(1, 64), default=None, metavar="N",
              help="Sessions handled at once (default: the number of cores).")
@click.option("--from", "from_", metavar="REMOTE", default=None, shell_complete=complete_remotes,
              help="Fetch the sessions REMOTE holds (all, or the IDs) and restore them here.")
@click.option("--map-path", multiple=True, metavar="OLD=NEW",
              help="With --from: put a worktree recorded under OLD under NEW (repeatable).")
@click.option("--set-aside-stray", is_flag=True,
              help="Move a directory found at a recorded path that is not the worktree "
                   "into the trash, then restore there.")
@click.option("--at", "at", metavar="N|COMMIT", default=None,
              help="Bring the live session's worktree to entry N of its history (1 the "
              "newest, see git ao history) or to the entry of COMMIT; the current state is "
              "recorded first, so this can be undone.")
@options(records=True)
def command(app: App, ids: tuple[str, ...], no_launch: bool, jobs: int | None,
            from_: str | None, map_path: tuple[str, ...], set_aside_stray: bool,
            at: str | None) -> int:
    """Re-create each pending session's worktree at its recorded path on its branch,
    re-apply the preserved work and mark the session live. With no ID, every
    pending session. Then run the configured relaunch command in each restored
    worktree (or print how to resume the agent)."""
    from git_ao.agents import relaunch
    from git_ao.restore import target

    # lazily: completion must not import the git modules
    from git_ao.restore import workflow as restore
    check_ids(ids)
    if at is not None:
        return _restore_at(app, ids, at, from_ or map_path)
    jobs = jobs or app.settings.get("restore.jobs") or os.cpu_count() or 1
    if from_ or map_path:
        return remote_opts.restore_from(app, ids, from_, map_path, jobs, no_launch)
    ctx = app.ctx
    refused: list[Outcome] = []
    if ids:
        sessions, refused = named_sessions(app, ids, Action.RESTORE)
    else:
        refused += [o for o in import_first(app) if o.status != "nothing"]
        known = app.store.sessions()
        sessions = [s for s in known if s.pending]
        for o in target.gone_live(known):
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
            click.echo("nothing to restore: no pending sessions", err=True)
            from git_ao.manage.doctor import empty_database_hint
            hint = empty_database_hint(app.store)
            if hint:
                click.echo(f"hint: {hint}", err=True)
                app.refs_noticed = True
        return finish(app, "restore", refused)
    with SignalStop() as signals:
        with app.printer.progress(len(sessions), "restoring") as advance:
            outcomes = refused + restore.restore(ctx, sessions, jobs=jobs,
                                                 progress=with_state(app, advance),
                                                 stop=signals.event,
                                                 set_aside_stray=set_aside_stray)
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
    from git_ao import git
    from git_ao.batch import guarded
    from git_ao.cli.common import usage
    from git_ao.restore.at import restore_at
    if remote:
        usage("--at restores a live session from its own history; it takes no --from")
    if len(ids) > 1:
        usage("--at takes one session id")
    if not at.strip():
        usage("--at needs an entry number or a commit")
    if ids:
        sid = ids[0]
    else:
        top = git.repo_dirs(os.getcwd()).toplevel
        found = [s for s in app.store.sessions()
                 if top and s.live and s.worktree_path == os.path.realpath(top)]
        if not found:
            usage("name the session: the current directory is in no live session's worktree")
        sid = found[0].id
    o = guarded(lambda: restore_at(app.ctx, sid, at), sid, Action.RESTORE)
    app.printer.outcome(o)
    return finish(app, "restore", [o])


def main() -> None:
    run(command, "git ao-restore")
