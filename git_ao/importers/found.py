"""What a tool adapter reports: one Found per session the tool keeps in a worktree.

Every adapter module (git_ao/importers/<tool>.py) exposes `TOOL` (the `--tool`
name), `default_sources(home)` (where the tool keeps its state under a home
directory, and first where the tool's own environment variable moves it when
that is set: env_dir; those that exist are read) and `read(source)` (the
sessions one source holds, as Found). One whose tool keeps state inside
repositories also exposes `repository_sources(home, common_dirs)` (Conductor's
`.conductor` directories, given the repositories git-ao knows), read as sources
of their own unless --from names the state. An adapter never writes the tool's
files: SQLite is opened through git_ao.store.foreign, everything else is only
read. A file it cannot read (corrupt, or of a format version nobody checked it
against) raises Unreadable with one line per such file, each naming it (and what
the rest of the source gave); the import reports each line as a refusal of its
own, registers the rest and goes on with the other tools.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from git_ao.errors import Fatal
from git_ao.store import foreign
from git_ao.store.states import Kind


@dataclass(frozen=True)
class Found:
    """One session as its tool recorded it.

    tool: the adapter's TOOL. tool_id: the tool's own stable id for the session
    (an instance title, a task attempt id, the worktree path when it has none).
    worktree: the linked worktree's absolute path (None: the tool no longer
    records where it was, said only of a session that is not live). branch: as the tool recorded it
    (None: read from the worktree). harness: the agent program the tool ran, as the
    tool names it ("claude", "codex", "aider", ...; "" when unknown).
    agent_session_id: what resumes the agent, when the tool keeps one.
    live: False for a session the tool paused, archived, ended or deleted: it is
    reported, never registered as live. group: one id shared by the worktrees of
    a workspace that spans several repositories. tmux_session: the tmux session
    the tool ran the agent in. note: why it is not live, for the message.
    name: the session id to prefer (made valid, and `<repo>-<name>` when taken);
    None: the worktree's name, as `git ao add` does.
    """

    tool: str
    tool_id: str
    worktree: Path | None
    branch: str | None
    harness: str
    agent_session_id: str | None
    kind: Kind
    live: bool
    group: str | None = None
    tmux_session: str | None = None
    note: str | None = None
    name: str | None = None


class Unreadable(Exception):
    """Files of a tool that cannot be read: corrupt, or of an unknown format version.
    lines: one line per file, each naming it (str() is the first); every one is
    reported, none folded into a count. found: the sessions the rest of the source
    still gave (an adapter reading many files refuses the bad ones, not all)."""

    def __init__(self, lines: str | list[str], found: list[Found] | None = None) -> None:
        self.lines: list[str] = [lines] if isinstance(lines, str) else list(lines)
        super().__init__(self.lines[0])
        self.found: list[Found] = list(found or [])


def env_dir(name: str) -> Path | None:
    """The directory a tool's environment variable `name` moves its state to (CODEX_HOME,
    CLAUDE_CONFIG_DIR, CRYSTAL_DIR): None when it is unset or empty; a relative value
    is taken from the current directory, as the tool itself takes it."""
    value = os.environ.get(name)
    return Path(os.path.abspath(value)) if value else None


def distinct(paths: Iterable[Path]) -> list[Path]:
    """`paths` in order, less each that names the same place as an earlier one (the
    same real path), so no state is read twice."""
    seen: set[str] = set()
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            out.append(p)
    return out


def read_database(path: Path, what: str,
                  read: Callable[[foreign.Connection, Path], list[Found]]) -> list[Found]:
    """`read(conn, path)` over a tool's SQLite database opened read-only (the tool's
    directory left as it was: store/foreign.py). Raises Unreadable, one line naming
    the file (`what`: "crystal database"), when it cannot be opened or read."""
    try:
        with foreign.read_only(str(path), what) as conn:
            return read(conn, path)
    except Fatal as exc:
        raise Unreadable(str(exc)) from None
    except foreign.Error as exc:
        raise Unreadable(f"{what} '{path}' cannot be read: {exc}") from None


# What a field read from a tool's files must be (`wrong`): text, an integer (SQLite's
# BOOLEAN too), a 16-byte BLOB (a UUID as sqlx stores it), an absolute path (text),
# a JSON object.
TEXT, INTEGER, UUID, PATH, OBJECT = "text", "an integer", "a 16-byte UUID", "an absolute path", "an object"
_PYTHON = {TEXT: str, INTEGER: int, UUID: bytes, PATH: str, OBJECT: dict}


def describe(value: object) -> str:
    """A value read from a tool's file, as a refusal names it: its type, and the
    value itself when short (a BLOB by its length)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, bytes | bytearray):
        return f"a BLOB of {len(value)} bytes"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:60]!r}" + ("..." if len(value) > 60 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def wrong(name: str, value: object, want: str, tool: str, *, null: bool = False) -> str | None:
    """Why field `name` holding `value` is not as `tool` writes it, or None when it
    is: `want` one of TEXT, INTEGER, UUID, PATH (absolute: a relative path would be
    taken from git-ao's current directory, which is nothing of the tool's), OBJECT;
    null: None is allowed (the tool writes none there). A value of another type
    says so ("not as <tool> writes it"), never that the field is missing."""
    if value is None and null:
        return None
    ok = isinstance(value, _PYTHON[want]) and not isinstance(value, bool)
    if want == UUID:
        ok = ok and len(value) == 16  # type: ignore[arg-type]
    if ok and want == PATH and not value:
        return f"{name} is empty, not as {tool} writes it ({PATH})"
    if ok and want == PATH and not os.path.isabs(str(value)):
        return f"{name} is the relative path {value!r}, not as {tool} writes it ({PATH})"
    if ok and want == PATH and "\0" in str(value):
        ok = False
    return None if ok else f"{name} is {describe(value)}, not as {tool} writes it ({want})"


def row_name(what: str, key: object, n: int) -> str:
    """A row or entry as a refusal names it: `what` with its id when that is text
    (`session 's1'`), else its position (`session at row 3`)."""
    return f"{what} {key!r}" if isinstance(key, str) and key else f"{what} at row {n}"
