"""git ao-restore: bring pending sessions back, then relaunch their agents."""

import os

import click

from .common import CONTEXT_SETTINGS, SignalStop, check_ids, complete_ids, finish, options, run


@click.command("ao-restore", context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids("pending"))
@click.option("--no-launch", is_flag=True, help="Do not run the configured relaunch command.")
@click.option("-j", "--jobs", type=click.IntRange(1, 64), default=None, metavar="N",
              help="Sessions handled at once (default: the number of cores).")
@options()
def command(app, ids, no_launch, jobs):
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
    jobs = jobs or app.config.get("restore.jobs") or os.cpu_count() or 1
    with SignalStop() as signals:
        with app.printer.progress(len(sessions), "restoring") as advance:
            outcomes = lifecycle.restore(ctx, sessions, jobs=jobs, progress=advance,
                                         stop=signals.event)
        if not app.dry_run:
            outcomes += _relaunch_all(app, ctx, outcomes, no_launch, signals.event)
    status = finish(app, "restore", outcomes)
    return signals.interrupted(app, "restore", outcomes, "still pending") or status


def _relaunch_all(app, ctx, outcomes, no_launch, stop):
    """Restore step 4 for every session that came back: the configured command, or
    the resume hint. Once `stop` (a threading.Event) is set by a signal no command
    starts, as with --no-launch. Returns the relaunch Outcomes (a failed one exits
    1; the restore before it stands)."""
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
        # A signal means the machine is going down again: start no agent.
        argv = None if no_launch or stop.is_set() else app.config.relaunch_argv(s.harness)
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
