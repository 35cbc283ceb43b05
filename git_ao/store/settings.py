"""The one place that reads and writes git-ao's settings, `git-ao.toml` in the data dir.

(git's own configuration is read in git_ao/git/process.py; a worktree's private config is
saved with its session, see records.Save.private_config.)

Read with tomllib, edited in place with tomlkit (the user's comments, layout and
keys git-ao does not know are kept as they were written). Every key git-ao knows is listed in
KEYS with its type and a one-line description (the same text git-ao(1)
documents). Unknown keys in the file are warned about and ignored; a bad value
in the file is warned about and ignored (a shutdown must not fail on a typo);
a bad value given to `git ao config set` is refused naming the key.

Keys are dotted: `preserve.jobs` is `[preserve] jobs = 4` in the file. The
relaunch command of one harness is `relaunch.harness.<name>`, its stop command
`stop.harness.<name>`, and its agent policy `preserve.harness.<name>.agents`
(`[preserve.harness.<name>] agents = "refuse"`: not `preserve.agents.<name>`,
because TOML cannot make `preserve.agents` both a string and a table).
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass

from git_ao.errors import Fatal, Usage

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a start
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    import tomlkit

CONFIG_NAME = "git-ao.toml"
_HARNESS_NAME = r"([A-Za-z0-9_.+-]{1,64})"


@functools.cache
def _harness_keys() -> tuple[tuple[re.Pattern[str], str], ...]:
    """The per-harness keys: (pattern, the KEYS entry it stands for). Compiled when
    first used: a start with no settings file compiles none."""
    return (
        (re.compile(rf"^relaunch\.harness\.{_HARNESS_NAME}$"), "relaunch.harness.<name>"),
        (re.compile(rf"^stop\.harness\.{_HARNESS_NAME}$"), "stop.harness.<name>"),
        (re.compile(rf"^preserve\.harness\.{_HARNESS_NAME}\.agents$"),
         "preserve.harness.<name>.agents"),
    )
AGENT_POLICIES = ("stop", "refuse", "report")


def _int_jobs(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 64:
        raise ValueError("expected a whole number from 1 to 64")
    return v


def _int_keep(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError("expected a whole number, 1 or more")
    return v


def _seconds(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError("expected a number of seconds, 0 or more")
    return v


def _positive_seconds(v: Any) -> Any:
    # 0 as a default would make every shutdown start no session at all.
    try:
        if _seconds(v) != 0:
            return v
    except ValueError:
        pass
    raise ValueError("expected a number of seconds greater than 0")


def _text(v: Any) -> Any:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("expected a non-empty string")
    return v


def _policy(v: Any) -> Any:
    if v not in AGENT_POLICIES:
        raise ValueError("expected one of " + ", ".join(AGENT_POLICIES))
    return v


def _command(v: Any) -> list[str]:
    """A command: a string split like a shell would split words (shlex), or a list
    of strings. Returns the argument list."""
    if isinstance(v, str):
        import shlex  # here: a start that splits no command loads none
        try:
            argv = shlex.split(v)
        except ValueError as exc:
            raise ValueError(f"cannot split into words: {exc}") from None
    elif isinstance(v, list) and all(isinstance(a, str) for a in v):
        argv = list(v)
    else:
        raise ValueError("expected a command string or a list of strings")
    if not argv or not argv[0]:
        raise ValueError("expected a command, got nothing")
    return argv


def _import_tools(v: Any) -> Any:
    """`auto`, or a list of tool names (IMPORT_TOOLS)."""
    from git_ao.store.states import IMPORT_TOOLS
    if v == "auto":
        return v
    if not isinstance(v, list) or not v or not all(isinstance(t, str) for t in v):
        raise ValueError("expected auto or a list of tools (" + ", ".join(IMPORT_TOOLS) + ")")
    bad = [t for t in v if t not in IMPORT_TOOLS]
    if bad:
        raise ValueError(f"unknown tool {bad[0]!r}: use auto or " + ", ".join(IMPORT_TOOLS))
    return v


def _parse_tools(text: str) -> Any:
    words = [w for w in re.split(r"[\s,]+", text.strip()) if w]
    return "auto" if words == ["auto"] else words


def _bool(v: Any) -> Any:
    if v is not True and v is not False:
        raise ValueError("expected true or false")
    return v


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "yes", "on", "1"):
        return True
    if low in ("false", "no", "off", "0"):
        return False
    raise ValueError("expected true or false")


def _remote(v: Any) -> Any:
    """A remote for git push: a name, URL or path, never an option."""
    if not isinstance(v, str) or not v.strip() or v.startswith("-") or any(
            c.isspace() for c in v):
        raise ValueError("expected a remote name, URL or path (no spaces, not starting "
                         "with '-')")
    return v


def _path_maps(v: Any) -> Any:
    """OLD=NEW path prefix mappings: one string, or a list of them (pathmap.parse)."""
    from git_ao.store.pathmap import parse_all
    parse_all([v] if isinstance(v, str) else v if isinstance(v, list) else [v])
    return v


def _git_date(v: Any) -> Any:
    """A date git parses as an expiry date (runs `git config --type=expiry-date`)."""
    from git_ao.git import query  # here: completion imports this module and never runs git
    try:
        query.expiry_date(v)
    except Usage:
        raise ValueError("expected a date git understands, such as 2.weeks.ago, "
                         "yesterday, 2024-01-01, now or never") from None
    return v


# The trash's grace period when prune.expire is not set: git's own for
# unreachable objects (gc.pruneExpire), so an ignored `.env` kept only there
# outlives the prune run right after a restore.
DEFAULT_PRUNE_EXPIRE = "2.weeks.ago"


@dataclass(frozen=True)
class Key:
    """A known key: its validator (raises ValueError), how to parse the text given
    to `config set`, and its description."""

    check: Callable[[Any], Any]
    parse: Callable[[str], Any]
    help: str
    strict: Callable[[Any], Any] | None = None  # a further check `config set` runs (may start git)
    multi: bool = False  # several values (a TOML list): `config set --add` appends one


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("expected a whole number") from None


def _parse_float(text: str) -> int | float:
    try:
        n = float(text)
    except ValueError:
        raise ValueError("expected a number") from None
    return int(n) if n.is_integer() else n


KEYS = {
    "history.keep": Key(_int_keep, _parse_int,
                        "entries git ao-prune keeps in each session's history, newest "
                        "first; the newest is always kept (default: all)"),
    "history.maxAge": Key(_text, str,
                          "git ao-prune drops the entries of each history older than this "
                          "git date, such as 30.days.ago; the newest is always kept "
                          "(default: none dropped)", strict=_git_date),
    "import.tools": Key(_import_tools, _parse_tools,
                        "tools whose sessions git ao-preserve --all and git ao-restore (with "
                        "no ids) import first: auto (every tool whose state is found) or a "
                        "list such as claude-code,codex (default: none)"),
    "preserve.agents": Key(_policy, str,
                           "what git ao-preserve does with processes still working in a "
                           "worktree: stop, refuse or report (default: stop with --all, "
                           "refuse otherwise)"),
    "preserve.agentTimeout": Key(_seconds, _parse_float,
                                 "seconds git ao-preserve gives a session's agents to stop "
                                 "(stop command, then SIGTERM) before it goes on "
                                 "(default: 10)"),
    "preserve.harness.<name>.agents": Key(_policy, str,
                                          "preserve.agents for the sessions of harness "
                                          "<name>; wins over preserve.agents"),
    "preserve.jobs": Key(_int_jobs, _parse_int,
                         "sessions git ao-preserve handles at once when -j is not given "
                         "(default: two per core, at least 4)"),
    "preserve.push": Key(_remote, str,
                         "remote (name, URL or path) git ao-preserve pushes each saved "
                         "session's preserve ref to when --push is not given; its untracked "
                         "files that are not ignored go there too (default: none)"),
    "preserve.pushTimeout": Key(_positive_seconds, _parse_float,
                                "seconds one git push or fetch of preserve refs may take "
                                "before it is stopped and left pending (default: 10)"),
    "preserve.timeout": Key(_positive_seconds, _parse_float,
                            "seconds after which git ao-preserve starts no new session and "
                            "stops the git processes of those in flight, when --timeout is "
                            "not given (default: none)"),
    "prune.expire": Key(_text, str,
                        "default --expire of git ao-prune, a git date such as 1.week.ago "
                        "(default: 2.weeks.ago, as git's gc.pruneExpire; now: all of the "
                        "trash)", strict=_git_date),
    "relaunch.command": Key(_command, str,
                            "command run in each restored worktree (every harness)"),
    "relaunch.harness.<name>": Key(_command, str,
                                   "command run in each restored worktree of harness <name>; "
                                   "wins over relaunch.command"),
    "relaunch.builtin": Key(_bool, _parse_bool,
                            "run the built-in resume command of a harness that resumes by "
                            "id (claude --resume <id>, codex resume <id>) in a detached tmux "
                            "session when no relaunch command is set for it (default: false)"),
    "relaunch.timeout": Key(_seconds, _parse_float,
                            "seconds git ao-restore waits for a relaunch command before "
                            "leaving it running (default: 30)"),
    "restore.jobs": Key(_int_jobs, _parse_int,
                        "sessions git ao-restore handles at once when -j is not given "
                        "(default: two per core, at least 4)"),
    "restore.mapPath": Key(_path_maps, str,
                           "OLD=NEW: where git ao-restore --from puts a worktree whose "
                           "recorded path starts with OLD (several: git ao config set --add)",
                           multi=True),
    "restore.timeout": Key(_positive_seconds, _parse_float,
                           "seconds after which git ao-restore starts no new session and "
                           "stops the git processes of those in flight, when --timeout is "
                           "not given (default: none)"),
    "stop.command": Key(_command, str,
                        "command git ao-preserve runs to stop a session's agents before "
                        "it sends them SIGTERM (every harness)"),
    "stop.harness.<name>": Key(_command, str,
                               "stop command for the sessions of harness <name>; wins over "
                               "stop.command"),
}

DEFAULT_RELAUNCH_TIMEOUT = 30
DEFAULT_AGENT_TIMEOUT = 10
DEFAULT_PUSH_TIMEOUT = 10


def key_spec(key: str) -> Key | None:
    """The Key describing `key` (a dotted name), or None when git-ao does not know it."""
    for pattern, template in _harness_keys():
        if pattern.match(key):
            return KEYS[template]
        if key == template:
            return None
    return KEYS.get(key)


def check_value(key: str, text: str) -> Any:
    """Parse `text` for `key` and run every check of the key, the strict one (which
    may start git) included. Returns the value; raises Usage naming the key."""
    spec = key_spec(key)
    if spec is None:
        raise Usage(f"unknown key '{key}' (see 'git ao config list --all')")
    try:
        value = spec.parse(text)
        spec.check(value)
        if spec.strict is not None:
            spec.strict(value)
    except ValueError as exc:
        raise Usage(f"bad value for '{key}': {exc}") from None
    return value


def path(data_dir: str) -> str:
    """The config file's path for this data dir."""
    return os.path.join(data_dir, CONFIG_NAME)


def _flatten(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for k, v in table.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and (name == "relaunch.harness" or key_spec(name) is None):
            yield from _flatten(v, name + ".")
        else:
            yield name, v


def _split_key(key: str) -> list[str]:
    # A harness name may hold dots: it stays one TOML key.
    for pattern, template in _harness_keys():
        m = pattern.match(key)
        if m:
            return [m.group(1) if p == "<name>" else p for p in template.split(".")]
    return key.split(".")


class Settings:
    """The settings of one data dir.

    values: dict of dotted key -> value (only known keys with good values).
    warnings: list of str, one per unknown key or bad value in the file.
    raw: the parsed TOML document (as tomllib reads it).
    """

    def __init__(self, data_dir: str) -> None:
        self.path = path(data_dir)
        self.raw: dict[str, Any] = {}
        self.values: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.unreadable: str | None = None
        try:
            with open(self.path, "rb") as f:
                import tomllib  # here: with no file, no parser (it imports typing)
                self.raw = tomllib.load(f)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
            # A typo must never stop a shutdown's preserve: warn, run on defaults,
            # and refuse to write over a file that could not be read.
            self.unreadable = f"cannot read {self.path}: {exc}"
            self.warnings.append(f"{self.unreadable} (settings ignored)")
            return
        for key, value in _flatten(self.raw):
            spec = key_spec(key)
            if spec is None:
                self.warnings.append(f"unknown key '{key}' in {self.path} (ignored)")
                continue
            try:
                spec.check(value)
            except ValueError as exc:
                self.warnings.append(f"bad value for '{key}' in {self.path}: {exc} (ignored)")
                continue
            self.values[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        """The value of a known key, or `default`."""
        return self.values.get(key, default)

    def relaunch_argv(self, harness: str | None) -> list[str] | None:
        """The relaunch command for a harness: relaunch.harness.<harness>, else
        relaunch.command, as an argument list; None when neither is set."""
        value = self.values.get(f"relaunch.harness.{harness}") if harness else None
        if value is None:
            value = self.values.get("relaunch.command")
        return None if value is None else _command(value)

    # ------------------------------------------------------------ edits

    def set(self, key: str, text: str, *, add: bool = False) -> None:
        """Validate and store `text` for `key` (parsed by the key's type), editing
        the file in place: comments, order and other keys stay as written. add:
        append it to the values already set (a key taking several, as `git config
        --add`), a value already there not repeated.

        Raises Usage naming the key for an unknown key, a bad value, or `add` on a
        key that takes one value."""
        value = check_value(key, text)
        if add:
            value = self.added(key, value)
        doc = self._document()
        import tomlkit
        table: Any = doc
        parts = _split_key(key)
        for p in parts[:-1]:
            if not isinstance(table.get(p), dict):
                table[p] = tomlkit.table()
            table = table[p]
        table[parts[-1]] = value
        self.values[key] = value
        self._write(doc)

    def added(self, key: str, value: Any) -> list[Any]:
        """The values of `key` with `value` appended (not repeated), as `set(...,
        add=True)` stores them. Raises Usage for a key that takes one value."""
        spec = key_spec(key)
        if spec is None or not spec.multi:
            raise Usage(f"'{key}' takes one value; --add is for keys taking several, such "
                        "as restore.mapPath")
        old = self.values.get(key)
        values = [] if old is None else [old] if isinstance(old, str) else list(old)
        return values if value in values else [*values, value]

    def unset(self, key: str) -> bool:
        """Remove `key` from the file (in place, as `set`); returns False when it was not set."""
        doc = self._document()
        table: Any = doc
        parts = _split_key(key)
        chain = []

        for p in parts[:-1]:
            nxt = table.get(p)
            if not isinstance(nxt, dict):
                return False
            chain.append((table, p))
            table = nxt
        if parts[-1] not in table:
            return False
        del table[parts[-1]]
        for parent, p in reversed(chain):
            if not parent[p]:
                del parent[p]
        self.values.pop(key, None)
        self._write(doc)
        return True

    def _document(self) -> tomlkit.TOMLDocument:
        """The file as a tomlkit document (an empty one when there is no file)."""
        import tomlkit
        if self.unreadable:
            raise Fatal(f"{self.unreadable}; fix or remove it before changing settings")
        try:
            with open(self.path, encoding="utf-8") as f:
                return tomlkit.parse(f.read())
        except FileNotFoundError:
            return tomlkit.document()

    def _write(self, doc: tomlkit.TOMLDocument) -> None:
        import tomlkit
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        tmp = f"{self.path}.tmp.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(tomlkit.dumps(doc))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
