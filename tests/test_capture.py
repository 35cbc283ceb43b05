"""The preserve commit is shaped like a stash and git's own tools read it."""

import os
import subprocess
from pathlib import Path

from tests.support import ao, dirty, git
from tests.worktree_state import state

REF = "refs/ao/preserved/cap"


def test_commit_shape_and_git_stash_reads_it(repo, worktrees, tmp_path):
    wt = worktrees(repo, "cap", kind="orchestrator", harness="claude-code")
    dirty(wt)
    before = state(wt)
    head = git("rev-parse", "HEAD", cwd=wt).strip()
    ao("ao-preserve", "--keep-worktree", "cap", cwd=repo)
    w = git("rev-parse", REF, cwd=repo).strip()
    parents = git("rev-list", "--parents", "-n1", w, cwd=repo).split()[1:]
    assert len(parents) == 3 and parents[0] == head
    # I: the index tree, parent H
    assert git("rev-list", "--parents", "-n1", parents[1], cwd=repo).split()[1:] == [head]
    assert git("rev-parse", f"{parents[1]}^{{tree}}", cwd=repo).strip() == \
        git("write-tree", cwd=wt).strip()
    # U: a root commit with only the untracked, non-ignored files
    assert git("rev-list", "--parents", "-n1", parents[2], cwd=repo).split()[1:] == []
    u_files = set(git("ls-tree", "-r", "-z", "--name-only", parents[2], cwd=repo).split("\0"))
    assert u_files - {""} == {"new dir/deep/naïve file.txt", "bin.dat", "link-to-readme"}
    w_files = set(git("ls-tree", "-r", "-z", "--name-only", w, cwd=repo).split("\0"))
    assert "debug.log" not in w_files and "bin.dat" not in w_files
    # trailers describe the session
    msg = git("log", "-1", "--format=%B", w, cwd=repo)
    for line in ("Ao-Session: cap", "Ao-Kind: orchestrator", "Ao-Harness: claude-code",
                 "Ao-Branch: cap", f"Ao-Workspace: {wt}", f"Ao-Head: {head}", "Ao-Detached: false"):
        assert line in msg
    # the stash list, the real index and the worktree are untouched
    assert git("stash", "list", cwd=repo) == ""
    assert state(wt) == before
    # git stash show reads it
    shown = git("stash", "show", "-p", "--include-untracked", REF, cwd=wt)
    assert "unstaged line" in shown and "untracked ünïcode" in shown
    # and git stash apply --index in a fresh worktree of the same commit reproduces it
    fresh = tmp_path / "fresh"
    git("worktree", "add", "-q", "--detach", fresh, head, cwd=repo)
    git("stash", "apply", "--index", REF, cwd=fresh)
    again = state(fresh)
    mine = dict(before, branch=None)
    assert {k: v for k, v in again.items() if k not in ("ignored", "status")} == \
        {k: v for k, v in mine.items() if k not in ("ignored", "status")}


def test_the_commits_are_written_as_commit_tree_writes_them(repo, worktrees):
    """I, U and W are computed and written in one process; a commit encoding other than
    UTF-8 is left to git commit-tree, which records it, as before."""
    wt = worktrees(repo, "cap")
    dirty(wt)
    ao("ao-preserve", "--keep-worktree", "cap", cwd=repo)
    w = git("rev-parse", REF, cwd=repo).strip()
    git("fsck", "--strict", "--no-dangling", cwd=repo)
    raw = git("cat-file", "commit", w, cwd=repo)
    assert "\nauthor git-ao <git-ao@localhost> " in raw and "\nencoding " not in raw
    git("config", "i18n.commitEncoding", "ISO-8859-1", cwd=repo)
    (wt / "a.txt").write_text("latin\n")
    ao("ao-preserve", "--keep-worktree", "cap", cwd=repo)
    w2 = git("rev-parse", REF, cwd=repo).strip()
    assert w2 != w and "\nencoding ISO-8859-1\n" in git("cat-file", "commit", w2, cwd=repo)
    assert "a.txt" in git("stash", "show", "--include-untracked", "--name-only", w2, cwd=repo)


def test_reflog_keeps_an_earlier_preserve(repo, worktrees):
    wt = worktrees(repo, "cap")
    (wt / "a.txt").write_text("one\n")
    ao("ao-preserve", "--keep-worktree", "cap", cwd=repo)
    first = git("rev-parse", REF, cwd=repo).strip()
    (wt / "a.txt").write_text("two\n")
    ao("ao-preserve", "--keep-worktree", "cap", cwd=repo)
    assert git("rev-parse", f"{REF}@{{1}}", cwd=repo).strip() == first


def test_ignored_paths_are_logged_not_captured(repo, worktrees):
    wt = worktrees(repo, "ign")
    (wt / "x.log").write_text("secret\n")
    (wt / "build").mkdir()
    for i in range(5):
        (wt / "build" / f"o{i}").write_text("o")
    (wt / "tracked-change").write_text("t\n")
    ao("ao-preserve", "ign", cwd=repo)
    w = git("rev-parse", "refs/ao/preserved/ign", cwd=repo).strip()
    allfiles = git("log", "--all", "--format=", "--name-only", "-m", w, "--", cwd=repo)
    assert "x.log" not in allfiles and "build/" not in allfiles
    with open(os.path.join(os.environ["AO_DATA_DIR"], "logs", "git-ao.log")) as fh:
        log = fh.read()
    line = [ln for ln in log.splitlines() if "ignored-skipped" in ln]
    assert len(line) == 1 and "count=2" in line[0] and "x.log" in line[0]


def test_temporary_indexes_are_removed(repo, worktrees):
    wt = worktrees(repo, "tmpidx")
    dirty(wt)
    gitdir = git("rev-parse", "--absolute-git-dir", cwd=wt).strip()
    ao("ao-preserve", "--keep-worktree", "tmpidx", cwd=repo)
    assert not [n for n in os.listdir(gitdir) if n.startswith("git-ao-index")]


def test_detached_clean_worktree_keeps_its_commit_alive(repo, worktrees):
    wt = worktrees(repo, "det")
    (wt / "only-here.txt").write_text("x\n")
    git("add", ".", cwd=wt)
    git("commit", "-qm", "only here", cwd=wt)
    head = git("rev-parse", "HEAD", cwd=wt).strip()
    git("checkout", "-q", "--detach", cwd=wt)
    git("branch", "-D", "det", cwd=repo)
    ao("ao-preserve", "det", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    assert git("cat-file", "-t", head, cwd=repo).strip() == "commit"
    ao("ao-restore", cwd=repo)
    assert git("rev-parse", "HEAD", cwd=wt).strip() == head
    assert subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=wt,
                          check=False).returncode == 1


def test_edits_behind_index_flags_are_counted_in_the_summary(repo, worktrees):
    wt = worktrees(repo, "flags")
    (wt / "README.md").write_text("edited behind the flag\n")
    git("update-index", "--assume-unchanged", "README.md", cwd=wt)
    res = ao("ao-preserve", "flags", cwd=repo)
    commit = git("rev-parse", "--short=12", "refs/ao/preserved/flags", cwd=repo).strip()
    assert res.stdout == (f"preserve\tok\tflags\t0 changed, 0 untracked, 1 behind index flags "
                          f"(assume-unchanged, skip-worktree) saved in {commit}; worktree "
                          "removed\n")


def test_status_reads_a_copy_of_the_index_and_an_index_written_after_it_is_not_mixed_in(
        repo, worktrees):
    """The capture's status reads a copy of the index taken before it: an index
    written after the copy (an agent's `git add`) is not half mixed into the
    save; I, W and the checksum all are the copy's, and no scratch index is left
    behind."""
    from git_ao.git import index
    from git_ao.save import capture
    wt = worktrees(repo, "cap")
    git_dir = git("rev-parse", "--absolute-git-dir", cwd=wt).strip()
    real = os.path.join(git_dir, "index")
    before = index.checksum(real, 40)
    ahead = capture.read_ahead(str(wt), git_dir)
    (wt / "staged-meanwhile.txt").write_text("staged after the copy\n")
    git("add", "staged-meanwhile.txt", cwd=wt)
    st = capture.inspect(str(wt), git_dir, ahead=ahead)
    assert st.untracked == ["staged-meanwhile.txt"]
    meta = capture.Meta("cap", "worker", "", str(wt))
    cap = capture.capture(str(wt), git_dir, meta, st=st, ahead=ahead)
    assert "staged-meanwhile.txt" not in git("ls-tree", "--name-only", cap.index_tree, cwd=wt)
    assert "staged-meanwhile.txt" in git("ls-tree", "--name-only", cap.untracked_tree, cwd=wt)
    assert cap.index_checksum == before is not None
    assert not [n for n in os.listdir(git_dir) if n.startswith("git-ao-")]
    # read again: the staged file is in I and W, the checksum the real index's
    again = capture.read_ahead(str(wt), git_dir)
    cap2 = capture.capture(str(wt), git_dir, meta,
                           st=capture.inspect(str(wt), git_dir, ahead=again), ahead=again)
    for tree in (cap2.index_tree, cap2.worktree_tree):
        assert "staged-meanwhile.txt" in git("ls-tree", "--name-only", tree, cwd=wt)
    assert cap2.index_checksum == index.checksum(real, 40) is not None
    assert again.copy is None
    assert not [n for n in os.listdir(git_dir) if n.startswith("git-ao-")]


def test_status_writes_its_refresh_into_the_copy_never_the_real_index(repo, worktrees):
    """A racily clean index (files as new as the index file) makes git hash every
    such file's content on each reading; the capture's status writes what it
    learnt into its copy, so the copy is no longer racy for the git processes
    after it, and the real index is left byte for byte and time for time."""
    from git_ao.save import capture
    wt = worktrees(repo, "racy")
    git_dir = git("rev-parse", "--absolute-git-dir", cwd=wt).strip()
    real = os.path.join(git_dir, "index")
    for name in os.listdir(wt):
        if os.path.isfile(wt / name):
            os.utime(wt / name, ns=(os.stat(real).st_mtime_ns,) * 2)  # as new as the index
    (wt / "README.md").write_text("edited\n")
    os.utime(wt / "README.md", ns=(os.stat(real).st_mtime_ns,) * 2)
    seen = (Path(real).read_bytes(), os.stat(real).st_mtime_ns)
    ahead = capture.read_ahead(str(wt), git_dir)
    assert ahead.copy is not None
    copied = os.stat(ahead.copy.path).st_mtime_ns
    st = capture.inspect(str(wt), git_dir, ahead=ahead)
    assert [e.path for e in st.changed] == ["README.md"]
    assert os.stat(ahead.copy.path).st_mtime_ns > copied  # status wrote its refresh
    assert (Path(real).read_bytes(), os.stat(real).st_mtime_ns) == seen
    ahead.close()
    assert not [n for n in os.listdir(git_dir) if n.startswith("git-ao-")]
