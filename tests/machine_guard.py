"""The test session leaves the machine as it found it.

Tests run real shells, package installs and git as whatever user runs pytest,
root in CI. A set-up line that escapes its temporary directory (a zsh
`compinit -d /dev/null` dump moved over the null device, a completion file
written into the user's real home) damages the machine for every later
program. Two checks catch that:

- after every test, `/dev/null` must still be the null character device; the
  test that broke it fails, and as root the device is put back so the rest of
  the run (and the machine) keep working;
- at the end of the run, the places a test could write by mistake (the real
  `$HOME`'s git-ao, shell and git files, the system's completion directories)
  must list exactly what they listed at the start; anything added, removed or
  changed fails the run, named.

The run owns a private temporary directory: `TMPDIR` points there for the run
and every process it starts, so what a test or a git-ao command makes with
`tempfile` lands in it, and whatever is still at its top when the run ends
(a temporary file something forgot) fails the run, named. pytest's own base
stays in the system temporary directory, where it rotates. Other programs on
the machine may use /tmp as they like: the guard looks only at what the run
owns.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

# The null device is character device 1,3 on Linux; elsewhere compare with the
# start of the run.
_NULL = "/dev/null"


def null_device_problem(start: os.stat_result | None = None) -> str | None:
    """Why /dev/null is not the null device any more, or None when it is."""
    try:
        st = os.lstat(_NULL)
    except OSError as exc:
        return f"{_NULL} is gone: {exc}"
    if not stat.S_ISCHR(st.st_mode):
        return f"{_NULL} is no longer a character device (mode {stat.filemode(st.st_mode)})"
    if start is not None and st.st_rdev != start.st_rdev:
        return f"{_NULL} is a different device now"
    return None


def _repair_null() -> None:
    """As root, put the null device back so the rest of the machine keeps working."""
    if os.geteuid() != 0:
        return
    try:
        if os.path.lexists(_NULL):
            os.unlink(_NULL)
        os.mknod(_NULL, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod(_NULL, 0o666)
    except OSError:
        pass


def watched_places(home: Path) -> list[Path]:
    """Where a test must never write: the real home's git-ao, git and shell files,
    the system's completion directories."""
    return [
        home / ".ao",
        home / ".gitconfig",
        home / ".config" / "git",
        home / ".config" / "git-ao",
        home / ".config" / "fish",
        home / ".config" / "systemd",
        home / ".local" / "share" / "bash-completion",
        home / ".local" / "share" / "zsh",
        home / ".local" / "share" / "fish",
        home / ".local" / "share" / "man",
        home / ".local" / "bin",
        home / ".zshrc",
        home / ".bashrc",
        Path("/etc/bash_completion.d"),
        Path("/usr/share/bash-completion/completions"),
        Path("/usr/share/zsh/vendor-completions"),
        Path("/usr/share/fish/vendor_completions.d"),
        Path("/usr/local/share/zsh/site-functions"),
        Path("/usr/local/bin"),
    ]


def _entry(path: Path) -> tuple:
    st = os.lstat(path)
    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
    return (stat.S_IFMT(st.st_mode), size, st.st_mtime_ns)


def snapshot(home: Path) -> dict[str, tuple]:
    """{path: (file type, size, mtime)} of every watched place (recursively) and of
    the names at the top of the real home (so a stray `.zcompdump` shows)."""
    out: dict[str, tuple] = {}
    for place in watched_places(home):
        if not os.path.lexists(place):
            continue
        out[str(place)] = _entry(place)
        if place.is_dir() and not place.is_symlink():
            for root, dirs, files in os.walk(place):
                for name in dirs + files:
                    p = Path(root, name)
                    try:
                        out[str(p)] = _entry(p)
                    except OSError:
                        pass
    try:
        names = os.listdir(home)
    except OSError:
        names = []
    for name in names:
        out.setdefault(str(home / name), ("present",))
    return out


def leftovers(run_tmp: Path) -> list[str]:
    """What is still at the top of the run's private temporary directory."""
    try:
        return [f"left in the run's temporary directory: {run_tmp / n}"
                for n in sorted(os.listdir(run_tmp))]
    except OSError:
        return []


def diff(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The changes between two snapshots, one line each, sorted."""
    lines = []
    for p in sorted(set(before) | set(after)):
        if p not in before:
            lines.append(f"added: {p}")
        elif p not in after:
            lines.append(f"removed: {p}")
        elif before[p] != after[p]:
            lines.append(f"changed: {p}")
    return lines


_state: dict[str, object] = {}


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """Give the run its private temporary directory before any test, worker or
    command starts (xdist's workers inherit the environment)."""
    if _is_worker(config) or "TMPDIR_OWNER" in _state:
        return
    system = tempfile.gettempdir()
    # pytest's base (and its rotation of old runs) stays where it was.
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", system)
    run_tmp = tempfile.mkdtemp(prefix="git-ao-test-run-", dir=system)
    # The system directory's mode (1777 on /tmp): tests acting as another user
    # reach what they make here as they would under /tmp.
    os.chmod(run_tmp, stat.S_IMODE(os.stat(system).st_mode))
    os.environ["TMPDIR"] = run_tmp
    tempfile.tempdir = None
    _state["TMPDIR_OWNER"] = Path(run_tmp)


def pytest_sessionstart(session: pytest.Session) -> None:
    _state["null"] = os.lstat(_NULL) if null_device_problem() is None else None
    if _is_worker(session.config):
        return
    home = Path(os.path.expanduser("~"))
    _state["home"] = home
    _state["before"] = snapshot(home)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    result = yield
    start = _state.get("null")
    problem = null_device_problem(start if isinstance(start, os.stat_result) else None)
    if problem is not None:
        _repair_null()
        pytest.fail(f"this test damaged the machine: {problem}", pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config) or "before" not in _state:
        return
    problems = []
    null = null_device_problem()
    if null is not None:
        problems.append(null)
        _repair_null()
    home, run_tmp = _state["home"], _state.get("TMPDIR_OWNER")
    assert isinstance(home, Path)
    before = _state["before"]
    assert isinstance(before, dict)
    problems += diff(before, snapshot(home))
    if isinstance(run_tmp, Path):
        problems += leftovers(run_tmp)
        shutil.rmtree(run_tmp, ignore_errors=True)
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "the test run changed the machine outside its temporary directories:\n  " + \
            "\n  ".join(problems)
        if reporter is not None:
            reporter.write_sep("=", "machine guard", red=True)
            reporter.write_line(text)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
