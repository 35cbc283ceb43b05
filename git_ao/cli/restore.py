"""git ao-restore: bring pending sessions back, then relaunch their agents."""

import click

from .common import CONTEXT_SETTINGS, check_ids, complete_ids, finish, options, run


@click.command("ao-restore", context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids("pending"))
@click.option("--no-launch", is_flag=True, help="Do not run the configured relaunch command.")
@options()
def command(app, ids, no_launch):
    """Re-create each pending session's worktree at its recorded path on its branch,
    re-apply the preserved work and mark the session live. With no ID, every
    pending session. Then run the configured relaunch command in each restored
    worktree (or print how to resume the agent)."""
    from .. import lifecycle  # lazily: completion must not import git and sh
    check_ids(ids)
    ctx = app.ctx
    if ids:
        sessions = [lifecycle.lookup(ctx, i) for i in ids]
    else:
        sessions = [s for s in app.store.sessions() if s.pending]
    if not sessions:
        if not app.printer.json_mode and not app.printer.quiet:
            click.echo("nothing to restore: no pending sessions", err=True)
        return finish(app, "restore", [])
    with app.printer.progress(len(sessions), "restoring") as advance:
        outcomes = lifecycle.restore(ctx, sessions, progress=advance)
    if not app.dry_run:
        outcomes += _relaunch_all(app, ctx, outcomes, no_launch)
    return finish(app, "restore", outcomes)


def _relaunch_all(app, ctx, outcomes, no_launch):
    """Restore step 4 for every session that came back: the configured command, or
    the resume hint. Returns the relaunch Outcomes (a failed one exits 1; the
    restore before it stands)."""
    from .. import relaunch
    from ..config import DEFAULT_RELAUNCH_TIMEOUT
    from ..lifecycle import Outcome
    extra = []
    for o in list(outcomes):
        if o.action != "restore" or o.status not in ("ok", "attention"):
            continue
        s = app.store.get(o.session_id)
        if s is None or not s.live:
            continue
        argv = None if no_launch else app.config.relaunch_argv(s.harness)
        if argv is None:
            if s.agent_session_id:
                app.printer.hint(f"resume {s.id}: {s.harness or 'agent'} session "
                                 f"{s.agent_session_id} in {s.workspace_path}")
            continue
        res = relaunch.run(argv, s, o.status,
                           timeout=app.config.get("relaunch.timeout", DEFAULT_RELAUNCH_TIMEOUT))
        ctx.log("relaunch", s.id, "ok" if res.ok else "failed", detail=res.message,
                command=argv[0], returncode=res.returncode, state=res.status)
        r = Outcome(s.id, "relaunch", "ok" if res.ok else "failed", res.message,
                    {"argv0": argv[0], "returncode": res.returncode, "state": res.status})
        app.printer.outcome(r)
        extra.append(r)
    return extra


def main():
    run(command, "git ao-restore")
