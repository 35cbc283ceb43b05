"""Checks behind `git ao doctor`: git, the data dir, the database, the repositories."""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from git_ao import git
from git_ao.context import REF_PREFIX, give_up_hint
from git_ao.errors import AoError, ExitStatus, current_directory
from git_ao.fs.gone import gone_worktree, repo_gone_advice
from git_ao.git import version
from git_ao.git.parse import WorktreeEntry
from git_ao.manage.listing import ref_gone_hint, trash_work_hint
from git_ao.outcome import Outcome, Status
from git_ao.save import history
from git_ao.store.records import Session

if TYPE_CHECKING:
    from git_ao.manage.recover import Search
    from git_ao.store.database import Store


class Check(NamedTuple):
    """One line of the doctor's report: ok is True, False (a problem) or None (a note)."""

    name: str
    ok: bool | None
    detail: str


def recover(open_store: Callable[[], Store], repos: Sequence[str], *, named_any: bool,
            searched: tuple[Sequence[str], Search] | None = None, dry_run: bool = False
            ) -> tuple[list[str], list[Outcome]]:
    """`git ao doctor --recover`: rebuild the records of pending sessions from the
    preserve refs of `repos` (named with -C or found under the scanned dirs:
    `named_any`; else the repository it runs in and those found in the home
    directory); a damaged database is moved
    aside first (`open_store()` opens it that way). searched: (the directories
    searched, how the search went), said in the notes. Returns (notes to show,
    the recovery Outcomes). dry_run (`-n`): the records it would rebuild, the
    database opened read-only and nothing written or moved (a damaged one is
    said, and every ref counted as unrecorded). Raises Usage when the database
    is unusable and nothing was named, nor found in the home directory, to
    rebuild it from."""
    from git_ao.errors import Fatal, Usage
    from git_ao.manage import recover as rec
    from git_ao.store import log
    from git_ao.store.database import Store
    notes = searched_notes(*searched) if searched and searched[0] else []
    # A dry run looks at the database read-only: it creates no data dir, no
    # database, no -wal or -shm.
    probed: Store | None = None
    damaged: Fatal | None = None
    if not named_any or dry_run:
        try:
            probed = Store(read_only=dry_run)
        except Fatal as exc:
            damaged = exc
    # A new database built from no repository would hide the loss.
    if damaged is not None and not named_any and not any(
            split_daemon_refs(r, [ref for ref, _ in git.for_each_ref(r, REF_PREFIX)])[0]
            for r in repos):
        # What the search left out may be where the work is: said too.
        left = "".join(f"; {n}" for n in notes[1:])
        raise Usage("the database cannot be used, no repository was named to "
                    "rebuild it from and none holding preserve refs was found in "
                    f"the home directory ({rec.SCAN_DEPTH} levels deep) or the "
                    "repository it runs in: git ao "
                    f"doctor --recover -C REPO (or DIR to search){left}") from damaged
    if dry_run:
        if damaged is not None:
            notes.append(f"would move the damaged database aside ({damaged})")
        return notes, rec.recover(probed, repos, dry_run=True)
    store = open_store()
    if store.moved_aside:
        log.event(store.dir, "doctor", None, "db-moved-aside", path=store.moved_aside)
        notes.append(f"moved the damaged database aside to {store.moved_aside}")
    outcomes = rec.recover(store, repos)
    for o in outcomes:
        log.event(store.dir, "recover", o.session_id, o.status, detail=o.message)
    return notes, outcomes


def searched_notes(dirs: Sequence[str], search: Search) -> list[str]:
    """What a search for repositories looked at, and where a bound stopped it."""
    from git_ao.manage import recover as rec
    first = (f"searched {', '.join(dirs)} ({search.dirs} directories, up to "
             f"{rec.SCAN_DEPTH} levels deep, skipping what git ignores)")
    out = [first]
    if search.stopped_at:
        out.append(f"the search stopped after {rec.SCAN_SECONDS:g} s, at {search.stopped_at}; "
                   "name the directories to search: git ao doctor --recover DIR...")
    if search.skipped:
        more = f" and {len(search.skipped) - 3} more" if len(search.skipped) > 3 else ""
        out.append(f"not entered (another file system, as git's discovery): "
                   f"{', '.join(search.skipped[:3])}{more}; name them to search them")
    return out


def exit_status(checks: list[Check], outcomes: list[Outcome]) -> ExitStatus:
    """1 when a recovery failed or a check found a problem; a note (ok=None, say
    completions not installed) is reported, not a failure."""
    if any(o.status in (Status.REFUSED, Status.FAILED) for o in outcomes):
        return ExitStatus.FAILED
    return ExitStatus.OK if all(c.ok is not False for c in checks) else ExitStatus.FAILED


def run_checks(open_store: Callable[[], Store], repos: Sequence[str] = (),
               refusal: Callable[[Session], tuple[str, bool] | None] | None = None,
               importing: Callable[[], Sequence[Session]] | None = None) -> list[Check]:
    """Run every check; never raises for a problem it can name.

    repos: more repositories (absolute common git dirs, from -C or a scanned
    directory) whose preserve refs are checked against the database, so refs
    that no record knows are noticed even when the database was lost.
    refusal: why git ao-preserve would keep a live session's worktree, and whether
    it saves the work all the same, or None (the preserve workflow's checks, which
    this layer cannot import): each session it refuses is one a shutdown would
    not save; one it saves and keeps, one a shutdown leaves in place.
    importing: the sessions the import git ao-preserve --all runs first
    (import.tools) would register, stored nowhere: their worktrees are saved too,
    so they are not named unregistered."""
    checks = [Check("git", True, ".".join(map(str, version.version())))]
    try:
        store = open_store()
    except AoError as exc:
        checks.append(Check("database", False, str(exc)))
        for repo in repos:
            refs, daemons = split_daemon_refs(repo, [ref for ref, _ in
                                                     git.for_each_ref(repo, REF_PREFIX)])
            if daemons:
                checks.append(daemon_refs_check(repo, daemons))
            if refs:
                checks.append(Check("repository", False, f"{repo}: preserve refs with no "
                                    f"readable record: {', '.join(refs)}"))
        return checks + install_checks()
    lost = None if store.sessions() else lost_database(store.dir, [*repos, *current_repo()])
    # A command that changes nothing creates neither (Store(read_only=True) reads an
    # empty database in memory): say that nothing is there, not a check of nothing.
    new = "" if lost else ", as on a new install"
    checks.append(Check("data dir", True, store.dir if os.path.isdir(store.dir) else
                        f"{store.dir}: not there yet, nothing recorded{new} (the first "
                        "command that records a session makes it)"))
    if lost:
        checks.append(Check("database", False, lost))
    checks.append(config_check(store.dir))
    if os.path.exists(store.db_path):
        ok, detail = store.integrity_ok()
        checks.append(Check("database", ok, f"{store.db_path}: integrity {detail}"))
    else:
        checks.append(Check("database", True,
                            f"{store.db_path}: not there yet, nothing recorded{new}"))
    sessions = store.sessions()
    held = list(importing()) if importing is not None else []
    for repo in sorted({s.common_dir for s in [*sessions, *held]} | set(repos)):
        if not os.path.isdir(repo):
            from git_ao.fs.gone import missing_repo_advice
            waiting = sorted(s.id for s in sessions if s.common_dir == repo and s.pending)
            live = [s for s in sessions if s.common_dir == repo and s.live]
            if waiting:
                # git ao-prune keeps these records: say how to reach the save again.
                checks.append(Check("repository", False, (
                    f"{repo} is missing; pending session(s) {', '.join(waiting)} keep their "
                    f"record (git ao-prune keeps it): "
                    + "; ".join(missing_repo_advice(sid) for sid in waiting))))
            if live:
                # Kept too: the id and facts are what `git ao add --id` re-points.
                checks.append(Check("repository", False, (
                    f"{repo} is missing; live session(s) {', '.join(s.id for s in live)} keep "
                    f"their record (git ao-prune keeps it) and git ao-preserve refuses them: "
                    + "; ".join(f"{s.id}: {repo_gone_advice(s, sessions)}" for s in live))))
            if not waiting and not live:
                checks.append(Check("repository", False,
                                    f"{repo} is gone (git ao-prune drops the records of its "
                                    "terminated sessions)"))
            continue
        known = {s.id for s in sessions if s.common_dir == repo}
        orphans, daemons = split_daemon_refs(repo, [
            ref for ref, _ in git.for_each_ref(repo, REF_PREFIX)
            if ref[len(REF_PREFIX):] not in known])
        if daemons:
            checks.append(daemon_refs_check(repo, daemons))
        detail = f"{repo}: {len(known)} session(s)"
        if orphans:
            detail += (f", orphaned refs: {', '.join(orphans)} (git ao doctor --recover "
                       f"-C {shell_path(worktree_of(repo))} rebuilds their records)")
        checks.append(Check("repository", not orphans, detail))
        entries = git.worktree_list(repo)
        loose = unregistered_worktrees(repo, [*sessions, *held], entries)
        for path, _s in moved_worktrees(repo, sessions, loose, entries):
            loose.remove(path)  # session_checks names it, moved
        checks += session_checks(repo, [s for s in sessions if s.common_dir == repo],
                                 entries, store.dir)
        if refusal is not None:
            checks += refused_checks([s for s in sessions if s.common_dir == repo],
                                     entries, refusal)
        if loose:
            # A note, not a problem: not every worktree is an agent's, but these are
            # the ones a shutdown would leave unsaved.
            checks.append(Check("unregistered", None, f"{repo}: linked worktrees no session "
                                f"holds, not saved by git ao-preserve --all: {', '.join(loose)} "
                                "(git ao add PATH registers one, git ao add --all each of them)"))
    return checks + push_checks(store) + install_checks()


def refused_checks(sessions: Iterable[Session], entries: Sequence[WorktreeEntry],
                   refusal: Callable[[Session], tuple[str, bool] | None]) -> list[Check]:
    """A problem for each live session `refusal` (see run_checks) says git
    ao-preserve refuses: it would not be saved at the next shutdown; a note for one
    whose work it saves while it keeps the worktree. A worktree moved with git
    worktree move is left out: session_checks names it with its fix."""
    out = []
    for s in sessions:
        if not s.live:
            continue
        gone = gone_worktree(s, entries)
        if gone is not None and gone.kind == "moved":
            continue
        said = refusal(s)
        if said is None:
            continue
        why, saved = said
        if saved:
            out.append(Check("preserve", None, f"{s.id}: git ao-preserve saves its work as a "
                             f"checkpoint but keeps the worktree at a shutdown: {why}"))
        else:
            out.append(Check("preserve", False, f"{s.id}: git ao-preserve refuses it, so a "
                             f"shutdown would not save it: {why}"))
    return out


def push_checks(store: Store) -> list[Check]:
    """The pushes to a remote still to do (table remote_pushes): one whose last try
    failed is a problem (the work has not left this machine, or a remote copy
    stays), one not tried yet a note."""
    from git_ao.store.database import PUSH_REFUSED
    out = []
    for sid, remote, want, error in store.pending_pushes():
        what = f"its push to {remote}" if want else f"the delete of its copy on {remote}"
        if error and error.startswith(PUSH_REFUSED):
            # Tried again only by the commands it concerns: here is where it is said.
            out.append(Check("push", False, f"{sid}: {what} has not gone through; the last "
                             f"try was {error} (tried again by git ao-prune --remote {remote}, "
                             f"git ao-restore --from {remote}, git ao-preserve --push {remote} "
                             f"and commands on {sid}; git ao log --session {sid}; "
                             f"{give_up_hint(sid)})"))
        elif error:
            out.append(Check("push", False, f"{sid}: {what} has not gone through; the last "
                             f"try: {error} (git ao-prune tries again; git ao log --session "
                             f"{sid}; {give_up_hint(sid)})"))
        else:
            out.append(Check("push", None, f"{sid}: {what} waits (git ao-prune does it)"))
    return out


def session_checks(repo: str, sessions: list[Session], entries: list[git.WorktreeEntry],
                   data_dir: str) -> list[Check]:
    """Problems of the pending sessions of `repo` a restore would meet (a preserve
    ref that is gone, a restore path something else holds), the live sessions whose
    worktree an interrupted --at left part way, and, as notes, the
    sessions that live inside another session's worktree."""
    out = []
    for s in sessions:
        save = s.save
        if not s.pending or save is None:
            continue
        lost = ref_gone_hint(s, data_dir, where_copy=True)
        if lost:
            out.append(Check("session", False, f"{s.id}: pending, but {lost}"))
        path = save.worktree_path
        holder = next((o for o in sessions if o.live and o.worktree_path == path), None)
        if holder is not None:
            # A new worktree made at its path since the save: a session of its own.
            out.append(Check("session", False, f"{s.id}: pending, but {path} is now session "
                             f"'{holder.id}''s worktree: restore refuses it until git "
                             f"ao-preserve {holder.id} frees the path"))
        elif os.path.lexists(path) and not any(
                os.path.realpath(e.path) == os.path.realpath(path) for e in entries):
            out.append(Check("session", False, f"{s.id}: pending, but {path} exists and is "
                             "not its worktree: restore refuses it until it is moved away"))
    for s in sessions:
        if s.pending:
            continue
        gone = gone_worktree(s, entries)
        if gone is not None:
            out.append(Check("session", False, f"{s.id}: {history.gone_advice(gone, s, sessions)}"))
        elif s.live and not os.path.lexists(os.path.join(s.worktree_path, ".git")):
            # files, but no .git file: not one of the three cases, said as before
            out.append(Check("session", False, f"{s.id}: live, but its worktree "
                             f"{s.worktree_path} has no .git file; git ao-preserve "
                             f"{s.id} records it so git ao-restore brings it back"))
        else:
            half = history.interrupted_at_hint(data_dir, s)
            if half:
                out.append(Check("session", False, f"{s.id}: {half}"))
            copy = trash_work_hint(s, data_dir)
            if copy:
                out.append(Check("session", False, f"{s.id}: live, but {copy}"))
    live = [s for s in sessions if s.live or s.pending]
    for outer in live:
        base = os.path.realpath(outer.worktree_path).rstrip("/") + "/"
        for inner in live:
            if inner is not outer and os.path.realpath(inner.worktree_path).startswith(base):
                out.append(Check("nested", None, f"{inner.id} lives inside {outer.id}: "
                                 "preserved inner first, restored outer first"))
    return out


def current_repo() -> list[str]:
    """The common git dir of the repository the command runs in, if any."""
    try:
        return [os.path.realpath(git.repo_dirs(current_directory()).common_dir)]
    except AoError:
        return []


def lost_database(data_dir: str, repos: list[str]) -> str | None:
    """When the database holds no session but the trash or the named repositories
    show that sessions were saved: what to run to rebuild the records."""
    from git_ao.store import trash  # lazily: the notice on every command needs none
    seen = {e.meta.common_dir for e in trash.entries(data_dir)}
    # Only git-ao's own refs count: the ao daemon's are reported apart.
    holders = sorted(r for r in ({r for r in seen if isinstance(r, str)} | set(repos))
                     if os.path.isdir(r) and split_daemon_refs(
                         r, [ref for ref, _ in git.for_each_ref(r, REF_PREFIX)])[0])
    if not holders:
        return None
    return ("the database holds no session, but preserve refs exist in "
            f"{', '.join(holders)}: rebuild the records with git ao doctor --recover "
            f"-C {shell_path(worktree_of(holders[0]))}")


def worktree_of(common_dir: str) -> str:
    """Where to point `-C` for the repository whose common dir is `common_dir`: its
    main worktree (the parent of a `.git` directory), else the directory itself
    (a bare repository)."""
    if os.path.basename(common_dir.rstrip("/")) == ".git":
        return os.path.dirname(common_dir.rstrip("/"))
    return common_dir


def shell_path(path: str) -> str:
    """`path` as a shell reads it back (quoted when it needs it)."""
    import shlex
    return shlex.quote(path)


def split_daemon_refs(repo: str, refs: Iterable[str]) -> tuple[list[str], list[str]]:
    """(git-ao's or unknown refs, the ao daemon's own preserve refs) of `refs` in `repo`.

    The daemon writes refs/ao/preserved/<id> too; its commits have no Ao-Session
    trailer (daemon_refs.is_daemon_commit). Runs `git log -1` per ref."""
    from git_ao.errors import GitError
    from git_ao.save.daemon_refs import is_daemon_commit
    ours: list[str] = []
    daemons: list[str] = []
    for ref in refs:
        try:
            daemon = is_daemon_commit(repo, ref)
        except GitError:
            daemon = False  # not a commit: reported with the others
        (daemons if daemon else ours).append(ref)
    return ours, daemons


def daemon_refs_check(repo: str, refs: Sequence[str]) -> Check:
    """A note (not a problem): preserve refs the ao daemon wrote, and what to do."""
    from git_ao.save.daemon_refs import advice
    return Check("daemon refs", None, f"{repo}: saved at shutdown by the ao daemon, not "
                 f"git-ao: {', '.join(refs)}; {advice(refs[0])}")


def moved_worktrees(repo: str, sessions: Iterable[Session], loose: Container[str],
                    entries: Iterable[WorktreeEntry]) -> list[tuple[str, Session]]:
    """(path, Session) for each unregistered worktree in `loose` that is on the branch
    of a live session of `repo` whose recorded path is gone: a worktree moved with
    `git worktree move` after it was registered. entries: `git.worktree_list(repo)`."""
    gone = {f"refs/heads/{s.branch}": s for s in sessions
            if s.common_dir == repo and s.live and s.branch
            and not os.path.lexists(s.worktree_path)}
    return [(e.path, gone[e.branch]) for e in entries if e.path in loose and e.branch in gone]


def unregistered_worktrees(repo: str, sessions: Iterable[Session],
                           entries: Iterable[WorktreeEntry]) -> list[str]:
    """Paths of the linked worktrees of `repo` (a common git dir) that no live or
    pending session names; prunable registrations (their directory is gone) are
    left out. entries: `git.worktree_list(repo)`."""
    from git_ao.git.worktree import unheld
    return unheld(entries, [s.worktree_path for s in sessions
                            if s.common_dir == repo and (s.live or s.pending)])


def config_check(data_dir: str) -> Check:
    """Is git-ao.toml readable, with only known keys and good values?"""
    from git_ao.store.settings import Settings
    cfg = Settings(data_dir)
    if cfg.warnings:
        return Check("config", False, "; ".join(cfg.warnings))
    return Check("config", True, cfg.path if os.path.exists(cfg.path) else "none (defaults)")


# ------------------------------------------------------------ man pages and completions
# Where man-db and the shells look, reproduced from their documented rules (file
# checks only: nothing above git_ao/git/process.py starts a process). Not found is a note
# (ok=None), not a problem: the commands work without them.


def _data_dirs() -> list[str]:
    """XDG data dirs in order: $XDG_DATA_HOME (~/.local/share), then $XDG_DATA_DIRS."""
    home = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    dirs = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [home] + [d for d in dirs.split(":") if d]


def man_dirs() -> list[str]:
    """The directories man-db searches when git runs `man git-ao-preserve`: $MANPATH's
    entries, and (for an empty entry or no MANPATH) for each $PATH element
    <d>/../man, <d>/man, <d>/../share/man, <d>/share/man, then the system dirs."""
    default = []
    for d in os.environ.get("PATH", "").split(":"):
        if d:
            default += [os.path.join(d, "..", "man"), os.path.join(d, "man"),
                        os.path.join(d, "..", "share", "man"), os.path.join(d, "share", "man")]
    default += ["/usr/local/share/man", "/usr/share/man", "/usr/local/man"]
    manpath = os.environ.get("MANPATH")
    if manpath is None:
        return default
    out = []
    for entry in manpath.split(":"):
        out += default if entry == "" else [entry]
    return out


def _find(dirs: Iterable[str], rel: str) -> str | None:
    for d in dirs:
        for suffix in ("", ".gz"):
            p = os.path.join(d, rel + suffix)
            if os.path.isfile(p):
                return os.path.normpath(p)
    return None


def _shipped(rel: str) -> str | None:
    """The copy this installation shipped under <prefix>/share, if any."""
    import sys
    p = os.path.join(sys.prefix, "share", rel)
    return p if os.path.isfile(p) else None


def install_checks() -> list[Check]:
    """Whether man finds the pages and each shell finds the completions."""
    out = []
    page = _find(man_dirs(), "man1/git-ao-preserve.1")
    if page:
        out.append(Check("man pages", True, f"{page} (git ao-preserve --help opens it)"))
    else:
        out.append(Check("man pages", None, "man will not find git-ao-preserve.1: put the bin "
                         "dir of this install on PATH, or add its share/man to MANPATH"))
    looks = {
        "bash": ([os.path.join(d, "bash-completion", "completions") for d in _data_dirs()]
                 + ["/etc/bash_completion.d"], "bash-completion/completions/git-ao-preserve",
                 "git-ao-preserve", 'eval "$(git ao completion bash)" in ~/.bashrc'),
        "zsh": ([os.path.join(d, "zsh", x) for d in _data_dirs()
                 for x in ("site-functions", "vendor-completions")],
                "zsh/site-functions/_git-ao-preserve", "_git-ao-preserve",
                "its directory on $fpath, or eval \"$(git ao completion zsh)\" after compinit"),
        "fish": ([os.path.join(d, "fish", "vendor_completions.d") for d in _data_dirs()]
                 + [os.path.expanduser("~/.config/fish/completions")],
                 "fish/vendor_completions.d/git-ao.fish", "git-ao.fish",
                 ("git ao completion fish | source in ~/.config/fish/config.fish "
                  "(fish 3.6 needs this for git ao-preserve)")),
    }
    for shell, (dirs, shipped_rel, name, advice) in looks.items():
        found = _find(dirs, name)
        if found:
            out.append(Check(f"{shell} completion", True, found))
            continue
        shipped = _shipped(shipped_rel)
        where = f"shipped at {shipped} but " if shipped else ""
        out.append(Check(f"{shell} completion", None,
                         f"{where}not where {shell} loads it by itself; unless your "
                         f"startup file already does it, use {advice}"))
    return out


def empty_database_hint(store: Store) -> str | None:
    """When nothing is pending because the database lost its records (it holds no
    session, yet the repository the command runs in, or one the trash names,
    holds preserve refs): the command that rebuilds them. None otherwise."""
    if store.sessions():
        return None
    return lost_database(store.dir, current_repo())
