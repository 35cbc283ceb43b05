"""Exactness of both restore paths: index flags, intent-to-add entries, sparse
patterns and permission bits come back as they were, whether the directory is
put back from the trash or checked out again and the save applied (the slow
path, forced by `checkout_path_only`). The states are git's own test recipes
(t1092-sparse-checkout-compatibility, t2203-add-intent, t3903-stash)."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

from git_ao.save import local_state
from tests.support import ao, commit_on, db_path, git, init_repo, round_trip
from tests.trash_helpers import checkout_path_only
from tests.worktree_state import assert_restored, exact_state

PATHS = ("trash", "checkout")


def _round_trip(repo, wt, sid, how):
    """Preserve and restore `sid` the way `how` names; the whole state must come back."""
    return round_trip(repo, wt, sid, exact=True, how=how)


# ---------------------------------------------------------------- sparse checkouts


def _t1092_repo(repo, *, fresh=False):
    """Make `repo` a copy of `_t1092_template` (its git dir copied, then `git reset
    --hard`): t1092's history, built once per process. fresh=True builds it in
    `repo` instead, over the files written there first."""
    if fresh:
        _t1092_layout(repo)
        return
    shutil.rmtree(repo / ".git")
    shutil.copytree(_t1092_template(), repo / ".git", symlinks=True)
    git("reset", "-q", "--hard", cwd=repo)


@functools.cache
def _t1092_template() -> Path:
    """The git dir of a repository holding the branches of t1092's setup that its
    reset tests use, on top of `init_repo`'s first commit: base, update-folder1,
    update-folder2, update-deep, rename-base and rename-out-to-out, HEAD on main.
    Built once per process (a dozen git commands), removed when it exits."""
    base = Path(tempfile.mkdtemp(prefix="ao-t1092-"))
    atexit.register(shutil.rmtree, base, True)
    repo = base / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    init_repo(repo)
    _t1092_layout(repo)
    return repo / ".git"


def _t1092_layout(repo):
    files = {"a": "a\n", "e": "after deep\n", "deep/a": "a\n", "deep/deeper1/a": "a\n",
             "deep/deeper1/deepest/a": "a\n", "deep/deeper2/a": "a\n", "folder1/a": "a\n",
             "folder1/0/1": "", "folder2/a": "a\n", "folder2/0/1": "\n", "x/a": "a\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "t1092 layout", cwd=repo)
    git("branch", "base", cwd=repo)
    for d in ("folder1", "folder2", "deep"):
        git("checkout", "-q", "-b", f"update-{d}", "base", cwd=repo)
        (repo / d / "a").write_text(f"updated {d}\n")
        git("commit", "-qam", f"update {d}", cwd=repo)
    git("checkout", "-q", "-b", "rename-base", "base", cwd=repo)
    text = "matching\nlines\nhelp\ninexact\nrenames\n"
    for d in ("folder1", "folder2", "deep/deeper1"):
        (repo / d / "larger-content").write_text(text)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "add interesting rename content", cwd=repo)
    git("checkout", "-q", "-b", "rename-out-to-out", "rename-base", cwd=repo)
    git("mv", "folder1/a", "folder2/b", cwd=repo)
    git("mv", "folder1/larger-content", "folder2/edited-content", cwd=repo)
    with open(repo / "folder2" / "edited-content", "a") as fh:
        fh.write("\n")
    with open(repo / "deep" / "deeper1" / "a", "a") as fh:
        fh.write("stuff\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "rename folder1/... to folder2/...", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)


SPARSE = {"cone": ["--cone", "deep"], "non-cone": ["--no-cone", "/*", "!/*/", "/deep/"],
          "sparse-index": ["--cone", "--sparse-index", "deep"]}


def _sparse_worktree(repo, worktrees, name, mode, start="base", fresh=False):
    _t1092_repo(repo, fresh=fresh)
    wt = worktrees(repo, name, branch=name)
    git("reset", "-q", "--hard", start, cwd=wt)
    git("sparse-checkout", "init", *SPARSE[mode][:1 + (mode == "sparse-index")], cwd=wt)
    git("sparse-checkout", "set", *SPARSE[mode], cwd=wt)
    assert not (wt / "folder1").exists()
    return wt


def _skip_worktree(wt):
    return {ln[2:] for ln in git("ls-files", "-v", cwd=wt).splitlines() if ln.startswith("S ")}


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("mode", sorted(SPARSE))
def test_reset_soft_keeps_moved_paths_outside_the_cone(repo, worktrees, mode, how):
    # t1092 'status with diff in unexpanded sparse directory'
    wt = _sparse_worktree(repo, worktrees, "soft", mode, start="rename-base")
    git("reset", "--soft", "rename-out-to-out", cwd=wt)
    assert {"folder1/a", "folder1/larger-content"} <= _skip_worktree(wt)
    _round_trip(repo, wt, "soft", how)
    assert not (wt / "folder1").exists()


RESETS = {
    "pathspec-dir": [["update-folder1", "--", "folder1"]],
    "pathspec-file": [["update-folder2", "--", "folder2/a"]],
    "wildcard": [["update-folder1", "--", "*/a"], ["update-folder2", "--", "folder*"]],
    "mixed": [["update-folder1"]],
}


# Other commands that move index entries outside the patterns and keep (or drop)
# their skip-worktree flag.
MOVES = {
    "reset-keep": [["reset", "-q", "--keep", "update-folder1"]],
    "reset-merge": [["!write", "a", "edited\n"], ["reset", "-q", "--merge", "update-folder2"]],
    "restore-staged": [["restore", "--staged", "--source", "update-folder1", "--",
                        "folder1/a"]],
    "read-tree": [["read-tree", "update-folder2"]],
    "rm-cached": [["rm", "-q", "--cached", "--sparse", "folder1/a"]],
    "checkout-pathspec": [["checkout", "update-folder2", "--", "folder2/a"]],
}


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("move", sorted(MOVES))
def test_index_moved_outside_the_cone(repo, worktrees, move, how):
    wt = _sparse_worktree(repo, worktrees, "mv", "cone")
    _run_steps(wt, MOVES[move])
    _round_trip(repo, wt, "mv", how)


def _run_steps(wt, steps):
    for args in steps:
        if args[0] == "!write":
            (wt / args[1]).parent.mkdir(exist_ok=True)
            (wt / args[1]).write_text(args[2])
        elif args[0] == "!rm":
            os.unlink(wt / args[1])
        elif args[0] == "!mv":
            os.rename(wt / args[1], wt / args[2])
        elif args[0] == "!ln":
            os.symlink(args[1], wt / args[2])
        else:
            git(*args, cwd=wt)


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("reset", sorted(RESETS))
@pytest.mark.parametrize("mode", sorted(SPARSE))
def test_reset_with_pathspec_outside_the_cone(repo, worktrees, mode, reset, how):
    # t1092 'reset with pathspecs outside sparse definition', 'reset with wildcard
    # pathspec', 'checkout and reset (mixed)': the index moves, skip-worktree stays.
    wt = _sparse_worktree(repo, worktrees, "rps", mode)
    for args in RESETS[reset]:
        git("reset", "-q", *args, cwd=wt)
    _round_trip(repo, wt, "rps", how)


def _update_index_states(wt):
    """t1092's update-index tests outside the sparse definition, as named states."""
    folder1_a = git("rev-parse", "update-folder1:folder1/a", cwd=wt).strip()
    return {
        # 'update-index modify outside sparse definition': a skip-worktree file
        # present and edited, then the flag cleared by hand on another one
        "present-edited": [["!write", "folder1/a", "a\ntext\n"]],
        "flag-cleared": [["!write", "folder1/a", "a\n"],
                         ["update-index", "--no-skip-worktree", "folder1/a"]],
        # 'update-index --add outside sparse definition'
        "added": [["!write", "folder1/b", "text\n"], ["update-index", "--add", "folder1/b"]],
        # 'update-index --remove outside sparse definition'
        "removed": [["update-index", "--remove", "folder1/a"]],
        # 'update-index --again file outside sparse definition'
        "again": [["reset", "-q", "--soft", "update-folder1"],
                  ["update-index", "--no-skip-worktree", "--again"]],
        # 'update-index --cacheinfo', before and after the flag is set by hand
        "cacheinfo": [["update-index", "--add", "--cacheinfo",
                       f"100644,{folder1_a},folder1/x"]],
        "cacheinfo-flagged": [["update-index", "--add", "--cacheinfo",
                               f"100644,{folder1_a},folder1/x"], ["update-index", "--skip-worktree", "folder1/x"]],
        # a flag the patterns would not give, on a file inside them
        "in-cone-flagged": [["update-index", "--skip-worktree", "deep/a"], ["!rm", "deep/a"]],
    }


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("name", ["present-edited", "flag-cleared", "added", "removed", "again",
                                  "cacheinfo", "cacheinfo-flagged", "in-cone-flagged"])
def test_update_index_outside_the_cone(repo, worktrees, name, how):
    # Cone mode only: the reset tests above run in both modes and sparse-index.
    wt = _sparse_worktree(repo, worktrees, "upi", "cone")
    _run_steps(wt, _update_index_states(wt)[name])
    _round_trip(repo, wt, "upi", how)


@pytest.mark.parametrize("how", PATHS)
def test_many_flags_are_written_compactly(repo, worktrees, how):
    # Enough skip-worktree entries that the save names directories, not files.
    for i in range(100):
        (repo / "folder3" / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (repo / "folder3" / f"d{i % 3}" / f"f{i}").write_text(f"{i}\n")
    wt = _sparse_worktree(repo, worktrees, "many", "cone", start="rename-base", fresh=True)
    git("reset", "--soft", "rename-out-to-out", cwd=wt)
    git("update-index", "--no-skip-worktree", "folder3/d1/f1", cwd=wt)
    git("checkout-index", "folder3/d1/f1", cwd=wt)
    before = exact_state(wt)
    ao("ao-preserve", "many", cwd=repo)
    with sqlite3.connect(db_path()) as db:
        saved = json.loads(db.execute("SELECT worktree_config FROM session_worktrees").fetchone()[0])
    assert "folder3/d0/" in saved["skip_worktree"] and "folder3/d1/f4" in saved["skip_worktree"]
    if how == "checkout":
        checkout_path_only()
    ao("ao-restore", "many", cwd=repo)
    assert_restored(before, exact_state(wt))


def test_compact_and_expand_name_the_same_paths():
    paths = ["a", "b/c", "b/d", "b/e/f", "b/e/g", "b-x", "c/d/e"] + [f"m/{i}" for i in range(70)]
    for flagged in (paths, ["b/c", "b/d", "b/e/f", "b/e/g"] + [f"m/{i}" for i in range(70)],
                    ["b/c", "b/e/f", "b/e/g"] + [f"m/{i}" for i in range(1, 70)] + ["c/d/e"]):
        items = local_state.compact(flagged, paths)
        assert local_state.expand(items, paths) == set(flagged)
    assert local_state.compact(paths, paths) == ["/"]
    assert local_state.compact(paths[1:5] + paths[7:], paths) == ["b/", "m/"]


@pytest.mark.parametrize("how", PATHS)
def test_intent_to_add_outside_the_cone(repo, worktrees, how):
    # t1092 'intent-to-add with --sparse outside sparse-checkout'. (Its other recipe,
    # `git sparse-checkout set` over an intent-to-add entry, aborts in git 2.39
    # and leaves the same state.)
    wt = _sparse_worktree(repo, worktrees, "itac", "cone")
    for rel in ("folder1/newita", "newdir/newita"):
        (wt / rel).parent.mkdir()
        (wt / rel).write_text("text\n")
        git("add", "--sparse", "--intent-to-add", rel, cwd=wt)
    _round_trip(repo, wt, "itac", how)


# ---------------------------------------------------------------- intent-to-add


@pytest.mark.parametrize("how", PATHS)
def test_intent_to_add_over_a_staged_deletion(repo, worktrees, how):
    # t2203 'intent to add': `git rm`, the file written again, `git add -N`
    wt = worktrees(repo, "itadel")
    git("rm", "-q", "README.md", cwd=wt)
    (wt / "README.md").write_text("hello\n")  # as committed: still a deletion and an add
    (wt / "file").write_text("file\n")
    (wt / "elif").write_text("elif\n")
    git("add", "-N", "file", cwd=wt)
    git("add", "elif", cwd=wt)
    git("add", "-N", "README.md", cwd=wt)
    assert git("status", "--porcelain", "-uno", cwd=wt).splitlines() == [
        "DA README.md", "A  elif", " A file"]
    _round_trip(repo, wt, "itadel", how)


@pytest.mark.parametrize("how", PATHS)
def test_intent_to_add_whose_file_is_gone(repo, worktrees, how):
    # An intent-to-add entry is in neither tree once its file is deleted; status
    # shows it as a deleted empty blob, like a committed empty file deleted.
    wt = worktrees(repo, "itagone")
    (wt / "empty").write_text("")
    git("add", "empty", cwd=wt)
    git("commit", "-qm", "an empty file", cwd=wt)
    for rel in ("gone", "deep/er/gone"):
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text("soon gone\n")
        git("add", "-N", rel, cwd=wt)
        os.unlink(wt / rel)
    os.rmdir(wt / "deep" / "er")
    os.unlink(wt / "empty")
    git("rm", "-q", "--cached", "README.md", cwd=wt)
    git("add", "-N", "README.md", cwd=wt)
    os.unlink(wt / "README.md")
    _round_trip(repo, wt, "itagone", how)


# ---------------------------------------------------------------- t3903's states


STASH_STATES = {
    # 'stash handles skip-worktree entries nicely'
    "skip-worktree-staged": [["!write", "README.md", "changed\n"], ["add", "README.md"],
                             ["update-index", "--skip-worktree", "README.md"],
                             ["!rm", "README.md"]],
    # 'stash rm then recreate'
    "rm-then-recreate": [["rm", "-q", "README.md"], ["!write", "README.md", "bar7\n"]],
    # 'stash rm and ignore', '... (stage .gitignore)'
    "rm-and-ignore": [["rm", "-q", "README.md"], ["!write", ".gitignore", "README.md\n"]],
    "rm-and-ignore-staged": [["rm", "-q", "README.md"], ["!write", ".gitignore", "README.md\n"],
                             ["add", ".gitignore"]],
    # 'stash is not confused by partial renames'
    "partial-rename": [["!mv", "README.md", "renamed"], ["add", "renamed"]],
    # 'stash file to symlink', '(stage rm)', '(full stage)'
    "file-to-symlink": [["!rm", "README.md"], ["!ln", "data.bin", "README.md"]],
    "file-to-symlink-stage-rm": [["rm", "-q", "README.md"], ["!ln", "data.bin", "README.md"]],
    "file-to-symlink-full": [["rm", "-q", "README.md"], ["!ln", "data.bin", "README.md"],
                             ["add", "README.md"]],
    # 'git stash succeeds despite directory/file change'
    "directory-to-file": [["rm", "-q", "-r", "src"], ["!write", "src", "now a file\n"]],
    # 'stash --keep-index with file deleted in index does not resurrect it on disk'
    "deleted-in-index": [["rm", "-q", "--cached", "README.md"], ["!rm", "README.md"]],
}


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("name", sorted(STASH_STATES))
def test_stash_states(repo, worktrees, name, how):
    wt = worktrees(repo, "st")
    _run_steps(wt, STASH_STATES[name])
    _round_trip(repo, wt, "st", how)


# ---------------------------------------------------------------- permission bits


@pytest.mark.parametrize("how", PATHS)
def test_permission_bits_of_unchanged_files(repo, worktrees, how):
    wt = worktrees(repo, "perm")
    os.chmod(wt / "README.md", 0o600)  # committed, unmodified
    os.chmod(wt / "run.sh", 0o700)  # its executable bit is what git records
    os.chmod(wt / "src" / "util.py", 0o444)
    (wt / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(wt / "tool.sh", 0o755)
    git("add", "tool.sh", cwd=wt)
    git("commit", "-qm", "an executable", cwd=wt)
    os.chmod(wt / "tool.sh", 0o744)  # still executable to git: no change it records
    (wt / "src" / "app.py").write_text("edited and private\n")
    os.chmod(wt / "src" / "app.py", 0o600)
    (wt / "notes.txt").write_text("untracked, group-writable\n")
    os.chmod(wt / "notes.txt", 0o664)
    (wt / "debug.log").write_text("ignored\n")
    os.chmod(wt / "debug.log", 0o640)
    _round_trip(repo, wt, "perm", how)


# ---------------------------------------------------------------- flags git sets itself


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("when", ["before", "after"])
def test_ignore_stat_sets_no_flag_that_was_not_there(repo, worktrees, when, how):
    # core.ignoreStat marks what git writes assume-unchanged: set before the worktree
    # was added, every entry has the flag; set after, only those written since.
    if when == "before":
        git("config", "core.ignoreStat", "true", cwd=repo)
    wt = worktrees(repo, "istat")
    git("config", "core.ignoreStat", "true", cwd=repo)
    (wt / "README.md").write_text("edited\n")
    git("add", "README.md", cwd=wt)
    git("update-index", "--no-assume-unchanged", "src/util.py", cwd=wt)
    (wt / "src" / "util.py").write_text("edited, unstaged\n")
    (wt / "src" / "app.py").write_text("edited behind the flag\n")
    (wt / "new.txt").write_text("untracked\n")
    flagged = {ln[2:] for ln in git("ls-files", "-v", cwd=wt).splitlines() if ln[0].islower()}
    assert "README.md" in flagged and "src/util.py" not in flagged
    assert ("src/app.py" in flagged) == (when == "before")
    _round_trip(repo, wt, "istat", how)


def test_ignore_stat_on_every_entry_is_saved_compactly(repo, worktrees):
    git("config", "core.ignoreStat", "true", cwd=repo)
    for i in range(80):
        (repo / "many" / f"f{i}").parent.mkdir(exist_ok=True)
        (repo / "many" / f"f{i}").write_text(f"{i}\n")
    git("add", "many", cwd=repo)
    git("commit", "-qm", "many files", cwd=repo)
    wt = worktrees(repo, "istatmany")
    git("update-index", "--no-assume-unchanged", "src/util.py", cwd=wt)
    (wt / "src" / "util.py").write_text("edited\n")
    before = exact_state(wt)
    ao("ao-preserve", "istatmany", cwd=repo)
    with sqlite3.connect(db_path()) as db:
        saved = json.loads(db.execute("SELECT worktree_config FROM session_worktrees").fetchone()[0])
    assert saved["assume_unchanged"] == [".gitignore", "README.md", "data.bin", "many/", "run.sh",
                                         "src/app.py"]
    checkout_path_only()
    ao("ao-restore", "istatmany", cwd=repo)
    assert_restored(before, exact_state(wt))


def test_ignore_stat_flags_nothing_a_conflicted_restore_writes(repo, worktrees):
    # No flags are put back after a conflict: git-ao's own git must set none.
    wt = worktrees(repo, "istatcfl")
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "istatcfl", cwd=repo)
    commit_on(repo, "istatcfl", {"README.md": "theirs\n"})
    git("config", "core.ignoreStat", "true", cwd=repo)
    checkout_path_only()
    ao("ao-restore", "istatcfl", cwd=repo, rc=3)
    assert [ln for ln in git("ls-files", "-v", cwd=wt).splitlines() if ln[0].islower()] == []


@pytest.mark.parametrize("how", PATHS)
def test_no_entry_comes_back_fsmonitor_valid(repo, worktrees, tmp_path, how):
    # The fsmonitor-valid bits vouch for files since the monitor's last answer; no
    # monitor watched the directory while it was away, so none comes back and git
    # looks at every file once. A monitor that answers "nothing changed" shows it.
    hook = tmp_path / "quiet-fsmonitor"
    hook.write_text("#!/bin/sh\nprintf '%s\\0' \"${2:-0}\"\n")
    hook.chmod(0o755)
    git("config", "core.fsmonitor", str(hook), cwd=repo)
    wt = worktrees(repo, "fsmv")
    (wt / "README.md").write_text("edited\n")
    git("status", cwd=wt)
    (wt / "src" / "app.py").write_text("edited behind the monitor's back\n")
    assert "src/app.py" not in git("status", "--porcelain", cwd=wt)
    _round_trip(repo, wt, "fsmv", how)
    assert not [ln for ln in git("ls-files", "-f", cwd=wt).splitlines() if ln[0].islower()]
    assert " M src/app.py" in git("status", "--porcelain", cwd=wt).splitlines()


@pytest.mark.parametrize("how", PATHS)
def test_executable_bit_changes(repo, worktrees, how):
    wt = worktrees(repo, "xbit")
    (wt / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(wt / "tool.sh", 0o755)
    git("add", "tool.sh", cwd=wt)
    git("commit", "-qm", "an executable", cwd=wt)
    git("update-index", "--chmod=+x", "README.md", cwd=wt)  # staged only: still 0644
    os.chmod(wt / "run.sh", 0o755)  # unstaged
    os.chmod(wt / "tool.sh", 0o644)  # unstaged, the other way
    git("update-index", "--chmod=-x", "tool.sh", cwd=wt)
    os.chmod(wt / "src" / "util.py", 0o755)
    git("add", "src/util.py", cwd=wt)
    os.chmod(wt / "src" / "util.py", 0o644)  # staged +x, then -x on disk
    _round_trip(repo, wt, "xbit", how)


@pytest.mark.parametrize("how", PATHS)
def test_permission_bits_of_directories(repo, worktrees, how):
    wt = worktrees(repo, "dperm")
    os.chmod(wt, 0o750)
    os.chmod(wt / "src", 0o700)  # tracked files only, none changed
    (wt / "keys" / "deep").mkdir(parents=True)
    (wt / "keys" / "deep" / "id").write_text("secret\n")
    os.chmod(wt / "keys", 0o750)
    os.chmod(wt / "keys" / "deep", 0o711)
    _round_trip(repo, wt, "dperm", how)


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("masks", [(0o002, 0o022), (0o022, 0o077)])
def test_restored_under_another_umask(repo, worktrees, masks, how):
    # A shell's umask at the shutdown, a service's at the boot: the files come
    # back with the bits they had, not the ones the restore's umask gives.
    old = os.umask(masks[0])
    try:
        wt = worktrees(repo, "umask")
        (wt / "README.md").write_text("edited\n")
        (wt / "new dir").mkdir()
        (wt / "new dir" / "new.txt").write_text("untracked\n")
        (wt / "run.sh").chmod(0o777 & ~masks[0])
        before = exact_state(wt)
        ao("ao-preserve", "umask", cwd=repo)
        if how == "checkout":
            checkout_path_only()
        os.umask(masks[1])
        ao("ao-restore", "umask", cwd=repo)
    finally:
        os.umask(old)
    assert_restored(before, exact_state(wt))


def test_permission_bits_after_a_conflicted_apply(repo, worktrees):
    wt = worktrees(repo, "cflmode")
    (wt / "README.md").write_text("mine\n")
    (wt / "id_key").write_text("secret\n")
    os.chmod(wt / "id_key", 0o600)
    ao("ao-preserve", "cflmode", cwd=repo)
    commit_on(repo, "cflmode", {"README.md": "theirs\n"})
    ao("ao-restore", "cflmode", cwd=repo, rc=3)
    assert "<<<<<<<" in (wt / "README.md").read_text()
    assert oct(os.stat(wt / "id_key").st_mode & 0o777) == oct(0o600)


def test_private_state_written_after_the_capture_is_saved(repo, worktrees):
    # An agent writes between the capture and the move: the capture taken again
    # from the moved copy brings its private state (bits, intent-to-add) along.
    from tests.test_live_agents import _paused_at

    wt = worktrees(repo, "lateprv")
    (wt / "a.txt").write_text("work\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "lateprv"], repo) as result:
        (wt / "late.key").write_text("secret\n")
        os.chmod(wt / "late.key", 0o600)
        os.chmod(wt / "README.md", 0o640)
        (wt / "late-ita.txt").write_text("meant to be added\n")
        git("add", "-N", "late-ita.txt", cwd=wt)
        before = exact_state(wt)
    out, err, rc = result[0]
    assert rc == 0 and "written after the first capture" in out, out + err
    checkout_path_only()
    ao("ao-restore", "lateprv", cwd=repo)
    assert_restored(before, exact_state(wt))


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("dirty", [False, True])
def test_empty_directories_come_back(repo, worktrees, dirty, how):
    wt = worktrees(repo, "empty")
    (wt / "out" / "a" / "b").mkdir(parents=True)
    (wt / "spool").mkdir(mode=0o700)
    (wt / "build" / "cache").mkdir(parents=True)  # ignored: comes back from the trash
    if dirty:
        (wt / "README.md").write_text("edited\n")
    _round_trip(repo, wt, "empty", how)


def test_a_sparse_save_from_before_the_flags_were_recorded(repo, worktrees):
    # Saves written before sparse checkouts' skip-worktree flags were recorded
    # carry none: restore leaves the flags the patterns give, clearing nothing.
    wt = _sparse_worktree(repo, worktrees, "legacy", "cone")
    (wt / "deep" / "a").write_text("edited\n")
    before = exact_state(wt)
    ao("ao-preserve", "legacy", cwd=repo)
    with sqlite3.connect(db_path()) as db:
        saved = json.loads(db.execute("SELECT worktree_config FROM session_worktrees").fetchone()[0])
        for key in ("exact_flags", "skip_worktree", "skip_worktree_absent", "mode_base"):
            saved.pop(key, None)
        db.execute("UPDATE session_worktrees SET worktree_config = ?", (json.dumps(saved),))
    checkout_path_only()
    ao("ao-restore", "legacy", cwd=repo)
    assert_restored(before, exact_state(wt))
