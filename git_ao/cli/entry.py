"""The console scripts' entry points: a few hot invocations answered without click.

Importing click costs more than a bare start of the interpreter, and a listing
or the boot's restore with nothing pending has little else to do. So `git ao
list` with standard output not a terminal and only the switches below, and
`git ao-restore [-q]` when the database holds no pending session, and bash's
TAB on the session ids of git ao-preserve, git ao-restore and git ao-prune, run
here:
argv is matched exactly, then the same body the click command calls
(bodies.py) runs through the same App, start and error handling (app.py), so
both paths print the same bytes and exit alike. Anything else (help, -h, an
unknown or combined switch, a bad value, a completion, a terminal) goes to the
click command unchanged, which also gives every error its usual words.

First of all, an agent tool's hook runs `git ao checkpoint --hook-input -q` after
every turn and the timer `git ao checkpoint --all -q`: when the stat file the
last checkpoint left proves the worktree unchanged (git_ao/save/unchanged.py),
there is nothing to do or print, and it is answered with os and at most one
`git diff-files`, for less than the `git status` it replaces; the full command
checks again otherwise.
"""

from __future__ import annotations

import io
import os
import sys
import types

# Not typing's: importing typing costs more than the quick paths' own work.
# mypy takes any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from git_ao.cli.app import App

class _Deferred(types.ModuleType):
    """Stands in for a standard module until something reads from it; then the
    real module is imported and answers."""

    def __getattr__(self, name: str) -> object:
        import importlib
        return getattr(importlib.import_module(self.__name__), name)


def _dataclasses_without_inspect() -> None:
    """Import dataclasses with a stand-in for inspect, which it reads only to give
    a class without a docstring its signature as __doc__: inspect (with ast, dis
    and tokenize) costs a third of a bare interpreter's start, which a listing
    should not pay. A class that needs it gets the real one."""
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        return
    stand_in = _Deferred("inspect")
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses  # noqa: F401
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]


# context.ID_RE's characters, checked without importing re.
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def _valid_id(sid: str) -> bool:
    return 0 < len(sid) <= 200 and sid[0] not in ".-" and set(sid) <= _ID_CHARS


def hook_input(data: bytes) -> dict[str, Any]:
    """The JSON object an agent tool's hook gives on stdin (Claude Code:
    {"cwd": ..., "session_id": ..., "transcript_path": ..., "hook_event_name": ...});
    no input is an empty one. Raises ValueError for input that is not a JSON
    object."""
    import json
    try:
        doc = json.loads(data.decode("utf-8", "replace").strip() or "{}")
    except (ValueError, RecursionError):  # nested past the parser's depth: no object either
        doc = None
    if not isinstance(doc, dict):
        raise ValueError("it is not a JSON object")  # noqa: TRY004 - the input, not a caller
    return doc


def hook_cwd(data: bytes) -> str | None:
    """The working directory an agent tool's hook names in the JSON it gives on stdin
    (`hook_input`), None when it names none (no input, or an object without "cwd").
    Raises ValueError for input that is not a JSON object or a "cwd" that is not a
    directory name."""
    return cwd_of(hook_input(data))


def cwd_of(doc: dict[str, Any]) -> str | None:
    """The "cwd" of a hook's input (`hook_input`), None when it has none. Raises
    ValueError when it is not a directory name."""
    if "cwd" not in doc:
        return None
    cwd = doc["cwd"]
    if not isinstance(cwd, str) or not cwd:
        raise ValueError('its "cwd" is not a directory name')
    return cwd


def worktree_top(start: str) -> str | None:
    """The top of the worktree holding `start` (the directory with a `.git`)."""
    d = os.path.realpath(start)
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


# The switches of `git ao checkpoint` the light entry takes; any other goes to click.
_CHECKPOINT_FLAGS = {"-q": "quiet", "--quiet": "quiet", "--hook-input": "hook_input",
                     "--all": "all_"}


def _checkpoint_args(argv: list[str]) -> dict[str, Any] | None:
    """The options of `git ao checkpoint [ID]... [--all] [--hook-input] [-q]
    [--trigger T]`, or None when `argv` is anything else (click then parses it)."""
    if not argv or argv[0] != "checkpoint":
        return None
    got: dict[str, Any] = {"ids": [], "all_": False, "hook_input": False, "quiet": False,
                           "trigger": "checkpoint"}
    words = iter(argv[1:])
    for word in words:
        if word in _CHECKPOINT_FLAGS:
            got[_CHECKPOINT_FLAGS[word]] = True
        elif word == "--trigger":
            value = next(words, None)
            if value not in ("checkpoint", "timer", "hook"):
                return None
            got["trigger"] = value
        elif word.startswith("-"):
            return None
        else:
            got["ids"].append(word)
    got["ids"] = tuple(got["ids"])
    return got


def _unchanged(got: dict[str, Any]) -> bool:
    """Is `got` (_checkpoint_args) a quiet checkpoint of one session whose worktree
    is provably unchanged? Reads the hook's JSON from stdin when asked (and puts it
    back for the full command when the answer is no)."""
    ids, hook = got["ids"], got["hook_input"]
    if not got["quiet"] or got["all_"] or len(ids) > (0 if hook else 1) or (hook and ids):
        return False
    from git_ao.save import unchanged
    env = os.environ.get("AO_DATA_DIR")
    data = os.path.abspath(os.path.expanduser(env)) if env else os.path.join(
        os.path.expanduser("~"), ".ao", "data")
    where = os.getcwd()
    if hook:
        raw = sys.stdin.buffer.read()
        sys.stdin = io.TextIOWrapper(io.BytesIO(raw))  # for the full command line
        where = hook_cwd(raw) or where
    if ids:
        if not _valid_id(ids[0]):
            return False
        sid: str | None = ids[0]
        try:
            with open(os.path.join(data, "history-stat", ids[0]), "rb"):
                pass
        except OSError:
            return False
        path = None
    else:
        path = worktree_top(where)
        sid = unchanged.session_at(data, path) if path else None
    if not sid:
        return False
    return unchanged.unchanged(data, sid, path) if path else unchanged.unchanged_any(data, sid)


# `git ao list` switches the light entry takes; any other word goes to click.
_LIST_FLAGS = {"--all": "all_", "--json": "json_mode", "-z": "nul", "-q": "quiet",
               "--quiet": "quiet"}


def _list_args(args: list[str]) -> dict[str, Any] | None:
    """The options of `git ao list [--all] [--json] [-z] [-q] [--state S]...`, or
    None when `args` are anything else (click then parses them)."""
    from git_ao.store.states import STATES
    if not args or args[0] != "list":
        return None
    got: dict[str, Any] = {"all_": False, "json_mode": False, "nul": False, "quiet": False,
                           "states": []}
    words = iter(args[1:])
    for word in words:
        if word in _LIST_FLAGS:
            got[_LIST_FLAGS[word]] = True
            continue
        value = next(words, None) if word == "--state" else \
            word[len("--state="):] if word.startswith("--state=") else None
        if value is None or value not in STATES:
            return None
        got["states"].append(value)
    return got


def _run(prog_name: str, command_path: str, body: Callable[[App], int],
         **app_options: Any) -> None:
    """Run `body` as common.run runs a click command: the same start, the same
    App, the same one-line errors and exit statuses."""
    from git_ao.cli.app import begin, end, failed, invoke
    try:
        begin(prog_name)  # inside: a relative AO_DATA_DIR where the directory is gone
        rv = invoke(command_path, body, **app_options)
    except KeyboardInterrupt as exc:
        sys.stderr.write("\n")  # as click does before it aborts
        rv = failed(exc, prog_name)
    except Exception as exc:  # noqa: BLE001 - failed() maps each kind as run() does
        rv = failed(exc, prog_name)
    end(rv)


def ao() -> None:
    """The `git-ao` executable: an unchanged quiet checkpoint answered at once
    (exit 0), a listing without click, anything else through click."""
    checkpoint = _checkpoint_args(sys.argv[1:])
    try:
        if checkpoint is not None and _unchanged(checkpoint):
            sys.exit(0)
    except (OSError, ValueError):
        pass
    light = "_GIT_AO_COMPLETE" not in os.environ and not sys.stdout.isatty()
    if checkpoint is not None and light:
        # A hook's or timer's checkpoint with something to save: the same body as
        # click's command, without importing click.
        _dataclasses_without_inspect()
        from git_ao.cli.bodies import checkpoint as body
        quiet = checkpoint.pop("quiet")
        _run("git ao", "git ao checkpoint", lambda app: body(app, **checkpoint), quiet=quiet)
        return
    got = _list_args(sys.argv[1:])
    if got is None or not light:
        from git_ao.cli.ao import main
        main()
        return
    _dataclasses_without_inspect()
    from git_ao.cli.bodies import list_sessions
    states = tuple(got.pop("states"))
    all_ = got.pop("all_")
    _run("git ao", "git ao list", lambda app: list_sessions(app, states, None, all_),
         read_only=True, **got)


def _completed_ids(prog_name: str, var: str, state: str | None) -> bool:
    """Answer a bash TAB on the session ids of `prog_name` as click's bash_complete
    does (`plain,<id>` lines; see common.complete_ids), when every word before the
    cursor is an id and the word at it is not an option; True when answered.
    state: what the command takes with no option given (None: no id, as
    `git ao-prune` without --force).
    COMP_WORDS holding a quote, a backslash or whitespace other than spaces goes to
    click, which splits it as a shell would."""
    if os.environ.get(var) != "bash_complete":
        return False
    line, cword = os.environ.get("COMP_WORDS", ""), os.environ.get("COMP_CWORD", "")
    if not cword.isdigit() or any(c in line for c in "\"'\\\t\n\r\v\f"):
        return False
    words = [w for w in line.split(" ") if w]
    n = int(cword)
    args = words[1:n]
    incomplete = words[n] if n < len(words) else ""
    if not words or any(w.startswith("-") for w in args) or incomplete.startswith("-"):
        return False
    from git_ao.cli.app import begin
    from git_ao.errors import Fatal
    try:
        begin(prog_name)
    except Fatal:
        return False  # click's path says why, in one line
    from git_ao.cli.completion import id_candidates
    items = [f"plain,{i}" for i, _ in id_candidates(state, incomplete, set(args))] \
        if state is not None else []
    sys.stdout.write("\n".join(items) + "\n")
    return True


def preserve() -> None:
    """The `git-ao-preserve` executable."""
    if not _completed_ids("git ao-preserve", "_GIT_AO_PRESERVE_COMPLETE", "live"):
        from git_ao.cli.preserve import main
        main()


def prune() -> None:
    """The `git-ao-prune` executable."""
    # Its ids need --force, an option: with none on the line, no id is taken.
    if not _completed_ids("git ao-prune", "_GIT_AO_PRUNE_COMPLETE", None):
        from git_ao.cli.prune import main
        main()


def restore() -> None:
    """The `git-ao-restore` executable."""
    if _completed_ids("git ao-restore", "_GIT_AO_RESTORE_COMPLETE", "pending"):
        return
    args = _without_timeout(sys.argv[1:])
    if args not in ([], ["-q"], ["--quiet"]) or "_GIT_AO_RESTORE_COMPLETE" in os.environ \
            or _any_pending():
        from git_ao.cli.restore import main
        main()
        return
    _dataclasses_without_inspect()
    from git_ao.cli.bodies import restore as body
    _run("git ao-restore", "git ao-restore",
         lambda app: body(app, (), False, None, None, (), False, None), quiet=bool(args))


def _without_timeout(args: list[str]) -> list[str] | None:
    """`args` without one `--timeout SECONDS` (or `--timeout=SECONDS`), which bounds
    nothing when nothing is pending (the boot's `git ao-restore -q --timeout 60`);
    None when its value is not a number of seconds (click then says so)."""
    for i, a in enumerate(args):
        if a == "--timeout" or a.startswith("--timeout="):
            value, rest = (args[i + 1] if i + 1 < len(args) else "", args[i + 2:]) \
                if a == "--timeout" else (a.split("=", 1)[1], args[i + 1:])
            try:
                ok = float(value) >= 0 and float(value) != float("inf")
            except ValueError:
                ok = False
            return args[:i] + rest if ok else None
    return args


def _any_pending() -> bool:
    """Does the database hold a pending session that a restore naming none brings
    back (read-only, no process)? A database
    that cannot be read says no: the body then meets the same error click's
    path would."""
    from git_ao.errors import Fatal
    from git_ao.store.datadir import completion_rows, pin_data_dir, pin_home
    # As begin() does, so the data dir read is the one the run uses (both are
    # idempotent; begin's warning about a missing HOME still comes once).
    pin_home()
    try:
        pin_data_dir()
    except Fatal:
        return True  # click's path says why, in one line
    # A save its tool removed on purpose is left by this restore (the body says so).
    return bool(completion_rows("restore"))
