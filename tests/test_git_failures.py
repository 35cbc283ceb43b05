"""git_ao/git/process.py: how git's failures reach the rest of git-ao."""

import os
import subprocess
import sys

import pytest

from git_ao import git
from git_ao.errors import Usage
from tests.support import ao


def test_git_killed_by_a_signal_is_a_failed_command_not_a_crash(repo):
    # An alias that signals its own git process: git dies of SIGTERM, as under
    # systemd's stop. call() reports it as exit 128 + 15 instead of raising.
    res = git.call(["-c", "alias.die=!kill -TERM $PPID", "die"], str(repo))
    assert res.status == 128 + 15


def test_paths_with_a_newline_are_refused_clearly(repo, tmp_path):
    odd = tmp_path / "nl\nreal"
    odd.mkdir()
    with pytest.raises(Usage):
        git.repo_dirs(str(odd))
    res = ao("ao", "add", str(odd), cwd=repo, rc=129)
    assert res.stderr.startswith("error: paths containing a newline")
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr


def test_unreachable_cwd_is_a_git_error(tmp_path):
    with pytest.raises(git.GitError):
        git.run(["status"], str(tmp_path / "missing"))
    assert os.path.isdir(tmp_path)


def test_input_larger_than_a_pipe_and_both_outputs_come_back(repo):
    # git reads stdin while it writes stdout and stderr: the exchange must not
    # block on any of the three pipes (each holds 64 KiB).
    paths = "".join(f"no-such-file-{i:06d}\n" for i in range(20000)).encode()
    res = git.call(["check-ignore", "-v", "-n", "--stdin"], str(repo), input=paths)
    assert res.status == 1  # none ignored, each listed all the same (-n)
    assert res.out.count(b"\n") == 20000 and len(paths) > 4 * 65536
    big = b"x" * (3 * 65536 + 7)
    oid = git.run(["hash-object", "-w", "--stdin"], str(repo), input=big).decode().strip()
    assert git.run(["cat-file", "blob", oid], str(repo)) == big
    res = git.call(["cat-file", "-t", "0" * 40], str(repo))
    assert res.status == 128 and res.err and not res.out


def test_a_file_given_as_the_directory_is_a_git_error_naming_it(repo):
    target = repo / "README.md"
    if not target.exists():
        target.write_text("x\n")
    with pytest.raises(git.GitError) as got:
        git.run(["status"], str(target))
    assert f"cannot change to '{target}': Not a directory" in str(got.value)


def test_git_holds_no_descriptor_this_process_inherited(repo, tmp_path):
    # As subprocess's close_fds: a descriptor git-ao was started with (a caller's
    # `flock 9`) is not held by git or what git runs, and git runs with SIGPIPE
    # and SIGXFSZ as a shell gives them, not as Python leaves them (ignored).
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, sys\n"
        "fd = os.open(os.devnull, os.O_RDONLY)\n"
        "os.dup2(fd, 9)\n"  # dup2 makes it inheritable, as a shell's 9< would
        "from git_ao import git\n"
        "out = git.run(['-c', 'alias.probe=!ls /proc/$$/fd; grep SigIgn /proc/$$/status',"
        " 'probe'], sys.argv[1]).decode()\n"
        "print(out)\n")
    out = subprocess.run([sys.executable, str(script), str(repo)], capture_output=True,
                         text=True, check=True).stdout
    fds = out.split("SigIgn")[0].split()
    assert "9" not in fds, out
    ignored = int(out.split("SigIgn:")[1].split()[0], 16)
    assert not ignored & (1 << (13 - 1)) and not ignored & (1 << (25 - 1)), out
