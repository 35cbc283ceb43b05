"""git ao-preserve: save sessions' uncommitted work and take their worktrees away."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from git_ao.cli import remote_opts
from git_ao.cli.app import (
    App,
    SignalStop,
    check_ids,
    finish,
    import_first,
    named_sessions,
    usage,
    with_state,
    would_register,
)
from git_ao.cli.common import (
    CONTEXT_SETTINGS,
    Command,
    IntRange,
    Seconds,
    complete_ids,
    complete_remotes,
    options,
    run,
)
from git_ao.errors import current_directory
from git_ao.outcome import Action, Outcome

if TYPE_CHECKING:
    from git_ao.store.records import Session


@click.command("ao-preserve", cls=Command, context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids(
    "live", lambda params, _taken: None if params.get("all_") else "live"))
@click.option("--all", "all_", is_flag=True,
              help="Every live session of every repository (what shutdown scripts run).")
@click.option("--keep-worktree", is_flag=True,
              help="Take a checkpoint: write the ref but keep the worktree and the session live.")
@click.option("-j", "--jobs", type=IntRange(1, 64), default=None, metavar="N",
              help="Sessions handled at once (default: two per core, at least 4).")
@click.option("--timeout", type=Seconds(), default=None, metavar="SECONDS",
              help="Start no new session after this many seconds; the rest stay live.")
@click.option("--push", metavar="REMOTE", default=None, shell_complete=complete_remotes,
              help="Then push each saved preserve ref to REMOTE (default: preserve.push).")
@click.option("--push-branch", is_flag=True,
              help="With --push: push each session's branch too (never forced).")
@options(records=True)
def command(app: App, ids: tuple[str, ...], all_: bool, keep_worktree: bool, jobs: int | None,
            timeout: float | None, push: str | None, push_branch: bool) -> int:
    """Capture each session's uncommitted work under refs/ao/preserved/<ID>, record it,
    then remove its linked worktree. With no ID, the session of the current worktree
    (registered first when unknown)."""
    if ids and all_:
        usage("give session ids or --all, not both")
    # lazily: completion must not import the git modules
    from git_ao.batch import guarded
    from git_ao.manage.register import current_session
    from git_ao.preserve import workflow as preserve
    check_ids(ids)
    named = push is not None
    push = remote_opts.check_preserve(app, push, push_branch)
    ctx = app.ctx
    refused: list[Outcome] = []
    unsaved: dict[str, Session] = {}
    if all_:
        imported = import_first(app)
        refused += [o for o in imported if o.status != "nothing"]
        if timeout is None:
            timeout = app.settings.get("preserve.timeout")
        sessions, timeout = _after_restores(app, timeout)
        if app.dry_run:
            # A dry run registers nothing: what the real run would import, it
            # judges as the real run would preserve it.
            unsaved = would_register(app, imported)
            sessions += list(unsaved.values())
    elif ids:
        sessions, refused = named_sessions(app, ids, Action.PRESERVE)
    else:
        sessions = [current_session(ctx, current_directory(), "git ao-preserve ID")]
        sessions, refused = remote_opts.pushable(app, sessions, push)
        if sessions and app.dry_run and app.store.get(sessions[0].id) is None:
            # The real run registers it first; a dry run registers nothing.
            o = guarded(lambda: preserve.preserve_one(
                ctx, sessions[0].id, keep_worktree, unsaved=sessions[0]), sessions[0].id,
                Action.PRESERVE, ctx)
            app.printer.outcome(o)
            return finish(app, "preserve", [o])
    if all_ or ids:
        sessions, unpushable = remote_opts.pushable(app, sessions, push)
        refused += unpushable
    if not sessions:
        if not refused and not app.printer.json_mode and not app.printer.quiet:
            click.echo("nothing to preserve: no live sessions", err=True)
        return finish(app, "preserve", refused)
    from git_ao.batch import default_jobs
    jobs = jobs or app.settings.get("preserve.jobs") or default_jobs()
    if timeout is None:
        timeout = app.settings.get("preserve.timeout")
    with SignalStop() as signals, app.printer.progress(len(sessions), "preserving") as advance:
        outcomes = refused + preserve.preserve(
            ctx, sessions, keep_worktree=keep_worktree, jobs=jobs, timeout=timeout,
            progress=with_state(app, advance), stop=signals.event, settings=app.settings,
            shutdown=all_, unsaved=unsaved, pushing=push is not None)
        outcomes += remote_opts.after_preserve(app, outcomes, push, push_branch, signals.event,
                                               named=named)
    if all_:
        _say_unregistered(app, list(unsaved.values()))
    status = finish(app, "preserve", outcomes)
    return signals.interrupted(app, "preserve", outcomes, "still live") or status


def _after_restores(app: App, timeout: float | None) -> tuple[list[Session], float | None]:
    """The sessions `--all` preserves, chosen once no git ao-restore runs (one
    running turns pending sessions live as it goes: chosen before, they would stay
    live, unsaved, unnamed). Waits for the restore-run lock at most `timeout` (or
    the lock's default) seconds, then chooses anyway, saying so. Returns them and
    what is left of `timeout`."""
    from git_ao.errors import Refused
    from git_ao.preserve import workflow as preserve
    from git_ao.store import locks
    if app.dry_run:
        return preserve.sessions_for_all(app.store), timeout
    started = time.monotonic()
    wait = min(timeout, locks.DEFAULT_TIMEOUT) if timeout is not None else locks.DEFAULT_TIMEOUT
    try:
        with locks.restore_run(app.store.dir, shared=False, timeout=wait):
            sessions = preserve.sessions_for_all(app.store)
    except Refused:
        sessions = preserve.sessions_for_all(app.store)
        click.echo(f"warning: a git ao-restore still runs after {wait:g}s; the sessions it "
                   "brings back from now on stay live, unsaved: run git ao-preserve --all "
                   "again once it is over", err=True)
    if timeout is not None:
        timeout = max(timeout - (time.monotonic() - started), 0.0)
    return sessions, timeout


def _say_unregistered(app: App, importing: list[Session]) -> None:
    """At shutdown, name the linked worktrees of the known repositories that no
    session holds: --all does not save them. importing: on a dry run, the sessions
    its import would register (the real run's import has registered them), whose
    worktrees are saved. A warning, also with -q (the journal of a shutdown keeps
    stderr), and a log line; not a failure."""
    from git_ao.manage.register import unrecordable
    from git_ao.preserve import workflow as preserve
    verb = "would not be saved" if app.dry_run else "were not saved"
    for repo, paths in preserve.unregistered(app.store, importing).items():
        odd = [p for p in paths if unrecordable(p)]
        if len(odd) < len(paths):
            app.printer.error("warning", f"{repo}: linked worktrees no session holds {verb}: "
                              f"{', '.join(p for p in paths if p not in odd)} ('git ao add "
                              "--all' in the repository registers them)")
        if odd:
            app.printer.error("warning", f"{repo}: linked worktrees git-ao cannot record "
                              f"{verb}: {', '.join(odd)} (a newline or bytes not in UTF-8 in "
                              "the path: git worktree move each one, then git ao add it)")
        app.ctx.log("preserve", None, "unregistered", repository=repo, worktrees=len(paths))


def main() -> None:
    run(command, "git ao-preserve")
