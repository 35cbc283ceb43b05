"""What git-ao does with a path it cannot read (a file git cannot open, a
directory it cannot list or enter): a checkpoint and a preserve save the rest
and name it, a preserve then keeps the worktree, its dry run and doctor say so
too, and `--at`, which must record the whole state it replaces, refuses.

Permission bits stop no process running as root: there, the commands run with
the capabilities that pass them by (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)
dropped (`setpriv`), as the same user, so every file stays theirs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.support import git

if os.geteuid() == 0:
    DROP = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search"]
    needs = pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv as root")
else:
    DROP = []
    needs = pytest.mark.skipif(False, reason="")


def run(*args, cwd, rc=0) -> subprocess.CompletedProcess:
    """`git <args>` with permission bits in force (see the module's docstring)."""
    res = subprocess.run([*DROP, "git", *map(str, args)], cwd=cwd, capture_output=True,
                         text=True, check=False)
    assert rc is None or res.returncode == rc, (res.returncode, res.stdout, res.stderr)
    return res


def _make(wt, way: str) -> tuple[str, bool]:
    """Put something unreadable of kind `way` in `wt`; returns (the path the outcome
    names, whether the save holds nothing of it beyond the index)."""
    if way == "untracked file":
        (wt / "unread").write_text("u\n")
        os.chmod(wt / "unread", 0)
        return "unread", True
    if way == "modified tracked file":
        (wt / "t.txt").write_text("committed\n")
        git("add", "t.txt", cwd=wt)
        git("commit", "-q", "-m", "t", cwd=wt)
        (wt / "t.txt").write_text("the agent's\n")
        os.chmod(wt / "t.txt", 0)
        return "t.txt", True
    if way == "untracked directory":
        (wt / "ud").mkdir()
        (wt / "ud" / "z").write_text("z\n")
        os.chmod(wt / "ud", 0)
        return "ud/", True
    if way == "directory of tracked files":
        (wt / "d").mkdir()
        (wt / "d" / "x").write_text("committed\n")
        git("add", "d/x", cwd=wt)
        git("commit", "-q", "-m", "d", cwd=wt)
        (wt / "d" / "x").write_text("the agent's\n")
        os.chmod(wt / "d", 0)
        return "d/", True
    assert way == "listable, not searchable directory"
    (wt / "rd").mkdir()
    (wt / "rd" / "f").write_text("f\n")
    os.chmod(wt / "rd", 0o444)
    return "rd/f", True


WAYS = ["untracked file", "modified tracked file", "untracked directory",
        "directory of tracked files", "listable, not searchable directory"]


@needs
@pytest.mark.parametrize("way", WAYS)
def test_an_unreadable_path_is_left_out_and_named(repo, worktrees, way):
    wt = worktrees(repo, "agent")
    named, _ = _make(wt, way)
    try:
        (wt / "README.md").write_text("important edit\n")
        (wt / "module.py").write_text("new module\n")
        # The checkpoint saves the rest and names what it could not read.
        res = run("ao", "checkpoint", "agent", "--json", cwd=repo)
        got = json.loads(res.stdout)["results"][0]
        assert got["status"] == "ok", got
        assert named in got["unreadable"], got
        assert "kept changing" not in res.stdout + res.stderr
        save = got["preserved_commit"]
        assert git("show", f"{save}:README.md", cwd=repo) == "important edit\n"
        untracked = git("ls-tree", "-r", "--name-only", f"{save}^3", cwd=repo).split()
        assert untracked == ["module.py"], untracked
        if way == "modified tracked file":  # as the index holds it
            assert git("cat-file", "blob", f"{save}:t.txt", cwd=repo) == "committed\n"
        if way == "directory of tracked files":
            assert git("cat-file", "blob", f"{save}:d/x", cwd=repo) == "committed\n"
        # A preserve saves the rest too and keeps the worktree; its dry run and
        # doctor say so in its words.
        dry = run("ao-preserve", "agent", "-n", cwd=repo, rc=1).stdout
        real = run("ao-preserve", "agent", cwd=repo, rc=1).stdout
        assert "kept changing" not in dry + real
        assert "Permission denied" in real, real
        assert dry.split("keep the worktree: ", 1)[1] == real.split("worktree kept: ", 1)[1], \
            (dry, real)
        warned = [w for w in real.split("; ") if "cannot be read (permission bits)" in w]
        assert warned and warned[0].split(" are saved ", 1)[1] in dry, (dry, real)
        assert wt.is_dir() and (wt / "README.md").read_text() == "important edit\n"
        assert git("rev-parse", "refs/ao/preserved/agent", cwd=repo)
        doctor = run("ao", "doctor", cwd=repo, rc=None).stdout
        assert "agent: git ao-preserve saves its work as a checkpoint but keeps the " \
            "worktree" in doctor and "Permission denied" in doctor, doctor
        # --at records the state it replaces first, whole: it refuses, and nothing changes.
        before = sorted(p for p in wt.rglob("*") if ".git" not in p.parts
                        and not _unreadable_below(p, wt))
        res = run("ao-restore", "agent", "--at", "1", cwd=repo, rc=1)
        assert "cannot be read" in res.stdout and "nothing changed" in res.stdout, res.stdout
        assert "kept changing" not in res.stdout
        assert sorted(p for p in wt.rglob("*") if ".git" not in p.parts
                      and not _unreadable_below(p, wt)) == before
    finally:
        for p in (wt / "unread", wt / "t.txt", wt / "ud", wt / "d", wt / "rd"):
            if os.path.lexists(p):
                os.chmod(p, 0o755)


@needs
@pytest.mark.parametrize("mode", [0, 0o111])
def test_a_checkpoint_dry_run_names_an_unreadable_directory_as_the_real_run(
        repo, worktrees, mode):
    """A directory that cannot be listed (mode 000, or --x: entered, not listed): the
    dry run names it as the real checkpoint does, and neither calls the worktree
    clean."""
    wt = worktrees(repo, "agent")
    (wt / "sealed").mkdir()
    (wt / "sealed" / "f").write_text("inside\n")
    os.chmod(wt / "sealed", mode)
    try:
        dry = json.loads(run("ao", "checkpoint", "agent", "-n", "--json", cwd=repo).stdout)
        real = json.loads(run("ao", "checkpoint", "agent", "--json", cwd=repo).stdout)
        dry_got, real_got = dry["results"][0], real["results"][0]
        assert real_got["unreadable"] == dry_got["unreadable"] == ["sealed/"], (dry, real)
        assert dry_got["message"].split("; warning: ", 1)[1] == \
            real_got["message"].split("; warning: ", 1)[1].removesuffix("; worktree kept"), \
            (dry, real)
        assert "clean" not in real_got["message"], real_got
        assert "in what could be read (1 path(s) could not be read" in real_got["message"]
    finally:
        os.chmod(wt / "sealed", 0o755)


def _unreadable_below(p, wt) -> bool:
    return any(part in ("ud", "d", "rd") for part in p.relative_to(wt).parts[:-1])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
