"""git ao-preserve: save sessions' uncommitted work and take their worktrees away."""

import os

import click

from .. import lifecycle
from .common import CONTEXT_SETTINGS, check_ids, finish, options, run, usage


@click.command("ao-preserve", context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "all_", is_flag=True,
              help="Every live session of every repository (what shutdown scripts run).")
@click.option("--keep-worktree", is_flag=True,
              help="Take a checkpoint: write the ref but keep the worktree and the session live.")
@click.option("-j", "--jobs", type=click.IntRange(1, 64), default=None, metavar="N",
              help="Sessions handled at once (default: the number of cores).")
@click.option("--timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Start no new session after this many seconds; the rest stay live.")
@options()
def command(app, ids, all_, keep_worktree, jobs, timeout):
    """Capture each session's uncommitted work under refs/ao/preserved/<ID>, record it,
    then remove its linked worktree. With no ID, the session of the current worktree
    (registered first when unknown)."""
    if ids and all_:
        usage("give session ids or --all, not both")
    check_ids(ids)
    ctx = app.ctx
    if all_:
        sessions = [s for s in app.store.sessions() if s.live]
    elif ids:
        sessions = [lifecycle.lookup(ctx, i) for i in ids]
    else:
        sessions = [lifecycle.current_session(ctx, os.getcwd())]
    if not sessions:
        if not app.printer.json_mode and not app.printer.quiet:
            click.echo("nothing to preserve: no live sessions", err=True)
        return finish(app, "preserve", [])
    jobs = jobs or os.cpu_count() or 1
    with app.printer.progress(len(sessions), "preserving") as advance:
        outcomes = lifecycle.preserve(ctx, sessions, keep_worktree=keep_worktree, jobs=jobs,
                                      timeout=timeout, progress=advance)
    return finish(app, "preserve", outcomes)


def main():
    run(command, "git ao-preserve")
