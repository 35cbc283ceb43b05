"""git ao-restore: bring pending sessions back."""

import click

from .. import lifecycle
from .common import CONTEXT_SETTINGS, check_ids, finish, options, run


@click.command("ao-restore", context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--no-launch", is_flag=True, help="Do not run the configured relaunch command.")
@options()
def command(app, ids, no_launch):
    """Re-create each pending session's worktree at its recorded path on its branch,
    re-apply the preserved work and mark the session live. With no ID, every
    pending session."""
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
        for o in outcomes:
            if o.status in ("ok", "attention") and o.action == "restore":
                s = app.store.get(o.session_id)
                if s and s.agent_session_id:
                    app.printer.hint(f"resume {s.id}: {s.harness or 'agent'} session "
                                     f"{s.agent_session_id} in {s.workspace_path}")
    return finish(app, "restore", outcomes)


def main():
    run(command, "git ao-restore")
