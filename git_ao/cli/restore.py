"""git ao-restore: bring pending sessions back, then relaunch their agents."""


import click

from git_ao.cli.app import (
    App,
)
from git_ao.cli.common import (
    CONTEXT_SETTINGS,
    Command,
    IntRange,
    Seconds,
    complete_entries,
    complete_ids,
    complete_remotes,
    options,
    run,
)


@click.command("ao-restore", cls=Command, context_settings=CONTEXT_SETTINGS)
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids(
    "pending", lambda params, taken: ("live" if not taken else None)
    if params.get("at") is not None else "pending"))
@click.option("--no-launch", is_flag=True, help="Do not run the configured relaunch command.")
@click.option("-j", "--jobs", type=IntRange(1, 64), default=None, metavar="N",
              help="Sessions handled at once (default: two per core, at least 4).")
@click.option("--from", "from_", metavar="REMOTE", default=None, shell_complete=complete_remotes,
              help="Fetch the sessions REMOTE holds (all, or the IDs) and restore them here.")
@click.option("--map-path", multiple=True, metavar="OLD=NEW",
              help="With --from: put a worktree recorded under OLD under NEW (repeatable).")
@click.option("--timeout", type=Seconds(), default=None, metavar="SECONDS",
              help="Start no new session after this many seconds and stop the git "
                   "processes of those in flight; they stay pending.")
@click.option("--set-aside-stray", is_flag=True,
              help="Move a directory found at a recorded path that is not the worktree "
                   "into the trash, then restore there.")
@click.option("--at", "at", metavar="N|COMMIT", default=None, shell_complete=complete_entries,
              help="Bring the live session's worktree to entry N of its history (1 the "
              "newest, see git ao history) or to the entry of COMMIT; the current state is "
              "recorded first, so this can be undone.")
@options(records=True)
def command(app: App, ids: tuple[str, ...], no_launch: bool, jobs: int | None,
            from_: str | None, map_path: tuple[str, ...], timeout: float | None,
            set_aside_stray: bool, at: str | None) -> int:
    """Re-create each pending session's worktree at its recorded path on its branch,
    re-apply the preserved work and mark the session live. With no ID, every
    pending session. Then run the configured relaunch command in each restored
    worktree (or print how to resume the agent)."""
    from git_ao.cli.bodies import restore
    return restore(app, ids, no_launch, jobs, from_, map_path, set_aside_stray, at,
                   timeout=timeout)


def main() -> None:
    run(command, "git ao-restore")
