"""git ao: list, show, register and check sessions."""

import os

import click

from .. import __version__, git, lifecycle
from .common import CONTEXT_SETTINGS, check_ids, finish, options, run


@click.group("ao", context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="git-ao",
                      message="%(prog)s version %(version)s")
def group():
    """Preserve and restore AI coding-agent sessions that live in git linked worktrees.

    The lifecycle commands are git ao-preserve, git ao-restore and git ao-prune."""


@group.command("list", context_settings=CONTEXT_SETTINGS)
@options(changes=False)
def list_(app):
    """List every session: id, kind, harness, state, branch, workspace path, preserved work."""
    records = [lifecycle.list_json(s) for s in app.store.sessions()]
    app.printer.sessions(records)
    return 0


@group.command("show", context_settings=CONTEXT_SETTINGS)
@click.argument("session_id", metavar="ID")
@options(changes=False)
def show(app, session_id):
    """Show one session's facts and its preserved changes (as git stash show --stat
    --include-untracked lists them)."""
    s = lifecycle.lookup(app.ctx, session_id)
    rec = lifecycle.list_json(s)
    stat = lifecycle.show_stat(s)
    if app.printer.json_mode:
        app.printer.emit_json("show", session=rec, stat=stat)
        return 0
    app.printer.facts([(k, v) for k, v in rec.items()], stat)
    return 0


@group.command("add", context_settings=CONTEXT_SETTINGS)
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--id", "session_id", metavar="ID", help="Session id (default: the worktree's name).")
@click.option("--kind", type=click.Choice(lifecycle.KINDS), default="worker", show_default=True,
              help="worker or orchestrator; both are treated alike.")
@click.option("--harness", default="", metavar="NAME", help="The agent program, e.g. claude-code.")
@click.option("--agent-session-id", metavar="ID", help="The agent's own session id, for resuming.")
@click.option("--prompt", metavar="TEXT", help="The task given to the agent (never logged).")
@options()
def add(app, path, session_id, kind, harness, agent_session_id, prompt):
    """Register an existing linked worktree (default: the current one) as a live session."""
    s = lifecycle.register(app.ctx, path or os.getcwd(), session_id=session_id, kind=kind,
                           harness=harness, agent_session_id=agent_session_id, prompt=prompt)
    o = lifecycle.Outcome(s.id, "add", "ok",
                          f"{'would register' if app.dry_run else 'registered'} {s.kind} "
                          f"at {s.workspace_path}", lifecycle.list_json(s))
    app.printer.outcome(o)
    return finish(app, "add", [o])


@group.command("kill", context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@options()
def kill(app, ids):
    """End sessions: remove each worktree only when it is clean, and mark the session
    terminated with nothing pending (restore never brings it back)."""
    check_ids(ids)
    outcomes = []
    for sid in ids:
        o = lifecycle._guarded(lambda: lifecycle.kill(app.ctx, sid), sid, "kill")
        app.printer.outcome(o)
        outcomes.append(o)
    return finish(app, "kill", outcomes)


@group.command("forget", context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.option("--force", is_flag=True, help="Drop the record even while work is pending "
              "(the preserve ref is kept).")
@options()
def forget(app, ids, force):
    """Drop session records; refuses while work is pending unless --force."""
    check_ids(ids)
    outcomes = []
    for sid in ids:
        o = lifecycle._guarded(lambda: lifecycle.forget(app.ctx, sid, force), sid, "forget")
        app.printer.outcome(o)
        outcomes.append(o)
    return finish(app, "forget", outcomes)


@group.command("doctor", context_settings=CONTEXT_SETTINGS)
@options(changes=False)
def doctor(app):
    """Check git, the data dir, the database and the known repositories."""
    from .. import doctor as doc
    checks = doc.run_checks(app)
    if app.printer.json_mode:
        app.printer.emit_json("doctor", checks=[c._asdict() for c in checks])
    else:
        for c in checks:
            click.echo(f"{'ok' if c.ok else 'problem':>7}  {c.name}: {c.detail}")
    return 0 if all(c.ok for c in checks) else 1


def main():
    run(group, "git ao")
