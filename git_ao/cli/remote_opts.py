"""The remote side of the commands: `git ao-preserve --push`, `git ao-restore
--from --map-path`, `git ao-prune --remote`, and the retry of pending pushes
that every one of them runs (git_ao/remote/pushes.py, git_ao/remote/restore_from.py)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import click

from git_ao.cli.app import (
    SignalStop,
    finish,
    usage,
)
from git_ao.errors import current_directory

# restore --from and prune --remote fetch history, interactively: their bound is
# longer than a shutdown's push.
MIN_FETCH_TIMEOUT = 300


def _push_timeout(app: Any) -> float:
    from git_ao.store.settings import DEFAULT_PUSH_TIMEOUT
    return float(app.settings.get("preserve.pushTimeout", DEFAULT_PUSH_TIMEOUT))


def check_preserve(app: Any, push: str | None, push_branch: bool) -> str | None:
    """The remote `git ao-preserve` pushes to (--push, else preserve.push), checked
    before anything runs (a relative path made absolute); None when pushing is
    off. Raises Usage."""
    from git_ao.remote.pushes import check_remote, resolve_remote
    name = push or app.settings.get("preserve.push")
    if push_branch and not name:
        usage("--push-branch needs --push REMOTE (or the preserve.push setting)")
    return resolve_remote(check_remote(name), current_directory()) if name else None


def pushable(app: Any, sessions: list[Any], name: str | None) -> tuple[list[Any], list[Any]]:
    """The sessions whose repository can push to `name` (all when pushing is off),
    and a refused Outcome, printed here, for each of the others: checked before
    anything is removed."""
    if not name:
        return sessions, []
    from git_ao.remote.pushes import refuse_unpushable
    ok, refused = refuse_unpushable(sessions, name)
    for o in refused:
        app.printer.outcome(o)
    return ok, refused


def after_preserve(app: Any, outcomes: list[Any], name: str | None, push_branch: bool,
                   stop: threading.Event, *, named: bool = False) -> list[Any]:
    """Queue the saves for `name` and push everything pending, one bounded `git
    push` per repository; print and return the push Outcomes. Nothing is pushed
    once a signal asked to stop (the rows stay pending). A push the remote refused
    is tried again for the run's sessions, and for every session when `named`
    (`--push` named the remote, not the preserve.push setting)."""
    from git_ao.remote import pushes
    ctx = app.ctx
    older = pushes.not_current(ctx, outcomes)
    extra = pushes.queue_saves(ctx, outcomes, name, push_branch=push_branch,
                               timeout=_push_timeout(app), older=older) if name else []
    if not stop.is_set():
        said = {o.session_id for o in extra}
        # (`name` is read from the directory the command started in already.)
        about = pushes.concern([o.session_id for o in outcomes],
                               [name] if named and name else [])
        extra += pushes.mark_not_current(
            [o for o in pushes.push_pending(ctx, timeout=_push_timeout(app), about=about)
             if o.session_id not in said], older)
    for o in extra:
        app.printer.outcome(o)
    return extra


def retry_pushes(app: Any, outcomes: Sequence[Any] = (), remote: str | None = None,
                 adopted: Sequence[tuple[str, str, str, str]] = (),
                 here: str | None = None) -> list[Any]:
    """After a restore or a resolve: record the remote deletes of sessions restored
    in full, then push whatever is pending (a push the remote refused: only for
    the sessions of `outcomes` and for `remote`, the one --from names, read from
    `here`); print and return the Outcomes. A dry run says what the real run would
    meet, with the deletes it would record (`adopted`: the sessions --from would
    fetch)."""
    from git_ao.remote import pushes
    ctx = app.ctx
    pushes.queue_restored(ctx, outcomes)
    planned = pushes.planned_deletes(ctx, outcomes, adopted) if app.dry_run else []
    about = pushes.concern([o.session_id for o in outcomes], [remote] if remote else [], here)
    extra = pushes.push_pending(ctx, timeout=_push_timeout(app), about=about, planned=planned)
    for o in extra:
        app.printer.outcome(o)
    return extra


def restore_from(app: Any, ids: tuple[str, ...], name: str | None,
                 map_path: tuple[str, ...], jobs: int, no_launch: bool, *,
                 set_aside_stray: bool = False, bound: float | None = None) -> int:
    """`git ao-restore --from REMOTE`: fetch, adopt, restore, relaunch, then push the
    remote deletes. set_aside_stray, bound: `--set-aside-stray` and `--timeout`
    for the restore. Returns the exit status."""
    from git_ao.agents import relaunch
    from git_ao.remote import restore_from
    if not name:
        usage("--map-path needs --from REMOTE")
    assert name is not None
    try:
        maps = restore_from.maps_from(map_path, app.settings.get("restore.mapPath"))
    except ValueError as exc:
        usage(f"--map-path: {exc}")
    timeout = max(_push_timeout(app), MIN_FETCH_TIMEOUT)
    here = current_directory()
    with SignalStop() as signals:
        with app.printer.progress(max(len(ids), 1), "restoring") as advance:
            outcomes = restore_from.restore_from(app.ctx, here, name, ids, maps,
                                                timeout=timeout, jobs=jobs, progress=advance,
                                                stop=signals.event,
                                                set_aside_stray=set_aside_stray, bound=bound)
        if not app.dry_run:
            outcomes += relaunch.relaunch_all(app.ctx, app.settings, outcomes, no_launch,
                                             signals.event, app.printer.outcome,
                                             app.printer.hint)
        if not signals.event.is_set():
            outcomes += retry_pushes(app, outcomes, name, restore_from.adopted_of(outcomes),
                                     here)
    if not outcomes and not app.printer.json_mode and not app.printer.quiet:
        click.echo(f"nothing to restore: {name} holds no preserve refs", err=True)
    status = finish(app, "restore", outcomes)
    return signals.interrupted(app, "restore", outcomes, "still pending") or status


def prune_remote(app: Any, name: str | None) -> list[Any]:
    """`git ao-prune [--remote REMOTE]`: the pending pushes first, then (with a
    remote) the remote namespace; returns the Outcomes (the caller prints them)."""
    from git_ao.errors import AoError
    from git_ao.outcome import Action, Outcome, Status
    from git_ao.remote import namespace, pushes
    ctx = app.ctx
    # A dry run says the pushes it would make too, and judges the remote as they
    # would leave it: the real run lists the remote after them. A push the remote
    # refused is tried again only for the remote named.
    about = pushes.concern((), [name], current_directory()) if name else pushes.Concern()
    pushed = pushes.push_pending(ctx, timeout=_push_timeout(app), about=about)
    out: list[Any] = list(pushed)
    if name:
        pushes.check_remote(name)
        repos = namespace.repositories_with(ctx.store, name, current_directory())
        if not repos:
            usage(f"no repository here or of any session has a remote '{name}'")
        try:
            out += namespace.prune_remote(ctx, name, repos,
                                          timeout=max(_push_timeout(app), MIN_FETCH_TIMEOUT),
                                          pushed=pushed if app.dry_run else ())
        except AoError as exc:
            out.append(Outcome("-", Action.PRUNE_REMOTE, Status.FAILED,
                               f"cannot clean {name}: {exc}", {"remote": name}))
    return out
