"""The proof of a directory put back from the trash: the cheap proof (one git
status against the index preserve captured) decides the quiet case without
hashing the worktree again, and every change made to the trash copy after the
capture, in the files or in the index, is still found and reported."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from git_ao.store import trash
from tests.conftest import ao, git
from tests.worktree_state import differences, state

# The git commands only the full proof runs (a capture into a temporary index).
_FULL_PROOF = ("add -u", "write-tree", "ls-files -v")


def _session(repo: Path, worktrees, name: str) -> Path:
    """A session with every kind of work: staged, unstaged, deleted, a new mode, a
    symbolic link, untracked and ignored files."""
    wt = worktrees(repo, name)
    (wt / "src" / "app.py").write_text("print('staged')\n")
    git("add", "src/app.py", cwd=wt)
    (wt / "src" / "app.py").write_text("print('staged, then edited')\n")
    (wt / "README.md").write_text("readme, edited\n")
    os.chmod(wt / "README.md", 0o755)
    os.symlink("src/app.py", wt / "link")
    (wt / "notes.txt").write_text("untracked\n")
    (wt / "app.log").write_text("ignored\n")
    return wt


def _restore(repo: Path, rc: int = 0) -> tuple[dict, str]:
    """The one restore result (id, status, message and data keys) and the -v trace."""
    res = ao("ao-restore", "-v", "--json", cwd=repo, rc=rc)
    [r] = [r for r in json.loads(res.stdout)["results"] if r["action"] == "restore"]
    return r, res.stderr


def _entry(tmp_path: Path, sid: str) -> trash.Entry:
    [e] = [e for e in trash.entries(str(tmp_path / "aodata")) if e.session_id == sid]
    return e


def test_quiet_copy_is_proven_without_a_capture(repo, worktrees, tmp_path):
    wt = _session(repo, worktrees, "quiet")
    before = state(wt)
    ao("ao-preserve", "quiet", cwd=repo)
    r, trace = _restore(repo)
    assert r["status"] == "ok" and r.get("from_trash"), r
    assert "late_writes" not in r
    assert not [c for c in _FULL_PROOF if c in trace], trace
    assert differences(before, state(wt), skip=()) == []
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""


# Each change an agent could make to the trash copy after the capture, and the
# paths the restore must report as written late.
_LATE = {
    "tracked file rewritten": (lambda w, e: Path(w, "src", "util.py").write_text("later\n"),
                               ["src/util.py"]),
    "changed file rewritten, same size": (
        lambda w, e: Path(w, "README.md").write_text("README, EDITED\n"), ["README.md"]),
    "unstaged change undone": (
        lambda w, e: Path(w, "src", "app.py").write_text("print('staged')\n"), ["src/app.py"]),
    "untracked file added": (lambda w, e: Path(w, "more.txt").write_text("x\n"), ["more.txt"]),
    "untracked file removed": (lambda w, e: os.unlink(Path(w, "notes.txt")), ["notes.txt"]),
    "tracked file removed": (lambda w, e: os.unlink(Path(w, "src", "util.py")), ["src/util.py"]),
    "mode changed": (lambda w, e: os.chmod(Path(w, "README.md"), 0o644), ["README.md"]),
    "link retargeted": (lambda w, e: (os.unlink(Path(w, "link")),
                                      os.symlink("README.md", Path(w, "link"))), ["link"]),
    "file became a directory": (
        lambda w, e: (os.unlink(Path(w, "notes.txt")), os.mkdir(Path(w, "notes.txt")),
                      Path(w, "notes.txt", "in").write_text("x\n")), ["notes.txt", "notes.txt/in"]),
}


@pytest.mark.parametrize("change", sorted(_LATE))
def test_every_late_change_to_the_files_is_reported(repo, worktrees, tmp_path, change):
    wt = _session(repo, worktrees, "late")
    ao("ao-preserve", "late", cwd=repo)
    commit = git("rev-parse", "refs/ao/preserved/late", cwd=repo).strip()
    entry = _entry(tmp_path, "late")
    do, late = _LATE[change]
    do(entry.worktree, entry)
    # A file no longer there (deleted, or a directory now) is in the ref alone:
    # the restore needs attention and the ref waits to be dropped.
    deleted = {"untracked file removed": ["notes.txt"], "tracked file removed": ["src/util.py"],
               "file became a directory": ["notes.txt"]}.get(change)
    r, _ = _restore(repo, rc=3 if deleted else 0)
    assert r["status"] == ("attention" if deleted else "ok") and r.get("from_trash"), r
    assert r.get("late_writes") == late, r
    assert r.get("late_deleted") == deleted, r
    # the last capture stays in the ref; the directory keeps the late state
    assert git("rev-parse", "refs/ao/preserved/late", cwd=repo).strip() == commit
    assert wt.is_dir()


def test_a_touched_file_with_the_same_bytes_is_not_a_late_write(repo, worktrees, tmp_path):
    wt = _session(repo, worktrees, "touch")
    ao("ao-preserve", "touch", cwd=repo)
    entry = _entry(tmp_path, "touch")
    for rel in ("src/util.py", "README.md", "notes.txt"):
        p = Path(entry.worktree, rel)
        p.write_bytes(p.read_bytes())
    (Path(entry.worktree) / "later.log").write_text("ignored files are not work\n")
    r, _ = _restore(repo)
    assert r["status"] == "ok" and "late_writes" not in r, r
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""
    assert (wt / "later.log").exists()


def _assume_unchanged_late(repo: Path, tmp_path: Path, sid: str, rel: str) -> trash.Entry:
    """Set assume-unchanged on `rel` in the index of `sid`'s trash copy; returns the entry."""
    entry = _entry(tmp_path, sid)
    env = dict(os.environ, GIT_INDEX_FILE=os.path.join(entry.admin, "index"))
    subprocess.run(["git", "update-index", "--assume-unchanged", rel], cwd=repo, env=env,
                   check=True)
    return entry


def test_a_flag_set_late_in_the_saved_index_does_not_hide_a_write(repo, worktrees, tmp_path):
    """assume-unchanged set on the trash copy's index after the capture, then the file
    edited: git status would not see the edit, so the cheap proof must not vouch."""
    wt = _session(repo, worktrees, "flag")
    ao("ao-preserve", "flag", cwd=repo)
    entry = _assume_unchanged_late(repo, tmp_path, "flag", "src/util.py")
    Path(entry.worktree, "src", "util.py").write_text("hidden edit\n")
    r, _ = _restore(repo)
    assert r.get("late_writes") == ["src/util.py"] and r.get("flags_put_back"), r
    assert (wt / "src/util.py").read_text() == "hidden edit\n"
    assert git("ls-files", "-v", "src/util.py", cwd=wt) == "H src/util.py\n"
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/flag", cwd=repo, check=False)


def test_an_index_staged_late_is_not_taken_for_the_saved_one(repo, worktrees, tmp_path):
    """The trash copy's index changed after the capture (a file staged): the index tree
    is no longer the saved one, so the directory is not kept as the save."""
    wt = _session(repo, worktrees, "stage")
    ao("ao-preserve", "stage", cwd=repo)
    entry = _entry(tmp_path, "stage")
    env = dict(os.environ, GIT_INDEX_FILE=os.path.join(entry.admin, "index"),
               GIT_WORK_TREE=entry.worktree)
    subprocess.run(["git", "add", "notes.txt"], cwd=repo, env=env, check=True)
    r, _ = _restore(repo)
    # the full proof finds an index that is not the saved one: the checkout path
    # restores the save, and the trash copy is kept
    assert r.get("trash_skipped", "").startswith("the index is not the saved one"), r
    assert (wt / "notes.txt").read_text() == "untracked\n"


def test_names_git_unquotes_are_hashed_as_they_are(repo, worktrees, tmp_path):
    """git's --stdin-paths unquotes a line that starts with a double quote and drops a
    trailing carriage return: a late write to such a file must not be judged by
    the file that the unquoted name points to."""
    wt = _session(repo, worktrees, "names")
    (wt / '"app.log"').write_text("ignored\n")  # the same bytes as the ignored app.log
    (wt / "cr\r").write_text("carriage\n")
    (wt / "cr").write_text("carriage\n")
    ao("ao-preserve", "names", cwd=repo)
    entry = _entry(tmp_path, "names")
    Path(entry.worktree, '"app.log"').write_text("written late\n")
    Path(entry.worktree, "cr\r").write_text("late too\n")
    r, _ = _restore(repo)
    assert r["status"] == "ok" and r.get("late_writes") == ['"app.log"', "cr\r"], r
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/names", cwd=repo, check=False)


def test_a_file_or_link_named_like_the_link_being_written_is_left_alone(repo, worktrees,
                                                                       tmp_path):
    """Restore writes the worktree's new .git file beside it before renaming it into
    place: an agent's file or symbolic link under the name git-ao once used is work,
    and a link must never lead that write outside the worktree."""
    wt = _session(repo, worktrees, "tmpname")
    outside = tmp_path / "thesis.txt"
    outside.write_text("my thesis\n")
    (wt / ".git.ao-tmp").write_text("an agent's file\n")
    os.symlink(outside, wt / ".git.ao-tmp-0123456789abcdef")
    before = state(wt)
    ao("ao-preserve", "tmpname", cwd=repo)
    r, _ = _restore(repo)
    assert r["status"] == "ok" and "late_writes" not in r, r
    assert outside.read_text() == "my thesis\n"
    assert differences(before, state(wt), skip=()) == []
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""


def test_an_index_edited_under_its_old_checksum_is_not_taken_for_the_saved_one(
        repo, worktrees, tmp_path):
    """git does not check an index's checksum when it reads it: a trash copy whose
    index was changed and then given back its old trailer must not pass as the
    saved index."""
    wt = _session(repo, worktrees, "trailer")
    ao("ao-preserve", "trailer", cwd=repo)
    assert git("cat-file", "-p", "refs/ao/preserved/trailer", cwd=repo).count("Ao-Index: ") == 1
    entry = _entry(tmp_path, "trailer")
    index = Path(entry.admin, "index")
    trailer = index.read_bytes()[-20:]
    Path(entry.worktree, "notes.txt").write_text("UNTRACKED\n")  # same size
    env = dict(os.environ, GIT_INDEX_FILE=str(index), GIT_WORK_TREE=entry.worktree)
    subprocess.run(["git", "add", "notes.txt"], cwd=repo, env=env, check=True)
    data = index.read_bytes()
    index.write_bytes(data[:-20] + trailer)
    # The fallback applies the save; the write made in the trash copy after the
    # capture stays there, and the restore says so.
    r, _ = _restore(repo, rc=3)
    assert r.get("trash_skipped", "").startswith("the index is not the saved one"), r
    assert (wt / "notes.txt").read_text() == "untracked\n"
    assert r["trash_holds_unsaved"] == entry.worktree
    assert "changed after the last capture (notes.txt changed)" in r["message"]
    assert Path(entry.worktree, "notes.txt").read_text() == "UNTRACKED\n"


def test_a_flag_set_late_on_a_changed_file_is_put_back_as_saved(repo, worktrees, tmp_path):
    """assume-unchanged set on the trash copy's index after the capture, on a file with
    an unstaged change: git status would hide that change from then on, so the
    restore puts the saved flags back."""
    wt = _session(repo, worktrees, "hide")
    ao("ao-preserve", "hide", cwd=repo)
    _assume_unchanged_late(repo, tmp_path, "hide", "README.md")
    r, _ = _restore(repo)
    assert r["status"] == "ok" and r.get("from_trash") and r.get("flags_put_back"), r
    assert "late_writes" not in r, r
    assert git("ls-files", "-v", "README.md", cwd=wt) == "H README.md\n"
    assert (wt / "README.md").read_text() == "readme, edited\n"
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""


def test_a_late_write_after_a_clean_save_is_named_as_the_only_copy(repo, worktrees, tmp_path):
    wt = worktrees(repo, "clean")
    ao("ao-preserve", "clean", cwd=repo)
    entry = _entry(tmp_path, "clean")
    Path(entry.worktree, "late.txt").write_text("written after the save\n")
    r, _ = _restore(repo)
    assert r["status"] == "ok" and r.get("late_writes") == ["late.txt"], r
    assert r["message"].endswith("(late.txt); the save was clean, so the worktree holds "
                                 "their only copy"), r
    assert (wt / "late.txt").read_text() == "written after the save\n"


def _crlf_session(repo: Path, worktrees, name: str, autocrlf: str) -> Path:
    """A session whose m.txt has CRLFs in the index (committed before core.autocrlf
    was set), which `git add` then keeps as they are."""
    (repo / "m.txt").write_bytes(b"x\r\ny\r\n")
    git("add", "m.txt", cwd=repo)
    git("commit", "-q", "-m", "a CRLF file", cwd=repo)
    git("config", "core.autocrlf", autocrlf, cwd=repo)
    return worktrees(repo, name)


def test_a_crlf_file_git_keeps_as_it_is_is_proven_without_a_capture(repo, worktrees):
    """`git hash-object` reads no index and turns the CRLFs into LFs; `git add` keeps
    them since the index blob holds CRLFs. The cheap proof reads such a file as
    `git add` does, so the copy put back is proven as it is."""
    wt = _crlf_session(repo, worktrees, "crlf", "true")
    (wt / "m.txt").write_bytes(b"x\r\ny\r\nz\r\n")
    ao("ao-preserve", "crlf", cwd=repo)
    r, trace = _restore(repo)
    assert r["status"] == "ok" and r.get("from_trash") and "late_writes" not in r, r
    assert not [c for c in _FULL_PROOF if c in trace], trace
    assert (wt / "m.txt").read_bytes() == b"x\r\ny\r\nz\r\n"
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""


def test_crlfs_written_late_over_saved_lfs_are_a_late_write(repo, worktrees, tmp_path):
    """The save holds m.txt with LFs while its index blob (staged) holds CRLFs; CRLFs
    written into the trash copy afterwards are what `git add` would store, not the
    save, though `git hash-object` turns them back into the saved LFs."""
    wt = _crlf_session(repo, worktrees, "late-crlf", "input")
    (wt / "m.txt").write_bytes(b"x\r\ny\r\nz\r\n")
    git("add", "m.txt", cwd=wt)
    (wt / "m.txt").write_bytes(b"x\ny\nz\nw\n")
    ao("ao-preserve", "late-crlf", cwd=repo)
    commit = git("rev-parse", "refs/ao/preserved/late-crlf", cwd=repo).strip()
    Path(_entry(tmp_path, "late-crlf").worktree, "m.txt").write_bytes(b"x\r\ny\r\nz\r\nw\r\n")
    r, _ = _restore(repo)
    assert r["status"] == "ok" and r.get("late_writes") == ["m.txt"], r
    assert (wt / "m.txt").read_bytes() == b"x\r\ny\r\nz\r\nw\r\n"
    assert git("rev-parse", "refs/ao/preserved/late-crlf", cwd=repo).strip() == commit
