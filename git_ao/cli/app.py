"""The part of running a git-ao command that needs no click: the run context
(App), its start and end, errors as one line and git's exit statuses, and the
steps the commands share. The click commands (common.py) and the light entry
(entry.py), which answers a few hot invocations without importing click, both
run through here, so they decide and print alike."""

from __future__ import annotations

import os
import sys

from git_ao.errors import AoError, ExitStatus, Fatal, GitError, Usage

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from types import FrameType
    from typing import Any, NoReturn, Self

    from git_ao.cli.output import Printer
    from git_ao.context import Context
    from git_ao.outcome import Action, Outcome
    from git_ao.store.database import Store
    from git_ao.store.records import Session
    from git_ao.store.settings import Settings

# git's variables naming a repository: git-ao never follows them (a session is
# the worktree the user stands in), and says so when they are set.
REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE")


class App:
    """The run context: -C applied, the printer, the -v trace, the git version check,
    the store (opened on first use) and the workflows' Context."""

    def __init__(self, *, quiet: bool = False, verbose: bool = False, json_mode: bool = False,
                 chdirs: Iterable[str] = (), dry_run: bool = False, nul: bool = False,
                 color: str | None = None, read_only: bool = False) -> None:
        self.read_only = read_only
        for d in chdirs:
            try:
                os.chdir(d)
            except OSError as exc:
                raise Fatal(f"cannot change to '{d}': {exc.strerror}") from exc
        from git_ao.errors import current_directory
        # As git does, a command started in a directory that is gone stops here,
        # in one line; `where` is kept for what runs after the work.
        self.where = current_directory()
        self.dry_run = dry_run
        from git_ao.cli.output import Printer  # lazily: json and rich are not needed for a TAB
        self.printer: Printer = Printer(json_mode=json_mode, quiet=quiet, verbose=verbose, nul=nul)
        if verbose:
            from git_ao import git  # here: a listing may need no git module at all
            git.set_trace(self.printer.trace)
        from git_ao.store import log
        # Said once per run: a shutdown that logs nothing must not do so silently.
        log.on_failure(lambda message: self.printer.error("warning", message))
        # A command that changes nothing writes nothing, this key included.
        _check_git_version(remember=not (read_only or dry_run))
        if not json_mode:
            where, tty = self.where, self.printer.tty
            self.printer.decide_colour = lambda: _colour(color, tty, where)
        stray = [v for v in REPO_ENV if os.environ.get(v)]
        if stray:
            self.printer.error("warning", f"{', '.join(stray)} set in the environment; "
                               "ignored: git-ao acts on the directory it runs in (or -C)")
        self._store: Store | None = None
        self._settings: Settings | None = None
        # Set by a command that already said which preserve refs no record knows.
        self.refs_noticed = False

    @property
    def store(self) -> Store:
        """The Store, opened on first use (Fatal when the database is unreadable)."""
        if self._store is None:
            from git_ao.store.database import Store
            # A command that changes nothing, and every dry run, creates no data dir
            # and no database.
            self._store = Store(read_only=self.read_only or self.dry_run)
        return self._store

    def notice_unrecorded_refs(self) -> None:
        """Say when the repository this command ran in holds preserve refs that no
        record knows (unrecorded.unrecorded_here: no process unless such refs may
        exist), unless the command said so itself (`refs_noticed`)."""
        if self.refs_noticed:
            return
        from git_ao.manage.unrecorded import unrecorded_here
        from git_ao.store.database import Store

        def opened() -> Store:
            return self._store if self._store is not None else Store(read_only=True)
        line = unrecorded_here(existing_dir(self.where), opened)
        if line:
            self.printer.error("warning", line)

    def use_store(self, store: Store) -> Store:
        """Use `store` (opened by the caller, e.g. to recover a damaged database) from now on."""
        self._store = store
        return store

    @property
    def ctx(self) -> Context:
        """The workflows' Context for this run."""
        from git_ao.context import Context
        return Context(self.store, dry_run=self.dry_run)

    @property
    def settings(self) -> Settings:
        """git-ao.toml of the data dir, read on first use; its warnings (unknown keys,
        bad values) go to stderr once."""
        if self._settings is None:
            from git_ao.store.datadir import data_dir
            from git_ao.store.settings import Settings
            self._settings = Settings(data_dir())
            for w in self._settings.warnings:
                self.printer.error("warning", w)
        return self._settings


def existing_dir(path: str) -> str:
    """`path`, or its nearest directory above that still exists: the work may have
    removed the directory the command started in (a restore, a preserve run inside
    the worktree it removes), and what runs after the work reads the repository
    from there."""
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _check_git_version(*, remember: bool) -> None:
    """version.check_version, reading the git that passed before from the data dir
    (`git-checked`), and with `remember` writing it there when the data dir exists,
    so the next command starts no `git --version` for the same git."""
    from git_ao import gitfiles
    from git_ao.store.datadir import data_dir, read_private, write_private
    path = os.path.join(data_dir(), "git-checked")
    known = read_private(path)
    if known is not None and gitfiles.executable_key("git") == known:
        return  # the same git passed before: no `git --version`, nor the git modules
    from git_ao.git import version
    key = version.check_version(known)
    if remember and key is not None and key != known and os.path.isdir(os.path.dirname(path)):
        write_private(path, key)


def _colour(when: str | None, tty: bool, where: str) -> bool:
    """--color, else git's color.ao and color.ui (`git -c` included), else the
    environment (output.colour_wanted)."""
    from git_ao.cli.output import colour_wanted
    from git_ao.git import query
    config = None
    if when is None:
        try:
            config = query.config_map(where)
        except AoError:
            config = None  # no readable config: the environment decides
    return colour_wanted(when, tty, config)


_running: str | None = None  # the command path of the command being run ("git ao config set")


def json_name(command_path: str) -> str:
    """The `command` of a JSON document: "git ao-preserve" -> "preserve",
    "git ao config set" -> "config set", "git ao" -> "ao"."""
    for prefix in ("git ao-", "git ao "):
        if command_path.startswith(prefix):
            return command_path[len(prefix):]
    return "ao"


def _json_error(command_path: str, status: int, error: str) -> None:
    # Scripts reading --json get a document on every path, errors included.
    if "--json" in sys.argv[1:]:
        import json
        sys.stdout.write(json.dumps({"schema": 1, "command": json_name(command_path),
                                     "exit_status": status, "error": error}) + "\n")


class _PipeSafe:
    """A standard stream whose reader may go away (`git ao-preserve --all | head`):
    the first write that meets a closed pipe points the descriptor at /dev/null,
    so the run goes on to its end (every session preserved) with its own status,
    and what it would have printed is dropped."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _gone(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()
            self._stream.flush()  # what the buffer held goes to /dev/null

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _pipe_safe() -> None:
    """Wrap stdout and stderr in _PipeSafe where they are files of their own (not in
    a caller's StringIO, and not twice)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, _PipeSafe):
            continue
        try:
            stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        setattr(sys, name, _PipeSafe(stream))


def begin(prog_name: str) -> str:
    """What every run does first: stdout and stderr made safe from a reader that
    goes away (_PipeSafe); HOME and the data dir pinned (a warning when HOME is
    unusable, not during a completion). Returns the completion variable, which
    follows the executable (git-ao-preserve -> _GIT_AO_PRESERVE_COMPLETE), not the
    "git ao-preserve" shown in messages."""
    _pipe_safe()
    from git_ao.store.datadir import pin_data_dir, pin_home
    homeless = pin_home()
    pin_data_dir()
    var = "_" + prog_name.replace(" ", "_").replace("-", "_").upper() + "_COMPLETE"
    if homeless and var not in os.environ:
        sys.stderr.write(f"warning: {homeless}\n")
    return var


def failed(exc: BaseException, prog_name: str) -> int:
    """The exit status of a run that raised `exc` (not a usage error of click's),
    its one line written to stderr as git writes its own: 130 on an interrupt,
    the error's status for an AoError, 0 for a closed pipe, 128 otherwise.
    Raises `exc` again with GIT_AO_DEBUG set, and anything that is no Exception."""
    debug = bool(os.environ.get("GIT_AO_DEBUG"))
    if isinstance(exc, KeyboardInterrupt):
        return ExitStatus.INTERRUPTED
    if not isinstance(exc, Exception):
        raise exc
    if isinstance(exc, BrokenPipeError):
        return ExitStatus.OK
    if debug:
        raise exc
    if isinstance(exc, AoError):
        text = str(exc)
        if isinstance(exc, GitError):
            # A lock file in git's way: stale or held, and what clears it, as a
            # session's outcome says it (batch.guarded).
            from git_ao.git import lock as gitlock
            text = gitlock.explain(text)
        sys.stderr.write(f"{exc.prefix}: {text}\n")
        _json_error(_running or prog_name, exc.exit_status, f"{exc.prefix}: {text}")
        return exc.exit_status
    if isinstance(exc, ModuleNotFoundError):
        # Run with a python3 that lacks a dependency (bin/ from a checkout, say):
        # name the package and the interpreter rather than an internal error.
        sys.stderr.write(f"fatal: git-ao needs the Python package '{exc.name}', which "
                         f"{sys.executable} cannot import; install git-ao with pip or pipx "
                         "(see README.md)\n")
        return ExitStatus.FATAL
    sys.stderr.write(f"fatal: internal error: {type(exc).__name__}: {exc} "
                     "(set GIT_AO_DEBUG=1 for a traceback)\n")
    return ExitStatus.FATAL


def end(rv: object) -> NoReturn:
    """Flush standard output (a closed pipe is no error) and exit with `rv`."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    sys.exit(rv if isinstance(rv, int) else ExitStatus.OK)


def invoke(command_path: str, body: Callable[[App], Any], **app_options: Any) -> Any:
    """Run one command's `body(app)` with a new App (`app_options` are its keyword
    arguments), then say which preserve refs no record knows, as every command
    does; the command's exit status is returned."""
    global _running
    _running = command_path
    app = App(**app_options)
    rv = body(app)
    app.notice_unrecorded_refs()
    return rv


def check_ids(ids: Iterable[str]) -> None:
    """Validate every session id before anything changes (Usage on the first bad one)."""
    if not ids:
        return  # here: a boot with no ids loads no workflow module
    from git_ao.context import validate_id
    for sid in ids:
        validate_id(sid)


def named_sessions(app: App, ids: Iterable[str],
                   action: Action) -> tuple[list[Session], list[Outcome]]:
    """The sessions named on the command line, each id looked up on its own, as git
    reports each bad argument: returns (sessions, outcomes), one `refused` Outcome
    per unknown id (printed here) so the known ones go on. A repeated id counts once."""
    from git_ao.context import lookup
    from git_ao.errors import Refused
    from git_ao.outcome import Outcome, Status
    sessions: list[Session] = []
    refused: list[Outcome] = []
    for sid in dict.fromkeys(ids):
        try:
            sessions.append(lookup(app.ctx, sid))
        except Refused as exc:
            o = Outcome(sid, action, Status.REFUSED, str(exc))
            app.printer.outcome(o)
            refused.append(o)
    return sessions, refused


def with_state(app: App, advance: Callable[[Outcome], None]) -> Callable[[Outcome], None]:
    """Wrap a batch's progress callback so each outcome carries the session's state
    (see add_state) before it is printed."""
    def _advance(o: Outcome) -> None:
        add_state(app, o)
        return advance(o)
    return _advance


def add_state(app: App, o: Outcome) -> None:
    """Put the session's state after the step into `o.data["state"]` (live,
    attention, pending, terminated; None when there is no record), and say it in the
    message of a refusal or failure that leaves the session pending: the user must
    know the save is recorded and restore brings the session back."""
    if "state" in o.data or o.session_id in ("", "-"):
        return
    from git_ao.manage.listing import state
    from git_ao.outcome import Status
    from git_ao.store.states import State
    try:
        s = app.store.get(o.session_id)
        o.data["state"] = state(s, data_dir=app.store.dir) if s is not None else None
    except AoError:
        return
    if o.status in (Status.REFUSED, Status.FAILED) and o.data["state"] == State.PENDING \
            and not o.names_state:
        o.message += "; the session is pending: its save is recorded and git ao-restore " \
                     "brings it back"


def import_first(app: App) -> list[Any]:
    """Import the sessions of the tools `import.tools` names (`auto`: every tool whose
    state is found) before a preserve --all or a restore of every session, so the
    shipped units save what other tools made. Each outcome is printed and returned,
    but for a refusal already reported (said again with status nothing) and a
    note of a source holding no session (an empty ao.db; printed with -v): a boot
    stays quiet. A source that cannot be read (the ao daemon's database too, the
    only one found or not) is refused in the first run that meets it (exit 1) and
    a note after, as `tools.run` says. One that cannot run at all is logged and
    warned about, never fatal: a shutdown must still save what git-ao knows. Any other error inside the import
    (a bug an adapter hit) is logged and returned as one refused import line; the
    preserve or restore goes on."""
    value = app.settings.get("import.tools")
    if not value:
        return []
    from git_ao.errors import AoError
    from git_ao.importers import tools
    from git_ao.outcome import Action, Outcome, Status
    names = [] if value == "auto" else list(value)
    try:
        outcomes = tools.run(app.ctx, names, None, data_dir=app.store.dir,
                             daemon_alone_fatal=False)
    except AoError as exc:
        if value != "auto":
            app.printer.error("warning", f"import.tools: {exc}")
        app.ctx.log("import", None, "skipped", error=str(exc))
        return []
    except Exception as exc:  # noqa: BLE001 - the save or restore after it must run
        o = Outcome("-", Action.IMPORT, Status.REFUSED,
                    f"import.tools: internal error: {type(exc).__name__}: {exc}; nothing "
                    "imported, the sessions git-ao knows are still handled")
        app.ctx.log("import", None, "failed", error=f"{type(exc).__name__}: {exc}")
        app.printer.outcome(o)
        return [o]
    for o in outcomes:
        if not o.said_before and (app.printer.verbose or not o.only_note):
            app.printer.outcome(o)
    return outcomes


def would_register(app: App, imported: Sequence[Any]) -> dict[str, Any]:
    """By id, the live sessions a dry run's import (`import_first`'s outcomes) would
    register: stored nowhere, they are judged as the real run judges them."""
    return {o.registered.id: o.registered for o in imported
            if getattr(o, "registered", None) is not None and o.registered.live
            and app.store.get(o.registered.id) is None}


def importing_quietly(app: App) -> list[Any]:
    """The sessions the import a preserve --all runs first (import.tools) would
    register now, found by its dry run, printing nothing: what `git ao doctor`
    counts as held. [] when import.tools is unset or the import cannot run."""
    if not app.settings.get("import.tools"):
        return []
    from git_ao.context import Context
    from git_ao.importers import tools
    value = app.settings.get("import.tools")
    try:
        outcomes = tools.run(Context(app.store, dry_run=True),
                             [] if value == "auto" else list(value), None,
                             data_dir=app.store.dir)
    except Exception:  # noqa: BLE001 - doctor names what it can; preserve says the rest
        return []
    return list(would_register(app, outcomes).values())


def finish(app: App, command: str, outcomes: Sequence[Outcome]) -> int:
    """Print the summary (or the JSON document) and return the worst exit status."""
    from git_ao.outcome import exit_status
    for o in outcomes:
        add_state(app, o)
    status = exit_status(outcomes)
    app.printer.outcomes_json(command, outcomes, status, dry_run=app.dry_run)
    app.printer.summary(outcomes, command)
    return status


def usage(message: str) -> NoReturn:
    raise Usage(message)


class SignalStop:
    """A `with` block in which SIGTERM and SIGINT stop a batch instead of the process.

    A caught signal sets `event` (a threading.Event the batch runner checks
    before each session) and is recorded in `caught` (signal numbers): sessions
    in flight run to their end (a safe point) and no new one starts. The previous
    handlers come back when the block ends. Enter it in the main thread only."""

    def __enter__(self) -> Self:
        import signal
        import threading
        self.event = threading.Event()
        self.caught: list[int] = []

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            self.caught.append(signum)
            self.event.set()

        self._previous = {sig: signal.signal(sig, on_signal)
                          for sig in (signal.SIGTERM, signal.SIGINT)}
        return self

    def __exit__(self, *exc: object) -> None:
        import signal
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def interrupted(self, app: App, command: str, outcomes: Sequence[Outcome],
                    still: str) -> int | None:

        """After `finish`: when a signal was caught, log one `interrupted` line with
        the counts, say how many sessions were not started (they are `still`, e.g.
        'still live'), and return 128 + the signal; None when none was caught."""
        if not self.caught:
            return None
        import signal

        name = signal.Signals(self.caught[0]).name
        left = sum(1 for o in outcomes if not o.started)
        counts: dict[str, int] = {}
        for o in outcomes:
            counts[o.status] = counts.get(o.status, 0) + 1
        if not app.dry_run:
            from git_ao.store import log  # lazy: -h and completion log nothing
            log.event(app.store.dir, command, None, "interrupted", signal=name,
                      not_started=left, **counts)
        if not app.printer.quiet and not app.printer.json_mode:
            sys.stderr.write(f"{command}: interrupted by {name}: {left} session(s) not "
                             f"started, {still}\n")
        return ExitStatus.signalled(self.caught[0])
