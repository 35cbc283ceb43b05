"""The file-system walk sees what git does not show, and judges nested repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from git_ao.fs import nested, walk
from tests.support import git

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")


def _walk(path: Path) -> walk.Walk:
    return walk.walk(str(path))


@pytest.fixture
def d(tmp_path) -> Path:
    """An empty directory of the test's own (tmp_path also holds the test's HOME)."""
    path = tmp_path / "d"
    path.mkdir()
    return path


def test_walk_lists_files_links_specials_and_nested(d):
    (d / "a" / "b").mkdir(parents=True)
    (d / "a" / "b" / "f").write_text("x")
    (d / "link").symlink_to("/etc")
    os.mkfifo(d / "fifo")
    (d / "repo" / ".git").mkdir(parents=True)
    (d / "repo" / "inside").write_text("y")
    (d / "wt").mkdir()
    (d / "wt" / ".git").write_text("gitdir: /nowhere\n")
    (d / ".git").write_text("gitdir: /the/worktree/itself\n")
    w = _walk(d)
    assert sorted(w.entries) == ["a/b/f", "fifo", "link", "repo/inside"]
    assert w.entries["fifo"].kind == "other" and w.entries["link"].kind == "link"
    assert w.nested == ["repo", "wt"]
    assert w.under_nested("repo/inside") and not w.under_nested("a/b/f")
    assert w.blockers == []


def test_what_is_removed_between_the_listing_and_its_stat_is_no_blocker(d, monkeypatch):
    # An editor's swap file, or a directory, deleted while the walk runs: nothing
    # there is lost by taking the directory away, so it must not stop a preserve.
    (d / "kept.txt").write_text("x")
    (d / ".kept.txt.swp").write_text("swap")
    (d / "gone").mkdir()
    (d / "gone" / "f").write_text("y")
    listed = walk._list

    def list_then_remove(w, fd, rel):
        found = listed(w, fd, rel)
        if rel == "":
            os.unlink(d / ".kept.txt.swp")
            (d / "gone" / "f").unlink()
            (d / "gone").rmdir()
        return found

    monkeypatch.setattr(walk, "_list", list_then_remove)
    w = _walk(d)
    assert (sorted(w.entries), w.blockers, sorted(w.dirs)) == (["kept.txt"], [], [])


def test_a_path_longer_than_path_max_is_walked_and_named(d):
    fd = os.open(d, os.O_RDONLY)
    depth = 0
    try:
        # Build it relative to descriptors: the full path cannot be opened by name.
        while depth * 201 < walk.PATH_MAX + 200:
            os.mkdir("d" * 200, dir_fd=fd)
            nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            depth += 1
        wfd = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, b"deep\n")
        os.close(wfd)
    finally:
        os.close(fd)
    w = _walk(d)
    deep = [p for p in w.entries if p.endswith("deep.txt")]
    assert len(deep) == 1
    assert [b.path for b in w.blockers] == deep
    assert "PATH_MAX" in w.blockers[0].reason
    subprocess.run(["rm", "-rf", str(d / ("d" * 200))], check=True)


@ROOT_ONLY
@pytest.mark.parametrize("kind", ["tmpfs", "bind"])
def test_mount_points_block_and_are_never_entered(tmp_path, kind):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.bin").write_text("data")
    root = tmp_path / "root"
    (root / "mnt").mkdir(parents=True)
    if kind == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(root / "mnt")], check=True)
        (root / "mnt" / "data.bin").write_text("data")
    else:
        subprocess.run(["mount", "--bind", str(outside), str(root / "mnt")], check=True)
    try:
        w = _walk(root)
        assert [b.path for b in w.blockers] == ["mnt"]
        assert "mount" in w.blockers[0].reason
        assert "mnt/data.bin" not in w.entries
        w = _walk(root / "mnt")
        assert [b.path for b in w.blockers] == ["."]
    finally:
        subprocess.run(["umount", str(root / "mnt")], check=True)


def test_unaccounted_names_what_neither_the_capture_nor_ignore_rules_cover(d):
    (d / "kept.txt").write_text("k")
    (d / "env").mkdir()
    (d / "env" / "x").write_text("i")
    (d / "other.log").write_text("i")
    (d / "lost.txt").write_text("l")
    (d / "KEPT.TXT").write_text("case")
    os.mkfifo(d / "pipe")
    import time
    time.sleep(0.1)  # older than the walk's racy window: not "written as the capture began"
    w = _walk(d)
    blockers = walk.unaccounted(w, {"kept.txt"}, ["env/"], lambda paths: {"other.log"})
    assert [(b.path, b.reason.split(",")[0].split(" ")[0]) for b in blockers] == [
        ("KEPT.TXT", "its"), ("lost.txt", "git"), ("pipe", "a")]
    assert "case" in blockers[0].reason and "FIFO" in blockers[2].reason


def test_changed_since_sees_a_rewrite_an_append_and_a_new_file(d):
    (d / "a").write_text("one")
    (d / "b").write_text("two")
    before = _walk(d)
    (d / "a").write_text("ONE, longer")
    with open(d / "b", "a") as fh:
        fh.write("more")
    (d / "c").write_text("new")
    moved = d.parent / (d.name + "-moved")
    os.rename(d, moved)
    after = walk.walk(str(moved))
    assert walk.changed_since(before, after) == ["a", "b", "c"]
    os.rename(moved, d)


def _tree(d: Path) -> None:
    (d / "src" / "deep").mkdir(parents=True)
    (d / "src" / "deep" / "f.py").write_text("one\n")
    (d / "src" / "g.py").write_text("two\n")
    (d / "top.txt").write_text("three\n")
    (d / "link").symlink_to("src/g.py")
    (d / "node_modules" / "pkg").mkdir(parents=True)
    (d / "node_modules" / "pkg" / "i.js").write_text("ignored\n")
    (d / "build.log").write_text("ignored too\n")
    (d / ".git").write_text("gitdir: /the/worktree/itself\n")


def _rewrite_keeping_times(p: Path) -> None:
    st = p.stat()
    p.write_text("ONE\n")  # the same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


MUTATIONS = {
    "nothing": (lambda d: None, True),
    "a new file deep down": (lambda d: (d / "src" / "deep" / "new").write_text("x"), False),
    "a new file at the top": (lambda d: (d / "new").write_text("x"), False),
    "a new directory": (
        lambda d: ((d / "src" / "sub").mkdir(), (d / "src" / "sub" / "h").write_text("x")), False),
    "a rewrite keeping size and mtime": (
        lambda d: _rewrite_keeping_times(d / "src" / "deep" / "f.py"), False),
    "a chmod": (lambda d: (d / "src" / "g.py").chmod(0o600), False),
    "a removed file": (lambda d: (d / "top.txt").unlink(), False),
    "an ignored file swapped for a new one": (
        lambda d: ((d / "build.log").unlink(), (d / "other").write_text("x")), False),
    "a link pointed elsewhere": (
        lambda d: ((d / "link").unlink(), (d / "link").symlink_to("top.txt")), False),
    "a file replaced by a rename": (
        lambda d: ((d / "tmp").write_text("two\n"), os.rename(d / "tmp", d / "src" / "g.py")),
        False),
    "a new file in an ignored directory": (
        lambda d: (d / "node_modules" / "pkg" / "j.js").write_text("x"), True),
    "an ignored file rewritten": (lambda d: (d / "build.log").write_text("changed"), True),
    "an ignored file replaced by a directory": (
        lambda d: ((d / "build.log").unlink(), (d / "build.log").mkdir(),
                   (d / "build.log" / "notes.md").write_text("x")), False),
    "an ignored directory replaced by a file": (
        lambda d: (shutil.rmtree(d / "node_modules"), (d / "node_modules").write_text("x")),
        False),
}


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_unchanged_since_proves_only_an_unchanged_tree(d, what):
    # The check after the move without a new walk: True only where a new walk
    # would show nothing outside what is ignored; anything else asks for a walk.
    _tree(d)
    import time
    time.sleep(0.1)  # older than the racy window: the directories are not listed again
    before = walk.walk(str(d))
    change, same = MUTATIONS[what]
    change(d)
    moved = d.parent / (d.name + "-moved")
    os.rename(d, moved)
    ignored = ["node_modules/", "build.log"]
    assert walk.unchanged_since(before, str(moved), ignored) is same
    relevant = [p for p in walk.changed_since(before, walk.walk(str(moved)))
                if not walk.ignored_file(p, ignored)]
    assert bool(relevant) is not same, relevant


def test_unchanged_since_lists_a_racy_directory_again(d):
    # A directory written within the racy window may hold a new name with its
    # times unchanged: it is listed again, and a name it did not hold is seen.
    _tree(d)
    # (the walk's start just after the directory's last change: it is racy)
    before = walk.walk(str(d), started_ns=(d / "src").lstat().st_ctime_ns + 1)
    assert walk.unchanged_since(before, str(d), [])
    before.listed["src"] -= 1  # as if "g.py" had arrived after the listing
    del before.entries["src/g.py"]
    assert not walk.unchanged_since(before, str(d), [])


def test_unchanged_since_sees_a_repository_made_in_a_racy_directory(d):
    # Within one clock tick an entry goes and a `.git` comes: the count and the
    # directory's times stay, but a `.git` where there was none is a new nested
    # repository, which a new walk would see.
    _tree(d)
    before = walk.walk(str(d), started_ns=(d / "src").lstat().st_ctime_ns + 1)
    (d / "src" / ".git").mkdir()
    st = (d / "src").lstat()
    before.dir_sigs["src"] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    before.listed["src"] += 1  # as if an ignored file seen then had gone in the same tick
    before.entries["src/gone.log"] = before.entries["src/g.py"]
    assert not walk.unchanged_since(before, str(d), ["src/gone.log"])


def _clone_with_remote(tmp_path, name):
    origin = tmp_path / f"{name}-origin"
    git("init", "-q", "-b", "main", origin, cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "first", cwd=origin)
    clone = tmp_path / name
    git("clone", "-q", origin, clone, cwd=tmp_path)
    return clone


def test_a_clean_pushed_clone_is_safe_and_anything_else_is_not(tmp_path):
    clean = _clone_with_remote(tmp_path, "clean")
    assert nested.unsafe_reason(str(clean)) is None
    dirty = _clone_with_remote(tmp_path, "dirty")
    (dirty / "new.txt").write_text("work")
    assert "uncommitted" in nested.unsafe_reason(str(dirty))
    ahead = _clone_with_remote(tmp_path, "ahead")
    git("commit", "-q", "--allow-empty", "-m", "local only", cwd=ahead)
    assert "no remote" in nested.unsafe_reason(str(ahead))
    lone = tmp_path / "lone"
    git("init", "-q", lone, cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "only here", cwd=lone)
    assert "no remote" in nested.unsafe_reason(str(lone))


def test_a_file_written_as_the_capture_began_is_named_so_not_as_unseen_by_git(tmp_path):
    import time
    (tmp_path / "old.txt").write_text("old\n")
    time.sleep(0.1)  # out of the racy window of the walk below
    w = walk.walk(str(tmp_path))
    (tmp_path / "new.txt").write_text("new\n")  # an agent still writing
    w.entries["new.txt"] = walk.Entry.of(os.lstat(tmp_path / "new.txt"))
    found = {b.path: b.reason for b in walk.unaccounted(w, set(), [], lambda paths: set())}
    assert found["old.txt"] == "git does not show it, so it is not in the capture"
    assert found["new.txt"].startswith("written as the capture began or since")


def test_a_time_on_a_whole_second_stays_racy_for_two_seconds(d):
    """FAT (even seconds), ext3 and HFS+ stamp whole seconds: a write up to two
    seconds after such a stamp can leave it as it was, so the walk calls the file
    racy (compared by content) and no unchanged-checkpoint stat file is made of it;
    the same time with nanoseconds is out of the window once 50 ms have passed."""
    import time

    from git_ao.save import unchanged
    (d / "coarse.txt").write_text("x\n")
    (d / "fine.txt").write_text("y\n")
    now = time.time_ns()
    whole = now - now % 1_000_000_000
    os.utime(d / "coarse.txt", ns=(whole, whole))  # as a FAT or ext3 write leaves it
    os.utime(d / "fine.txt", ns=(whole + 1, whole + 1))
    time.sleep(0.2)  # the ctimes (set just now, in nanoseconds) leave the 50 ms window
    w = _walk(d)
    if w.started_ns - whole >= walk.COARSE_NS:
        pytest.skip("the machine took two seconds to get here")
    assert w.racy("coarse.txt")
    assert not w.racy("fine.txt")
    assert unchanged.signatures(str(d), w, []) is None
    (d / "coarse.txt").unlink()
    time.sleep(0.2)  # the directory's times, set by the unlink, leave the window too
    w = _walk(d)
    assert unchanged.signatures(str(d), w, []) is not None
    assert not walk.Entry("file", 0o100644, 2, whole, whole, 1).touched_since(
        whole + walk.COARSE_NS + 1)


@ROOT_ONLY
def test_the_mount_table_reads_a_mount_point_with_escaped_characters(tmp_path):
    """The kernel writes a space, a tab, a newline and a backslash in a mount point
    as \\ooo; a mount point with none is taken as it is."""
    from git_ao import mounts
    from tests.support import tmpfs
    plain, odd = tmp_path / "plain", tmp_path / "a b\\c\td"
    for where in (plain, odd):
        where.mkdir()
    with tmpfs(plain), tmpfs(odd):
        assert {str(plain), str(odd)} <= mounts.mount_points()
        for where in (plain, odd):
            assert mounts.mount_of(str(where)) == str(where)
            assert mounts.fs_type(str(where)) == "tmpfs"
    assert str(odd) not in mounts.mount_points()
