"""git ao-prune: clean up without ever losing work."""

import click

from git_ao.cli import remote_opts
from git_ao.cli.app import (
    App,
    check_ids,
    finish,
    usage,
)
from git_ao.cli.common import (
    CONTEXT_SETTINGS,
    USAGE,
    Command,
    complete_ids,
    complete_remotes,
    options,
    run,
)

# The ids are taken with --force only: -h says so rather than offer `[<id>...]`.
USAGE["git ao-prune"] = ("[<options>]", "--force [<options>] <id>...")


@click.command("ao-prune", cls=Command, context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids(
    "all", lambda params, _taken: "all" if params.get("force") else None))
@click.option("--expire", metavar="WHEN", default=None, shell_complete=lambda c, p, i: [
    w for w in ("now", "never", "1.day.ago", "1.week.ago", "2.weeks.ago") if w.startswith(i)],
              help="Delete only trash older than WHEN, a git date (default: prune.expire, else "
              "2.weeks.ago; now: all of it; never: none).")
@click.option("--force", is_flag=True,
              help="Delete the preserve refs, records and trash of the sessions named, pending "
              "or not (nothing else is pruned).")
@click.option("--remote", metavar="REMOTE", default=None, shell_complete=complete_remotes,
              help="Also delete REMOTE's preserve refs whose work is provably elsewhere.")
@options(records=True)
def command(app: App, ids: tuple[str, ...], expire: str | None, force: bool,
            remote: str | None) -> int:
    """Clean what can be cleaned without losing work: records of vanished repositories
    and of terminated sessions with nothing pending, stale worktree registrations,
    leftover temporary index files, the trash. A preserve ref goes only when its work
    is provably elsewhere, or when named with --force."""
    from git_ao.manage import prune  # lazily: completion must not import the git modules
    check_ids(ids)
    if ids and not force:
        usage("naming sessions needs --force (it deletes their preserve refs)")
    if force and not ids:
        usage("--force needs the session ids it applies to")
    from git_ao.git.query import expiry_date
    if expire is not None:
        expire_before = expiry_date(expire)
    else:
        expire, expire_before = _trash_expiry(app)
    if expire_before == 0:
        expire_before = -1  # never: nothing is old enough
    keep = app.settings.get("history.keep")
    max_age: float | None = _configured_expiry(app, "history.maxAge")
    if max_age is None and app.settings.get("history.maxAge") in ("now", "all"):
        import time
        max_age = time.time()  # everything has expired: only the newest entry stays
    outcomes = prune.prune(app.ctx, expire_before=expire_before, force_ids=ids,
                           history_keep=keep, history_before=max_age or None,
                           expire_text=expire)
    outcomes += remote_opts.prune_remote(app, remote)
    for o in outcomes:
        app.printer.outcome(o)
    if not outcomes and not app.printer.json_mode and not app.printer.quiet:
        click.echo("nothing to prune", err=True)
    return finish(app, "prune", outcomes)


def _configured_expiry(app: App, key: str) -> int | None:
    """The date setting `key` (prune.expire, history.maxAge) parsed as git does; a
    value git cannot parse (set by hand in the file) is warned about and ignored,
    like any bad value there."""
    from git_ao.errors import Usage
    from git_ao.git.query import expiry_date
    value = app.settings.get(key)
    if not value:
        return None
    try:
        return expiry_date(value)
    except Usage as exc:
        app.printer.error("warning", f"{key} ignored: {exc}")
        return None


def _trash_expiry(app: App) -> tuple[str, int | None]:
    """(text, epoch seconds or None) of the prune.expire setting parsed as git
    does, else of the default grace period (settings.DEFAULT_PRUNE_EXPIRE); a value
    git cannot parse (set by hand in the file) is warned about and the default
    used, like any bad value there."""
    from git_ao.errors import Usage
    from git_ao.git.query import expiry_date
    from git_ao.store.settings import DEFAULT_PRUNE_EXPIRE
    value = app.settings.get("prune.expire")
    if value:
        try:
            return value, expiry_date(value)
        except Usage as exc:
            app.printer.error("warning", f"prune.expire ignored: {exc}")
    return DEFAULT_PRUNE_EXPIRE, expiry_date(DEFAULT_PRUNE_EXPIRE)


def main() -> None:
    run(command, "git ao-prune")
