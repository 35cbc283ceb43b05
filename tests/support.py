"""Helpers the test files share (fixtures live in conftest.py).

- running things: `git()` runs real git; `ao()` runs a git-ao command as a user
  would (in-process when the process boundary is not what a test is about,
  see `ao`);
- building state: `init_repo`, `commit_on`, `dirty`, `add_work`, `make_sessions`;
- reading state: `sessions_by_id`, `states`, `json_results`, `ref_of`, `db_path`,
  `log_text`;
- the checks the crash, soak, signal and recovery tests share:
  `integrity_ok`, `assert_work_safe`, `assert_all_preserved`, `assert_all_restored`;
- the relaunch probe: a command that writes what it was started with to PROBE_OUT.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.worktree_state import same_but_ignored, state

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "bin"
REF = "refs/ao/preserved/"
KILLED = 128 + signal.SIGKILL  # what git reports for a dashed command killed by SIGKILL


# ---------------------------------------------------------------- running commands


def git(*args, cwd, check=True, env=None, input=None) -> str:
    """Run real git; return stdout as str. Raises CalledProcessError when check fails."""
    full = dict(os.environ, **(env or {}))
    res = subprocess.run(["git", *map(str, args)], cwd=cwd, capture_output=True, env=full,
                         input=input, check=False)
    if check and res.returncode != 0:
        raise subprocess.CalledProcessError(res.returncode, res.args, res.stdout, res.stderr)
    return res.stdout.decode("utf-8", "surrogateescape")


# The dashed commands git dispatches to bin/, by the module whose main() they run.
_COMMANDS = {"ao": "git_ao.cli.ao", "ao-preserve": "git_ao.cli.preserve",
             "ao-restore": "git_ao.cli.restore", "ao-prune": "git_ao.cli.prune"}
COMMAND_MODULES = tuple(_COMMANDS.values())
# What each executable runs first (bin/'s scripts, which the wheel installs).
_ENTRY = {"ao": ("git_ao.cli.entry", "ao"), "ao-restore": ("git_ao.cli.entry", "restore"),
          "ao-preserve": ("git_ao.cli.entry", "preserve"),
          "ao-prune": ("git_ao.cli.entry", "prune")}
# Variables an in-process run can apply faithfully: git-ao reads them while a
# command runs (or only the processes it starts read them). Anything else (a
# crash point, GIT_AO_DEBUG, PATH, PYTHONPATH, the locale, colours) takes
# effect at start-up or in the interpreter itself, so it needs a process.
_IN_PROCESS_ENV = frozenset({"AO_DATA_DIR", "PROBE_OUT", "XDG_DATA_HOME", "XDG_DATA_DIRS",
                             "MANPATH"})
# GIT_AO_TEST_PROCESSES: a test's own switch, for tests that remount or fill the
# file system under the data dir (an open database in this process would hold it).
_PROCESS_ONLY = ("GIT_AO_CRASH_AT", "GIT_AO_CRASH_SIGNAL", "GIT_AO_DEBUG",
                 "GIT_AO_TEST_PROCESSES")


@contextlib.contextmanager
def held_open(path):
    """A python process (no git: a libgit2 or JGit tool stands so) with the file at
    `path` open, made when missing, until the block ends; yields its pid. Run
    git-ao with process=True beside it: git-ao never counts its own descendants."""
    code = ("import os, sys; fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY); "
            "print(flush=True); sys.stdin.read()")
    with subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as proc:
        try:
            proc.stdout.readline()  # it has the file open
            yield proc.pid
        finally:
            proc.communicate(b"")


def ao(*args, cwd=None, rc=0, env=None, process=False) -> subprocess.CompletedProcess:
    """Run `git <args>` (e.g. ao("ao-preserve", "--all")) as a user would and return a
    CompletedProcess with text stdout and stderr. Asserts the exit status when rc is
    not None.

    A git-ao command runs in this process (about 0.2 s less per call) unless
    process=True, `env` holds a variable the in-process run cannot apply (see
    _IN_PROCESS_ENV), or a crash point is set; use process=True where the process is
    the point: signals, kills, exit statuses through git's dispatch, the
    environment git-ao starts with, terminals."""
    args = [str(a) for a in args]
    cwd = str(cwd or os.getcwd())
    if (process or not args or args[0] not in _COMMANDS or set(env or ()) - _IN_PROCESS_ENV
            or any(os.environ.get(name) for name in _PROCESS_ONLY)):
        res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                             env=dict(os.environ, **(env or {})), check=False)
    else:
        res = _in_process(args, cwd, env or {})
    if rc is not None:
        assert res.returncode == rc, (
            f"git {' '.join(args)}: rc={res.returncode}\n"
            f"stdout: {res.stdout}\nstderr: {res.stderr}")
    return res


def _stream(errors: str) -> io.TextIOWrapper:
    # A binary-safe stand-in for sys.stdout/sys.stderr: code that writes bytes to
    # .buffer (as the real streams allow) is captured too.
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    data = stream.buffer.getvalue()  # type: ignore[attr-defined]
    stream.close()
    # What subprocess.run(text=True) makes of the same bytes.
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _in_process(args: list[str], cwd: str, env: dict) -> subprocess.CompletedProcess:
    """Run git-ao's main() for `args` here, as its bin/ script would, leaving nothing
    behind: argv, the standard streams, the directory, the environment, the -v
    trace, the log file, the database and the signal handlers are put back
    or closed afterwards."""
    from git_ao import git as ao_git
    from git_ao.cli import app as app_module
    from git_ao.store import log as ao_log

    module, name = _ENTRY.get(args[0], (_COMMANDS[args[0]], "main"))
    main = getattr(importlib.import_module(module), name)
    out, err = _stream("strict"), _stream("backslashreplace")
    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd(), dict(os.environ),
             {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)})
    code: int = 0
    try:
        os.chdir(cwd)
        os.environ.update(env)
        sys.argv = [str(BIN / f"git-{args[0]}"), *args[1:]]
        # stdin as the subprocess path gives it under pytest: nothing to read.
        sys.stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        sys.stdout, sys.stderr = out, err
        try:
            main()
        except SystemExit as exc:
            if isinstance(exc.code, str):
                err.write(exc.code + "\n")
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        sys.stdin.close()
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
        os.chdir(saved[4])
        os.environ.clear()
        os.environ.update(saved[5])
        for sig, handler in saved[6].items():
            signal.signal(sig, handler)
        ao_git.set_trace(None)
        app_module._running = None
        ao_log.close()
        # The database connection dies with the command's objects, some held in
        # reference cycles: collect now, as a process exit would close it.
        gc.collect()
    return subprocess.CompletedProcess(["git", *args], code, _text(out), _text(err))


# ---------------------------------------------------------------- venvs


def built_once(base_temp: Path, name: str, build: Callable[[Path], object]) -> Path:
    """The directory `base_temp/name`, filled by `build(directory)` once per test run.

    base_temp: the directory every xdist worker of this run shares (the parent of
    a worker's base temp). The first worker to get here builds under a file lock;
    the others wait for it and reuse what it built."""
    base = base_temp / name
    with open(base_temp / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / ".built").exists():
            shutil.rmtree(base, ignore_errors=True)
            base.mkdir()
            build(base)
            (base / ".built").touch()
    return base


def build_wheel(out: Path) -> Path:
    """Build git-ao's wheel from the checkout into `out`; returns its path.

    Without build isolation: hatchling comes from the test extras, so no build
    environment is fetched from the package index."""
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                          "--no-build-isolation", "-w", str(out), str(ROOT)],
                         capture_output=True, text=True, check=False)
    wheels = sorted(out.glob("git_ao-*.whl"))
    if res.returncode != 0 or len(wheels) != 1:
        raise AssertionError(f"pip wheel failed:\n{res.stdout}\n{res.stderr}")
    return wheels[0]


def venv_with(root: Path, *pip_args: str, home: Path) -> subprocess.CompletedProcess:
    """Create a venv at `root` and pip-install `pip_args` into it; returns pip's result.

    The venv gets no pip of its own (ensurepip costs about 6 s of CPU): this
    interpreter's pip installs into it with `--python`. pip's cache and config
    stay under `home`, not the real home."""
    import venv
    venv.EnvBuilder(with_pip=False).create(root)
    return pip_in(root, "install", "-q", *pip_args, home=home)


def pip_in(root: Path, *args: str, home: Path) -> subprocess.CompletedProcess:
    """Run this interpreter's pip on the venv at `root` (`pip --python`)."""
    env = dict(os.environ, HOME=str(home), PIP_CACHE_DIR=str(home / "pip-cache"),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"),
                           *args], capture_output=True, text=True, env=env, check=False)


# ---------------------------------------------------------------- building state


def init_repo(path: Path) -> Path:
    """Give the repository at `path` a first commit of a few files and a .gitignore."""
    (path / "README.md").write_text("hello\n")
    (path / "src").mkdir(exist_ok=True)
    (path / "src" / "app.py").write_text("print('hi')\n")
    (path / "src" / "util.py").write_text("x = 1\n")
    (path / "run.sh").write_text("#!/bin/sh\necho run\n")
    (path / "data.bin").write_bytes(bytes(range(256)))
    (path / ".gitignore").write_text("*.log\nbuild/\n")
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "initial", cwd=path)
    return path


def commit_on(repo: Path, branch: str, files: dict, message="moved on"):
    """Move `branch` of `repo` forward by one commit writing `files` ({relative path:
    text}), in a worktree of its own that is removed afterwards, so no other
    worktree (the main one included) is touched."""
    # A directory of its own: two tests moving a branch of the same name at once
    # must not meet in one path.
    base = Path(tempfile.mkdtemp(prefix="tmp-commit-on-"))
    tmp = base / branch.replace("/", "-")
    git("worktree", "add", "-q", tmp, branch, cwd=repo)
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    git("add", "--", *files, cwd=tmp)
    git("commit", "-q", "-m", message, cwd=tmp)
    git("worktree", "remove", tmp, cwd=repo)
    base.rmdir()


def add_submodule(wt: Path, src: Path, name: str = "lib") -> Path:
    """Make a repository `src` with one commit (l.txt) and add it to the worktree
    `wt` as submodule `name` (staged, not committed); returns its path in `wt`."""
    git("init", "-q", "-b", "main", str(src), cwd=wt)
    (src / "l.txt").write_text("lib\n")
    git("add", "l.txt", cwd=src)
    git("commit", "-qm", "l1", cwd=src)
    git("submodule", "add", "-q", str(src), name, cwd=wt)
    return wt / name


def dirty(wt: Path):
    """Make a representative mix of uncommitted work in worktree `wt`."""
    (wt / "README.md").write_text("hello\nstaged line\n")
    git("add", "README.md", cwd=wt)
    (wt / "README.md").write_text("hello\nstaged line\nunstaged line\n")
    (wt / "src" / "app.py").write_text("print('changed')\n")
    git("rm", "-q", "src/util.py", cwd=wt)
    (wt / "data.bin").unlink()
    (wt / "new dir" / "deep").mkdir(parents=True)
    (wt / "new dir" / "deep" / "naïve file.txt").write_text("untracked ünïcode\n")
    (wt / "bin.dat").write_bytes(b"\x00\x01\xff" * 100)
    os.symlink("README.md", wt / "link-to-readme")
    os.chmod(wt / "run.sh", 0o755)
    (wt / "debug.log").write_text("ignored\n")
    (wt / "build").mkdir()
    (wt / "build" / "out.o").write_bytes(b"obj")


def add_work(wt, kind, tag):
    """Work of one kind in worktree `wt`: 0 the full dirty() fixture, 1 an untracked
    file only, 2 a staged change only, 3 none (clean). `tag` makes it distinct."""
    if kind == 0:
        dirty(wt)
    elif kind == 1:
        (wt / f"notes-{tag}.txt").write_text(f"untracked {tag}\n" * 50)
    elif kind == 2:
        (wt / "README.md").write_text(f"hello\nstaged {tag}\n")
        git("add", "README.md", cwd=wt)


def make_sessions(repo, worktrees, n, *, other=None, detached=True, kinds=None):
    """n registered sessions s00, s01, ... with varied work; returns {id: (repo, path)}.

    The mix, in turn: the full dirty() fixture (staged, unstaged, deleted,
    untracked, symlink, mode change, ignored), untracked only, staged only,
    clean, and (detached=True) a detached HEAD with a change. kinds: the list of
    mix numbers to use instead. Sessions alternate between `repo` and `other`."""
    out = {}
    for i in range(n):
        r = other if other is not None and i % 2 else repo
        sid = f"s{i:02d}"
        wt = worktrees(r, sid, register=False)
        kind = kinds[i] if kinds else i % 5
        if kind < 4:
            add_work(wt, kind, str(i))
        elif detached:
            git("checkout", "-q", "--detach", cwd=wt)
            (wt / "src" / "app.py").write_text(f"print({i})\n")
        ao("ao", "add", wt, "--id", sid, cwd=r)
        out[sid] = (Path(r), wt)
    return out


def crash_env(point):
    return {"GIT_AO_CRASH_AT": point}


# ---------------------------------------------------------------- reading state


def sessions_by_id(repo) -> dict:
    """{id: session record} from `git ao list --all --json` (every repository's)."""
    listed = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)
    return {s["id"]: s for s in listed["sessions"]}


def states(repo) -> dict:
    """{id: state} from `git ao list --json`."""
    return {sid: s["state"] for sid, s in sessions_by_id(repo).items()}


def json_results(res: subprocess.CompletedProcess) -> list:
    """The per-session results of a command run with --json."""
    return json.loads(res.stdout)["results"]


def ref_of(repo, sid):
    """The commit id refs/ao/preserved/<sid> points at, or None when there is no such ref."""
    out = git("rev-parse", "-q", "--verify", REF + sid, cwd=repo, check=False).strip()
    return out or None


def ao_refs(cwd, prefix="refs/ao/") -> str:
    """`git for-each-ref <prefix>` without the histories (refs/ao/history/), which
    keep every save of a session past its restore by design."""
    out = git("for-each-ref", prefix, cwd=cwd)
    return "".join(ln + "\n" for ln in out.splitlines() if "\trefs/ao/history/" not in ln)


def db_path() -> Path:
    return Path(os.environ["AO_DATA_DIR"]) / "git-ao.db"


def log_text() -> str:
    """The whole of git-ao's log file in the data dir."""
    with open(os.path.join(os.environ["AO_DATA_DIR"], "logs", "git-ao.log")) as fh:
        return fh.read()


# ---------------------------------------------------------------- shared checks


def integrity_ok():
    """PRAGMA integrity_check of the database is 'ok'."""
    conn = sqlite3.connect(db_path())
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def _comparable(st):
    return {k: v for k, v in st.items() if k not in ("ignored", "branch")}


def work_in_ref(repo, sid, before, scratch) -> bool:
    """Does refs/ao/preserved/<sid> hold exactly `before` (HEAD, index, files)?
    Checked by `git stash apply --index` of the ref into a scratch worktree."""
    ref = ref_of(repo, sid)
    if ref is None:
        return False
    head = git("rev-parse", f"{ref}^1", cwd=repo).strip()
    git("worktree", "add", "-q", "--detach", scratch, head, cwd=repo)
    try:
        git("stash", "apply", "--index", ref, cwd=scratch)
        return _comparable(state(scratch)) == _comparable(before)
    finally:
        git("worktree", "remove", "--force", scratch, cwd=repo)


def assert_work_safe(sessions, before, tmp):
    """Every session's work is in its live worktree or in its ref. A clean session
    with no ref is safe when its branch (or, detached, nothing) still holds HEAD."""
    for sid, (repo, wt) in sessions.items():
        b = before[sid]
        if wt.is_dir():
            with contextlib.suppress(Exception):  # a half-made worktree is judged by its ref
                if same_but_ignored(b, state(wt)):
                    continue
        if work_in_ref(repo, sid, b, tmp / f"scratch-{sid}"):
            continue
        clean = not b["status"]
        if clean and b["branch"]:
            tip = git("rev-parse", "-q", "--verify", b["branch"].decode(), cwd=repo,
                      check=False).strip()
            if tip == b["head"].decode():
                continue
        raise AssertionError(f"work of session {sid} is neither in {wt} nor in {REF}{sid}")


def assert_all_restored(sessions, before, repo):
    """The fully restored state: every session live, its worktree exactly as before
    (so nothing was applied twice), no preserve ref left."""
    assert set(states(repo).values()) == {"live"}, states(repo)
    for sid, (r, wt) in sessions.items():
        assert same_but_ignored(before[sid], state(wt)), sid
        assert ref_of(r, sid) is None, sid


def assert_all_preserved(sessions, repo):
    """The fully preserved state: every session pending, its directory gone, its
    registration gone, a ref for each one that had work."""
    assert set(states(repo).values()) == {"pending"}, states(repo)
    for sid, (r, wt) in sessions.items():
        assert not wt.exists(), sid
        listing = git("worktree", "list", "--porcelain", cwd=r)
        assert f"worktree {wt}\n" not in listing, sid


# ---------------------------------------------------------------- the relaunch probe

PROBE = ("import json, os, sys; json.dump({'cwd': os.getcwd(), 'argv': sys.argv[1:], "
         "'env': {k: v for k, v in os.environ.items() if k.startswith('AO_')}}, "
         "open(os.environ['PROBE_OUT'], 'w'))")


def round_trip(repo, wt: Path, sid: str, *, exact: bool = False, how: str | None = None):
    """Preserve `sid` and restore it; its worktree must come back as it was (every
    permission bit, directory and sparse pattern too when `exact`) and its ref is
    dropped. how="checkout" makes restore rebuild it from the commit, "trash" checks
    it came back from the trash. Returns the restore's result."""
    from tests.trash_helpers import checkout_path_only
    from tests.worktree_state import assert_restored, exact_state
    look = exact_state if exact else state
    before = look(wt)
    ao("ao-preserve", sid, cwd=repo)
    assert not wt.exists()
    if how == "checkout":
        checkout_path_only()
    res = ao("ao-restore", sid, cwd=repo)
    if how is not None:
        assert (f"{wt} from the trash" in res.stdout) == (how == "trash"), res.stdout
    assert_restored(before, look(wt))
    assert ref_of(repo, sid) is None
    return res


def tmpfs(path: Path, size: str = "16m", mode: str | None = None):
    """A tmpfs of `size` mounted at `path` (made when missing) for the block, then
    lazily unmounted. Skips the test where mounting is not allowed (not root)."""
    opts = f"size={size}" + (f",mode={mode}" if mode else "")
    return _mounted(["-t", "tmpfs", "-o", opts, "tmpfs"], path, "a tmpfs")


def bind_mount(source: Path, path: Path, under: Path | None = None):
    """`source` bind-mounted at `path` (a directory made when missing, or a file
    over a file) for the block: a mount of the same file system, which keeps its
    st_dev. Afterwards `path` is lazily unmounted, or, with `under`, every mount
    below it (wherever a failing run moved the mount). Skips the test where
    mounting is not allowed (not root)."""
    return _mounted(["--bind", str(source)], path, "a bind mount", under)


@contextlib.contextmanager
def _mounted(args: list[str], path: Path, what: str, under: Path | None = None):
    import pytest
    if os.geteuid() != 0:
        pytest.skip(f"{what} needs root")
    if not path.exists():
        path.mkdir(parents=True)
    res = subprocess.run(["mount", *args, str(path)], capture_output=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount {what} here: {res.stderr.decode().strip()}")
    try:
        yield path
    finally:
        points = [str(path)]
        if under is not None:
            from git_ao.fs import walk
            points = [p for p in walk.mount_points() if p.startswith(str(under) + "/")]
        for point in points:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def man_source_text(text: str) -> str:
    """A man page's roff source with the font escapes dropped and `\\-`, `\\e`
    read as `-` and `\\`: what a reader sees, for matching option names."""
    import re
    return re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\e", "\\")
