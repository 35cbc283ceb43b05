"""git ao: list, show, register, end and check sessions; config, log, completion, import."""

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from git_ao import __version__
from git_ao.cli.app import (
    App,
    check_ids,
    finish,
    usage,
)
from git_ao.cli.common import (
    CONTEXT_SETTINGS,
    Choice,
    Group,
    IntRange,
    ValueCommand,
    complete_ids,
    options,
    run,
    short_help_option,
)
from git_ao.errors import ExitStatus, current_directory
from git_ao.outcome import Action, Outcome
from git_ao.store.states import KINDS, STATES

if TYPE_CHECKING:
    from git_ao.context import Context
    from git_ao.store.records import Session


@click.group("ao", cls=Group, context_settings=CONTEXT_SETTINGS)
@short_help_option()
@click.version_option(__version__, "--version", prog_name="git-ao",
                      message="%(prog)s version %(version)s")
def group() -> None:
    """Preserve and restore AI coding-agent sessions that live in git linked worktrees.

    The lifecycle commands are git ao-preserve, git ao-restore and git ao-prune."""




@group.command("list", context_settings=CONTEXT_SETTINGS,
               short_help="List the sessions and their state.")
@click.option("--state", "states", multiple=True, type=Choice(STATES), metavar="STATE",
              help="Only sessions in STATE: live, attention, pending or terminated "
              "(repeatable).")
@click.option("--repo", "repo_path", metavar="PATH", type=click.Path(file_okay=False),
              help="Only the sessions of the repository at PATH.")
@click.option("--all", "all_", is_flag=True,
              help="The sessions of every repository (the default outside a repository).")
@options(changes=False, records=True)
def list_(app: App, states: tuple[str, ...], repo_path: str | None, all_: bool) -> int:
    """List the sessions of this repository (of every one with --all, or outside a
    repository): id, kind, harness, state, branch, workspace path, preserved work."""
    from git_ao.cli.bodies import list_sessions
    return list_sessions(app, states, repo_path, all_)


@group.command("show", context_settings=CONTEXT_SETTINGS,
               short_help="Show one session's facts and its saved changes.")
@click.argument("session_id", metavar="ID", shell_complete=complete_ids("all"))
@options(changes=False)
def show(app: App, session_id: str) -> int:
    """Show one session's facts and its preserved changes (as git stash show --stat
    --include-untracked lists them)."""
    from git_ao.context import lookup
    from git_ao.manage.listing import (
        holds_less_hint,
        interrupted_at_hint,
        list_json,
        ref_gone_hint,
        removed_by_hint,
        saved_commit_gone,
        show_stat,
        trash_kept,
        trash_work_hint,
    )
    from git_ao.save.daemon_refs import kept_refs
    s = lookup(app.ctx, session_id)
    # The show record: the list record and what only show prints.
    rec: dict[str, Any] = {**list_json(s, data_dir=app.ctx.store.dir)}
    # Commits of the daemon's that a preserve moved aside rather than replace.
    rec["daemon_refs"] = [f"{ref} {oid}" for ref, oid in kept_refs(s.common_dir, s.id)] \
        if os.path.isdir(s.common_dir) else []
    kept = trash_kept(s, app.ctx.store.dir)
    rec["trash"] = [f"{t['path']} ({t['kind']}, {t['size']} bytes, {t['ignored_count']} "
                    f"ignored: {' '.join(t['ignored'][:10]) or '-'})" for t in kept] \
        if not app.printer.json_mode else kept
    rec["history"] = _history_facts(s, app.printer.json_mode)
    stat = show_stat(s)
    gone = saved_commit_gone(s)
    if app.printer.json_mode:
        app.printer.emit_json("show", session=rec, stat=stat, commit_gone=gone)
        return ExitStatus.FAILED if gone else ExitStatus.OK
    app.printer.facts([(k, ", ".join(v) if isinstance(v, list) else v)
                       for k, v in rec.items()], stat)
    removed = removed_by_hint(s)
    if removed:
        app.printer.hint(removed)
    less = holds_less_hint(s)
    if less:
        app.printer.hint(less)
    lost = ref_gone_hint(s, app.ctx.store.dir)
    if gone:
        # The facts still name the commit: say plainly that the work is not there,
        # then (the hint) what the trash copy still holds.
        app.printer.error("error", f"the saved commit {rec['preserved_commit']} is gone from "
                          f"{s.common_dir} (its ref was deleted and git gc pruned it); this "
                          "session's saved work cannot be shown from it")
        if lost:
            app.printer.hint(lost)
        return ExitStatus.FAILED
    if lost:
        app.printer.hint(lost)
    half = interrupted_at_hint(app.ctx.store.dir, s)
    if half:
        app.printer.hint(half)
    copy = trash_work_hint(s, app.ctx.store.dir)
    if copy:
        app.printer.hint(copy)
    return ExitStatus.OK


def _history_facts(s: Any, json_mode: bool) -> Any:
    """The history's length and the bytes only it keeps, for `git ao show`."""
    from git_ao.save import history
    if not os.path.isdir(s.common_dir):
        return None
    count = len(history.entries(s.common_dir, s.id))
    size = history.size_bytes(s.common_dir, s.id) if count else 0
    if json_mode:
        return {"ref": history.history_ref(s.id), "entries": count, "bytes": size}
    if not count:
        return "no entries"
    return f"{count} entr{'y' if count == 1 else 'ies'}, {size if size is not None else '?'} " \
        f"bytes only it keeps ({history.history_ref(s.id)}; git ao history {s.id})"


@group.command("history", context_settings=CONTEXT_SETTINGS,
               short_help="List a session's history, newest first.")
@click.argument("session_id", metavar="[ID]", required=False,
                shell_complete=complete_ids("all"))
@options(changes=False, records=True)
def history_(app: App, session_id: str | None) -> int:
    """List the session's history, newest first, numbered from 1: time, trigger
    (checkpoint, preserve, restore, timer, hook), the save's commit and the counts
    of changed and untracked paths. With no ID, the session of the current
    worktree. git ao-restore ID --at N brings one back."""
    from git_ao.cli.common import session_here
    from git_ao.context import lookup
    from git_ao.errors import Refused
    from git_ao.save import history
    s = lookup(app.ctx, session_id) if session_id else session_here(app, "git ao history ID")
    if not os.path.isdir(s.common_dir):
        raise Refused(f"repository {s.common_dir} is gone")
    entries = [e.as_json() for e in history.entries(s.common_dir, s.id)]
    if app.printer.json_mode:
        app.printer.emit_json("history", id=s.id, ref=history.history_ref(s.id),
                              entries=entries)
        return 0
    app.printer.history(entries)
    if not entries and not app.printer.quiet:
        app.printer.hint(f"no history yet: {history.first_entry(s.worktree_path, s.id)}")
    return 0


TRIGGERS = ("checkpoint", "timer", "hook")  # history.TRIGGERS a command may name


@group.command("checkpoint", context_settings=CONTEXT_SETTINGS,
               short_help="Append the sessions' current state to their history.")
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids(
    "live", lambda params, _taken: None if params.get("all_") or params.get("hook_input")
    else "live"))
@click.option("--all", "all_", is_flag=True, help="Every live session of every repository.")
@click.option("--trigger", type=Choice(TRIGGERS), default="checkpoint",
              show_default=True, help="What the history entry names as its cause.")
@click.option("--hook-input", is_flag=True,
              help="Read the JSON an agent tool's hook gives on stdin and checkpoint the "
              "session whose worktree holds its \"cwd\"; a directory in no session is nothing "
              "to do (exit 0).")
@options(records=True)
def checkpoint(app: App, ids: tuple[str, ...], all_: bool, trigger: str,
               hook_input: bool) -> int:
    """Append each session's current state to its history (like git ao-preserve
    --keep-worktree): the worktree, its index and the agents are left alone, and a
    state identical to the newest entry adds nothing. With no ID, the session of
    the current worktree."""
    from git_ao.cli.bodies import checkpoint as body
    return body(app, ids, all_, trigger, hook_input)


@group.command("add", context_settings=CONTEXT_SETTINGS,
               short_help="Register linked worktrees as live sessions.")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--all", "all_", is_flag=True,
              help="Register every linked worktree of the current repository.")
@click.option("--id", "session_id", metavar="ID", help="Session id (default: the worktree's name).")
@click.option("--kind", type=Choice(KINDS), default=None, metavar="KIND",
              help="worker (the default) or orchestrator; both are treated alike.")
@click.option("--harness", default=None, metavar="NAME", help="The agent program, e.g. claude-code.")
@click.option("--agent-session-id", metavar="ID", help="The agent's own session id, for resuming.")
@click.option("--prompt", metavar="TEXT", help="The task given to the agent (never logged).")
@options(records=True)
def add(app: App, path: str | None, all_: bool, session_id: str | None, kind: str | None,
        harness: str | None, agent_session_id: str | None, prompt: str | None) -> int:
    """Register an existing linked worktree (default: the current one) as a live
    session; a worktree already registered with the same facts is left as it is."""
    from git_ao.manage.register import add, add_all
    if all_:
        for name, value in (("PATH", path), ("--id", session_id),
                            ("--agent-session-id", agent_session_id), ("--prompt", prompt)):
            if value is not None:
                usage(f"--all registers every linked worktree; {name} names one")
        outcomes = add_all(app.ctx, current_directory(), kind=kind, harness=harness)
        for o in outcomes:
            app.printer.outcome(o)
        if not outcomes and not app.printer.json_mode and not app.printer.quiet:
            click.echo("nothing to add: this repository has no linked worktrees", err=True)
        return finish(app, "add", outcomes)
    o = add(app.ctx, path or current_directory(), session_id=session_id, kind=kind, harness=harness,
            agent_session_id=agent_session_id, prompt=prompt)
    app.printer.outcome(o)
    return finish(app, "add", [o])


@group.command("kill", context_settings=CONTEXT_SETTINGS,
               short_help="End sessions whose worktrees are clean.")
@click.argument("ids", nargs=-1, required=True, metavar="ID...",
                shell_complete=complete_ids("live"))
@options(records=True)
def kill(app: App, ids: tuple[str, ...]) -> int:
    """End sessions: remove each worktree only when it is clean, and mark the session
    terminated with nothing pending (restore never brings it back)."""
    from git_ao.manage.kill import kill as kill_one
    outcomes = _each(app, ids, Action.KILL, kill_one)
    return finish(app, "kill", outcomes)


def _each(app: App, ids: tuple[str, ...], action: Action,
          step: "Callable[[Context, str], Outcome]") -> list[Outcome]:
    """Run `step` for each session id, one's refusal never stopping the next, and
    print each Outcome as it comes."""
    from git_ao.batch import guarded
    check_ids(ids)
    ctx = app.ctx  # an unusable database is fatal for the command, not one session's failure
    outcomes = []
    for sid in ids:
        o = guarded(functools.partial(step, ctx, sid), sid, action, ctx)
        app.printer.outcome(o)
        outcomes.append(o)
    return outcomes


@group.command("resolve", context_settings=CONTEXT_SETTINGS,
               short_help="Drop the saved ref of a conflict you resolved.")
@click.argument("ids", nargs=-1, required=True, metavar="ID...",
                shell_complete=complete_ids("live"))
@options(records=True)
def resolve(app: App, ids: tuple[str, ...]) -> int:
    """After a restore left work in a session's preserve ref (a conflict) and you
    resolved it: drop the ref and the record's attention together."""
    from git_ao.manage.resolve import resolve as resolve_one
    outcomes = _each(app, ids, Action.RESOLVE, resolve_one)
    if not app.dry_run:
        from git_ao.cli import remote_opts
        # The remote copy a conflicted restore kept goes with the local ref.
        outcomes += remote_opts.retry_pushes(app, outcomes)
    return finish(app, "resolve", outcomes)


@group.command("forget", context_settings=CONTEXT_SETTINGS,
               short_help="Drop session records.")
@click.argument("ids", nargs=-1, required=True, metavar="ID...",
                shell_complete=complete_ids("all"))
@click.option("--force", is_flag=True, help="Drop the record even while work is pending "
              "(the preserve ref is kept).")
@click.option("--push", "push", is_flag=True, help="Keep the record: give up the pushes "
              "to a remote still to do (the local save stays).")
@options(records=True)
def forget(app: App, ids: tuple[str, ...], force: bool, push: bool) -> int:
    """Drop session records; refuses while work is pending unless --force. With
    --push: give up the sessions' pending pushes instead, keeping everything local."""
    if push and force:
        usage("--push takes no --force (it drops no record)")
    if push:
        from git_ao.remote.pushes import give_up
        outcomes = _each(app, ids, Action.FORGET, give_up)
    else:
        from git_ao.manage.kill import forget as forget_one
        outcomes = _each(app, ids, Action.FORGET, lambda ctx, sid: forget_one(ctx, sid, force))
    return finish(app, "forget", outcomes)


def _preserve_refusal(app: App) -> "Callable[[Session], tuple[str, bool] | None]":
    """Why git ao-preserve would keep a session's worktree, and whether it saves the
    work all the same (see doctor.run_checks): its own checks on a dry run, so
    nothing is written."""
    from git_ao.batch import RepoCache
    from git_ao.context import Context
    from git_ao.preserve.workflow import refusal
    cache = RepoCache()
    return lambda s: refusal(Context(app.store, dry_run=True), s, cache)

@group.command("doctor", context_settings=CONTEXT_SETTINGS,
               short_help="Check git, the data dir, the database and the repositories.")
@click.argument("scan", nargs=-1, metavar="[DIR]...", type=click.Path(file_okay=False))
@click.option("--recover", is_flag=True, help="Rebuild the records of pending sessions from "
              "the preserve refs of the repositories named with -C (use absolute paths when "
              "repeating it) or found under DIR (default: the repository it runs in and the "
              "home directory); a damaged "
              "database is moved aside first; with -n, list the records it would rebuild "
              "and change nothing.")
@options(changes=True, read_only=True)
def doctor(app: App, scan: tuple[str, ...], recover: bool) -> int:
    """Check git, the data dir, the database and the known repositories (and those
    named with -C or found under DIR...)."""
    from git_ao.manage import doctor as doc
    if app.dry_run and not recover:
        usage("-n goes with --recover (git ao doctor --recover -n): without it, doctor "
              "changes nothing")
    app.refs_noticed = True  # its checks name them
    chdirs = click.get_current_context().params.get("chdir") or ()
    named = [p for p in chdirs if os.path.isabs(p)] + \
        ([current_directory()] if chdirs else [])
    from git_ao.manage.recover import Search, repositories
    named_any = bool(named or scan)
    if recover and not named_any:
        # A lost data dir names no repository: look where the user's work lives,
        # the repository it runs in first.
        scan = (os.path.expanduser("~"),)
        named = doc.current_repo()
    search = Search()
    repos, problems = repositories(named, scan, search=search)
    outcomes: list[Outcome] = []
    if recover:
        from git_ao.store.database import Store
        notes, outcomes = doc.recover(lambda: app.use_store(Store(recover=True)), repos,
                                      named_any=named_any, searched=(scan, search),
                                      dry_run=app.dry_run)
        if not app.printer.json_mode:
            for note in notes:
                click.echo(note, err=True)
            for o in outcomes:
                app.printer.outcome(o)
    from git_ao.cli.app import importing_quietly
    checks = doc.run_checks(lambda: app.store, repos, refusal=_preserve_refusal(app),
                            importing=lambda: importing_quietly(app))
    checks += [doc.Check("repository", False, p) for p in problems]
    if app.printer.json_mode:
        app.printer.emit_json("doctor", checks=[c._asdict() for c in checks],
                              recovered=[{"id": o.session_id, "status": o.status,
                                          "message": o.message, **o.data} for o in outcomes])
    else:
        # After a recovery only what is still wrong is worth reading; the full
        # report is one `git ao doctor` away.
        for c in checks if not recover else [c for c in checks if c.ok is False]:
            word = {True: "ok", False: "problem", None: "note"}[c.ok]
            click.echo(f"{word:>7}  {c.name}: {c.detail}")
        if recover and not app.printer.quiet:
            click.echo(f"doctor: {len(outcomes)} ref(s) looked at, "
                       f"{sum(1 for c in checks if c.ok is False)} problem(s) left "
                       "(git ao doctor shows every check)", err=True)
    return doc.exit_status(checks, outcomes)


@group.group("config", cls=Group, context_settings=CONTEXT_SETTINGS,
             short_help="Read and change git-ao.toml.")
@short_help_option()
def config() -> None:
    """Read and change git-ao.toml in the data dir (see git-ao(1), CONFIGURATION)."""


def _config_value(value: Any) -> str:
    import json
    return value if isinstance(value, str) else json.dumps(value)


@config.command("get", context_settings=CONTEXT_SETTINGS,
                short_help="Print the value of a key.")
@click.argument("key", shell_complete=lambda c, p, i: _complete_keys(i))
@options(changes=False)
def config_get(app: App, key: str) -> int:
    """Print the value of KEY; exit 1 when it is not set."""
    from git_ao.store.settings import key_spec
    if key_spec(key) is None:
        usage(f"unknown key '{key}' (see 'git ao config list --all')")
    value = app.settings.get(key)
    if app.printer.json_mode:
        app.printer.emit_json("config get", key=key, value=value)
    elif value is not None:
        click.echo(_config_value(value))
    return ExitStatus.OK if value is not None else ExitStatus.FAILED


@config.command("set", cls=ValueCommand, context_settings=CONTEXT_SETTINGS,
                short_help="Set a key, its value checked.")
@click.argument("key", shell_complete=lambda c, p, i: _complete_keys(i))
@click.argument("value")
@click.option("--add", is_flag=True, help="Add VALUE to those of a key taking several "
              "(restore.mapPath), as git config --add does.")
@options()
def config_set(app: App, key: str, value: str, add: bool) -> int:
    """Set KEY to VALUE, checked against the key's type (a bad value is refused);
    with --add, add it to the key's values."""
    cfg = app.settings
    shown: Any = value
    if app.dry_run:
        from git_ao.store.settings import check_value
        shown = check_value(key, value)
        if add:
            shown = cfg.added(key, shown)
    else:
        cfg.set(key, value, add=add)
        from git_ao.remote.pushes import setting_notice  # lazily: it imports git
        notice = setting_notice(key)
        if notice:
            app.printer.error("warning", notice)
    if app.printer.json_mode:
        app.printer.emit_json("config set", key=key,
                              value=shown if app.dry_run else cfg.get(key, value),
                              dry_run=app.dry_run)
    return ExitStatus.OK


@config.command("unset", context_settings=CONTEXT_SETTINGS,
                short_help="Remove a key.")
@click.argument("key", shell_complete=lambda c, p, i: _complete_keys(i))
@options()
def config_unset(app: App, key: str) -> int:
    """Remove KEY from git-ao.toml; exit 1 when it was not set."""
    cfg = app.settings
    done = cfg.get(key) is not None if app.dry_run else cfg.unset(key)
    if app.printer.json_mode:
        app.printer.emit_json("config unset", key=key, removed=done, dry_run=app.dry_run)
    return ExitStatus.OK if done else ExitStatus.FAILED


@config.command("list", context_settings=CONTEXT_SETTINGS,
                short_help="Print every key that is set.")
@click.option("--all", "all_", is_flag=True, help="Also list the known keys that are not set, "
              "with their descriptions.")
@options(changes=False)
def config_list(app: App, all_: bool) -> int:
    """Print every key that is set, as key=value lines."""
    from git_ao.store.settings import KEYS
    values = dict(app.settings.values)
    if app.printer.json_mode:
        doc = {"values": values, "path": app.settings.path}
        if all_:
            doc["keys"] = {k: spec.help for k, spec in KEYS.items()}
        app.printer.emit_json("config list", **doc)
        return ExitStatus.OK
    for k, v in sorted(values.items()):
        click.echo(f"{k}={_config_value(v)}")
    if all_:
        for k, spec in KEYS.items():
            if k not in values:
                click.echo(f"# {k}: {spec.help}")
    return ExitStatus.OK


def _complete_keys(incomplete: str) -> list[str]:
    from git_ao.store.settings import KEYS
    return [k for k in KEYS if k.startswith(incomplete) and "<" not in k]


@group.command("log", context_settings=CONTEXT_SETTINGS,
               short_help="Show the last entries of the log.")
@click.option("-n", "--max-count", "count", type=IntRange(min=1), default=20,
              show_default=True, metavar="N", help="Show the last N entries.")
@click.option("--session", "session_id", metavar="ID", shell_complete=complete_ids("all"),
              help="Only the entries of this session.")
@options(changes=False)
def log_(app: App, count: int, session_id: str | None) -> int:
    """Show the most recent entries of logs/git-ao.log (every preserve, restore,
    relaunch and prune decision), oldest first."""
    from git_ao.cli import logview
    from git_ao.store.datadir import data_dir
    entries = logview.tail(data_dir(), count, session_id=session_id)
    if app.printer.json_mode:
        app.printer.emit_json("log", entries=entries)
        return ExitStatus.OK
    for e in entries:
        click.echo(e["line"])
    return ExitStatus.OK


@group.command("completion", context_settings=CONTEXT_SETTINGS,
               short_help="Print the completion script for a shell.")
@click.argument("shell", type=Choice(("bash", "zsh", "fish")))
@options(changes=False)
def completion(app: App, shell: str) -> int:
    """Print the completion script for SHELL (bash, zsh or fish), to source or install."""
    from git_ao.cli.completion import script
    text = script(shell)
    if app.printer.json_mode:
        app.printer.emit_json("completion", shell=shell, script=text)
    else:
        click.echo(text, nl=False)
    return ExitStatus.OK


def _tool_names(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    from git_ao.importers.names import NAMES
    return [n for n in NAMES if n.startswith(incomplete)]


@group.command("import", context_settings=CONTEXT_SETTINGS,
               short_help="Register the sessions of agent tools and of the ao daemon.")
@click.option("--tool", "tools", multiple=True, metavar="NAME", shell_complete=_tool_names,
              help="The tool whose sessions to import: ao (the ao daemon), claude-code, "
              "claude-squad, codex, conductor, crystal or vibe-kanban; repeatable "
              "(default: every tool whose state is found, and the ao daemon).")
@click.option("--from", "from_path", metavar="PATH", type=click.Path(),
              help="The tool's state file or directory, when it is not where the tool "
              "keeps it (with no --tool: the ao daemon's database).")
@options(records=True)
def import_(app: App, tools: tuple[str, ...], from_path: str | None) -> int:
    """Register the live sessions other tools keep (read-only): each tool's worktrees
    with the harness, agent session id, kind and branch it recorded, and the ao
    daemon's ao.db (of a known schema version). Paused, archived or ended sessions
    are reported, not imported."""
    from git_ao.importers import tools as importers
    outcomes = importers.run(app.ctx, tools, from_path, data_dir=app.store.dir)
    for o in outcomes:
        app.printer.outcome(o)
    if not outcomes and not app.printer.json_mode and not app.printer.quiet:
        click.echo("nothing to import: no live sessions found", err=True)
    return finish(app, "import", outcomes)


@group.group("hooks", cls=Group, context_settings=CONTEXT_SETTINGS)
@short_help_option()
def hooks() -> None:
    """Install and run the hooks other tools call (Claude Code's worktree hooks)."""


@hooks.command("install", context_settings=CONTEXT_SETTINGS)
@click.argument("tool", type=click.Choice(("claude-code",)))
@click.option("--settings", "settings_file", metavar="PATH", type=click.Path(dir_okay=False),
              help="The tool's settings file (default: settings.json in "
              "$CLAUDE_CONFIG_DIR, else in ~/.claude).")
@options()
def hooks_install(app: App, tool: str, settings_file: str | None) -> int:
    """Add git-ao's WorktreeCreate and WorktreeRemove hooks to Claude Code's settings:
    git-ao then makes each `claude --worktree` worktree, registered as a session at
    once, and saves it before it is removed. Other settings are kept as they are."""
    from pathlib import Path

    from git_ao.importers import claude_hook, tools
    path = Path(settings_file) if settings_file else claude_hook.settings_path(tools.home())
    res = claude_hook.install(path, dry_run=app.dry_run)
    if app.printer.json_mode:
        app.printer.emit_json("hooks install", tool=tool, settings=str(path), added=res.added,
                              present=res.present, dry_run=app.dry_run)
    elif not app.printer.quiet:
        verb = "would add" if app.dry_run else "added"
        for ev in res.added:
            click.echo(f"{verb} {ev} hook to {path}: {claude_hook.COMMAND}")
        for ev in res.present:
            click.echo(f"{ev} hook already in {path}")
    return 0


@hooks.command("run", context_settings=CONTEXT_SETTINGS)
@click.argument("tool", type=click.Choice(("claude-code",)))
@options()
def hooks_run(app: App, tool: str) -> int:
    """Run the hook as Claude Code calls it, the event's JSON on standard input:
    WorktreeCreate prints the worktree's path (and nothing else) on standard output;
    WorktreeRemove ends or preserves the worktree's session."""
    import sys

    from git_ao.importers import claude_hook
    data = claude_hook.event(sys.stdin.read())
    if data["hook_event_name"] == "WorktreeCreate":
        path = claude_hook.create(app.ctx, data)
        sys.stdout.write(path + "\n")
        return 0
    o = claude_hook.remove(app.ctx, app.settings, data)
    sys.stderr.write(f"git-ao: {o.action} {o.session_id}: {o.status}: {o.message}\n")
    return o.exit_status


def main() -> None:
    run(group, "git ao")
