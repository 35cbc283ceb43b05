"""Codex: its managed worktrees and the sessions (rollouts) that ran in them.

Format, from openai/codex (read at the commits named):

* Home: `$CODEX_HOME` when it is set and not empty (canonicalized, so relative
  to the current directory), else `~/.codex` (find_codex_home, codex-rs
  utils/home-dir); both are read when both exist.
* Rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`
  (codex-rs/core/src/rollout/recorder.rs @ 035416bf, `precompute_log_file_info`);
  archived ones move to `$CODEX_HOME/archived_sessions/` (ARCHIVED_SESSIONS_SUBDIR).
  Each line is `{"timestamp", "type", "payload"}` (codex-rs/protocol/src/protocol.rs
  @ 001cb8e2: RolloutLine flattens RolloutItem, tagged `type`, content `payload`);
  the first is `session_meta`, whose payload holds the session `id` (the uuid
  `codex resume <id>` takes, codex-rs/cli/src/main.rs @ 00044a24 ResumeCommand),
  the `cwd` it ran in and the `cli_version` that wrote it. Rollouts carry no format
  version: a rollout whose first line is not a `session_meta` object with `id`
  and `cwd` is refused (Unreadable names it; the other files are still read).
* Compressed rollouts: since June 2026 Codex rewrites a rollout idle seven days
  as `<name>.jsonl.zst` (zstd) beside where it was, removing the plain file; a
  plain file beside a compressed one is the one Codex reads
  (codex-rs/rollout/src/compression.rs). The first line is decompressed with
  Python's compression.zstd or the zstandard package when either is here; with
  neither, the session id comes from the name (`rollout-<time>-<uuid>`) and the
  cwd is unknown, so such a rollout still says whether a worktree's owner thread
  is archived but leads to no worktree.
* Managed worktrees: under `$CODEX_HOME/worktrees` (the app's
  `<4 hex>/<repository>`, up to three levels deep) or beside the repository
  (codex-rs/worktree/src/paths.rs, manager.rs @ d6e99455 / 12766520). Codex keeps
  `codex-worktree.json` and `codex-thread.json` in the worktree's git admin dir
  (codex-rs/worktree/src/metadata.rs @ d6e99455: written at `git rev-parse
  --git-path <name>`), schema `version` 1, camelCase keys; `ownerThreadId` is the
  session bound to the worktree, `tmuxSession` an optional tmux session name.
  A metadata file of another version, not JSON, or without a field Codex's
  serde requires (WRITTEN) is refused with its worktree.

A worktree under `$CODEX_HOME/worktrees`, or one whose admin dir holds
`codex-worktree.json`, is a Codex session; its agent session is the owner thread,
else the newest rollout whose cwd is inside it. When that session's rollout was
archived the worktree is reported as archived, not imported as live, wherever it
is; an archived thread that ran under `$CODEX_HOME/worktrees` in a worktree that
is gone is reported too (a gone directory elsewhere is not known to have been
Codex's).
"""

from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_ao.importers.found import INTEGER, PATH, TEXT, Found, Unreadable, distinct, env_dir, wrong
from git_ao.importers.worktrees import admin_dir, ran_in
from git_ao.store.states import Kind

TOOL = "codex"
HARNESS = "codex"
METADATA = "codex-worktree.json"
THREAD = "codex-thread.json"
KNOWN_VERSIONS = (1,)
# The fields Codex cannot read a metadata file without (WorktreeMetadata's that
# are neither Option nor defaulted, with their JSON types): a file without one is
# no shape Codex writes. codex-thread.json has only its version to require.
WRITTEN: dict[str, dict[str, type]] = {METADATA: {
    **dict.fromkeys(("manager", "backend", "id", "name", "slug", "repoId", "repoName",
                     "sourceRepoRoot", "originalRelativeCwd", "worktreeGitRoot",
                     "workspaceCwd"), str),
    "createdAt": int, "updatedAt": int}}
# The optional text fields read (Option<String>: absent or null when unset).
OPTIONAL = {METADATA: ("branch", "tmuxSession", "ownerThreadId"), THREAD: ("ownerThreadId",)}


# A compressed rollout: `<plain name>.zst` (codex-rs/rollout/src/compression.rs).
ZST = ".zst"
_UUID_TAIL = re.compile(r"-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
                        r"-[0-9a-fA-F]{12})\.jsonl$")


@dataclass(frozen=True)
class Rollout:
    """One rollout's session_meta: the session id, its cwd ("" when it cannot be
    known: a compressed rollout with no zstd decoder here), the file's mtime (ns)."""

    session_id: str
    cwd: str
    mtime_ns: int
    archived: bool


def homes(home: Path) -> list[Path]:
    """Where Codex keeps its home: `$CODEX_HOME` when set and not empty (Codex then
    uses it alone; relative to the current directory), and `<home>/.codex`, its
    default, which may hold the sessions of runs made without the variable."""
    return distinct([p for p in (env_dir("CODEX_HOME"), home / ".codex") if p is not None])


def default_sources(home: Path) -> list[Path]:
    """Codex's homes (see homes)."""
    return homes(home)


def _first_line(path: Path) -> bytes:
    with open(path, "rb") as f:
        for raw in f:
            if raw.strip():
                return raw.strip()
    return b""


def _zstd_decoder() -> tuple[Any, tuple[type[BaseException], ...]] | None:
    """(open, errors): a function that opens a zstd file for reading in binary, and
    the errors it raises on data that is not whole zstd, from the standard library
    (Python 3.14's compression.zstd) or the zstandard package; None when neither is
    here."""
    try:
        std = importlib.import_module("compression.zstd")
        return std.open, (std.ZstdError, EOFError)
    except ImportError:
        pass
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        return None
    return (lambda path: zstandard.open(path, "rb")), (zstandard.ZstdError, EOFError)


def _first_line_zst(path: Path) -> bytes | None:
    """The first non-empty line of compressed rollout `path`; None when no zstd
    decoder is here. Raises OSError when it cannot be read, Unreadable when it is
    not whole zstd."""
    decoder = _zstd_decoder()
    if decoder is None:
        return None
    opener, errors = decoder
    try:
        with opener(str(path)) as f:
            # Read in chunks: the zstandard package's reader has no readline.
            buf = b""
            while chunk := bytes(f.read(1 << 16)):
                buf += chunk
                lines = buf.split(b"\n")
                for raw in lines[:-1]:
                    if raw.strip():
                        return raw.strip()
                buf = lines[-1]
            return buf.strip()
    except errors as exc:
        raise Unreadable(f"'{path}' is not a Codex rollout git-ao can read (cannot "
                         f"decompress it: {exc})") from None


def rollout(path: Path, archived: bool = False) -> Rollout | None:
    """The session_meta of one rollout file, `.jsonl` or Codex's compressed
    `.jsonl.zst`; None for an empty file (Codex itself skips one). Raises Unreadable
    naming the file otherwise. A compressed one read with no zstd decoder here gives
    the session id its name carries and no cwd."""
    compressed = path.name.endswith(ZST)
    try:
        mtime = path.stat().st_mtime_ns
        line = _first_line_zst(path) if compressed else _first_line(path)
    except OSError as exc:
        raise Unreadable(f"cannot read Codex rollout '{path}': {exc.strerror}") from None
    if line is None:
        tail = _UUID_TAIL.search(path.name.removesuffix(ZST))
        if tail is None:
            raise Unreadable(f"'{path}' is not a Codex rollout git-ao can read (its name "
                             "carries no session id)")
        return Rollout(tail.group(1).lower(), "", mtime, archived)
    if not line:
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        obj = None
    payload = obj.get("payload") if isinstance(obj, dict) else None
    if not (isinstance(obj, dict) and obj.get("type") == "session_meta"
            and isinstance(payload, dict)):
        raise Unreadable(f"'{path}' is not a Codex rollout git-ao can read (its first line "
                         "is not a session_meta)")
    lacks = [k for k in ("id", "cwd") if k not in payload]
    problems = [f"its session_meta has no {', '.join(lacks)}"] if lacks else []
    problems += [p for k, want in (("id", TEXT), ("cwd", PATH))
                 if k in payload and (p := wrong(f"its session_meta's {k}", payload[k], want,
                                                 "Codex"))]
    if not problems and not payload["id"]:
        problems.append("its session_meta's id is empty")
    if problems:
        raise Unreadable(f"'{path}' is not a Codex rollout git-ao can read "
                         f"({'; '.join(problems)})")
    return Rollout(payload["id"], os.path.normpath(payload["cwd"]), mtime, archived)


def rollouts(codex_home: Path, bad: list[str]) -> list[Rollout]:
    """Every rollout under sessions/ and archived_sessions/; one that cannot be read
    is left out and named in `bad`."""
    out = []
    for sub, archived in (("sessions", False), ("archived_sessions", True)):
        root = codex_home / sub
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                plain = name.removesuffix(ZST)
                if not (name.startswith("rollout-") and plain.endswith(".jsonl")):
                    continue
                if plain != name and plain in filenames:
                    continue  # Codex reads the plain one when both are there
                try:
                    r = rollout(Path(dirpath) / name, archived)
                except Unreadable as exc:
                    bad.append(str(exc))
                    continue
                if r is not None:
                    out.append(r)
    return out


def run_in(rs: list[Rollout], path: str) -> list[Rollout]:
    """The rollouts whose cwd is `path` or inside it (worktrees.ran_in)."""
    test = ran_in(path)
    return [r for r in rs if test(r.cwd)]


def _metadata(admin: str, name: str) -> dict[str, Any] | None:
    path = os.path.join(admin, name)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"cannot read Codex metadata '{path}': {exc.strerror}") from None
    try:
        obj = json.loads(data)
    except ValueError:
        raise Unreadable(f"'{path}' is not JSON; Codex metadata git-ao cannot read") from None
    if not isinstance(obj, dict):
        raise Unreadable(f"'{path}' is not a JSON object; Codex metadata git-ao cannot read")
    lacks = [k for k in ("version", *WRITTEN.get(name, {})) if k not in obj]
    if "version" not in lacks and obj["version"] not in KNOWN_VERSIONS:
        raise Unreadable(f"'{path}' has Codex metadata version {obj['version']!r}; "
                         f"git-ao reads version {KNOWN_VERSIONS[-1]} only")
    # A field that is there with another type is said to be so, never missing.
    problems = [f"has no {', '.join(lacks)}"] if lacks else []
    problems += [p for k, t in WRITTEN.get(name, {}).items()
                 if k in obj and (p := wrong(k, obj[k], TEXT if t is str else INTEGER, "Codex"))]
    problems += [p for k in OPTIONAL.get(name, ())
                 if (p := wrong(k, obj.get(k), TEXT, "Codex", null=True))]
    if problems:
        raise Unreadable(f"'{path}' {'; '.join(problems)}; Codex metadata git-ao cannot read")
    return obj


def _managed_roots(root: Path) -> list[str]:
    """Directories holding `.git` up to three levels below `root` (where Codex looks)."""
    out: list[str] = []

    def walk(d: Path, depth: int) -> None:
        try:
            children = sorted(c for c in d.iterdir() if c.is_dir() and not c.is_symlink())
        except OSError:
            return
        for c in children:
            if os.path.lexists(c / ".git"):
                out.append(str(c))
            elif depth < 3:
                walk(c, depth + 1)

    if root.is_dir():
        walk(root, 1)
    return out


def _str(obj: dict[str, Any] | None, key: str) -> str | None:
    v = obj.get(key) if obj else None
    return v if isinstance(v, str) and v else None


def read(source: Path) -> list[Found]:
    """The Codex-managed worktrees of the Codex home `source`. Raises Unreadable naming
    every file that cannot be read, one line each, with what the rest gave."""
    if not source.is_dir():
        raise Unreadable(f"'{source}' is not a Codex home directory")
    bad: list[str] = []
    rs = rollouts(source, bad)
    managed_root = source / "worktrees"
    candidates = {os.path.normpath(p): True for p in _managed_roots(managed_root)}
    # Worktrees Codex made beside their repository are known from the sessions run in
    # them, archived ones too: an archived thread's worktree is reported, not skipped.
    for r in rs:
        if r.cwd not in candidates and os.path.isdir(r.cwd):
            candidates.setdefault(r.cwd, False)
    out = []
    seen = set()
    for path, under_home in sorted(candidates.items()):
        admin = admin_dir(path)
        if admin is None:
            continue
        top = os.path.normpath(path)
        if top in seen:
            continue
        try:
            meta = _metadata(admin, METADATA)
            if not under_home and meta is None:
                continue  # a worktree of someone else's that Codex merely ran in
            thread = _metadata(admin, THREAD)
        except Unreadable as exc:
            bad.append(f"{exc}; its worktree {top} is not imported")
            continue
        seen.add(top)
        owner = _str(thread, "ownerThreadId") or _str(meta, "ownerThreadId")
        inside = run_in(rs, top)
        sid = owner or (max(inside, key=lambda r: r.mtime_ns).session_id if inside else None)
        # The session's own rollouts wherever they ran (a compressed one read with no
        # decoder has no cwd, yet its name and place say which and whether archived).
        mine = [r for r in rs if r.session_id == sid]
        archived = bool(mine) and all(r.archived for r in mine)
        out.append(Found(
            tool=TOOL, tool_id=top, worktree=Path(top), branch=_str(meta, "branch"),
            harness=HARNESS, agent_session_id=sid, kind=Kind.WORKER, live=not archived,
            tmux_session=_str(meta, "tmuxSession"),
            note=f"its Codex session {sid} is archived" if archived else None,
            name=_name(top, managed_root, under_home)))
    out += _archived_elsewhere(rs, managed_root)
    if bad:
        raise Unreadable(bad, out)
    return out


def _name(top: str, managed_root: Path, under_home: bool) -> str:
    """The session id to prefer: the worktree's name, with its parent's under
    Codex's root when it sits deeper (`<repo>-<hex>`: the app's layout)."""
    name = os.path.basename(top)
    if under_home and os.path.dirname(top) != str(managed_root):
        name = f"{name}-{os.path.basename(os.path.dirname(top))}"
    return name


def _archived_elsewhere(rs: list[Rollout], managed_root: Path) -> list[Found]:
    """The archived threads that ran under Codex's worktree root in a worktree that
    is gone: reported, one per directory (the newest thread's), as the archived
    threads of worktrees still there are. Outside that root a directory that is gone
    is not known to have been a Codex worktree, and is not reported."""
    root = str(managed_root)
    newest: dict[str, Rollout] = {}
    for r in rs:
        if r.archived and r.cwd.startswith(root + os.sep) and not _in_a_worktree(r.cwd, root) \
                and (r.cwd not in newest or r.mtime_ns > newest[r.cwd].mtime_ns):
            newest[r.cwd] = r
    return [Found(tool=TOOL, tool_id=cwd, worktree=Path(cwd), branch=None, harness=HARNESS,
                  agent_session_id=r.session_id, kind=Kind.WORKER, live=False,
                  note=f"its Codex session {r.session_id} is archived and its worktree is gone",
                  name=_name(cwd, managed_root, True))
            for cwd, r in sorted(newest.items())]


def _in_a_worktree(path: str, root: str) -> bool:
    """Is there a `.git` at `path` or above it, below `root`? Such a worktree was read
    (or refused) above; only a directory with none is gone."""
    while path != root and path.startswith(root + os.sep):
        if os.path.lexists(os.path.join(path, ".git")):
            return True
        path = os.path.dirname(path)
    return False
