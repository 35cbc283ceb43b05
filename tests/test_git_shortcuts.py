"""The process-saving shortcuts of git_ao/git/process.py agree with git itself.

Each shortcut replaces a git process that used to run once per session (see
docs/PERFORMANCE.md); these tests hold the replacement to git's own answer.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from git_ao import git, gitfiles
from git_ao.git import query
from tests.support import git as git_cli

# Characters that matter to git's ref rules, plus ordinary ones.
_ALPHABET = st.sampled_from(list("ab09_-./@{}~^:?*[\\ \t\x7f\x01lockLOCKé") + [".lock", "@{"])


def _git_says(ref: str) -> bool:
    """git's own verdict. git check-ref-format reads a leading '-' as an option (and
    takes no '--'), so such a ref is asked with an 'x' in front: no rule of
    check-ref-format tells '-...' from 'x-...' (neither starts with '.', is '@' or
    is empty), so the verdict is the same."""
    asked = "x" + ref if ref.startswith("-") else ref
    res = subprocess.run(["git", "check-ref-format", asked], capture_output=True, check=False)
    assert res.returncode in (0, 1), res.stderr
    return res.returncode == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=12).map("".join).map(lambda s: "refs/ao/preserved/" + s)
       | st.lists(_ALPHABET, max_size=12).map("".join))
@example("refs/ao/preserved/a.lock")
@example("refs/ao/preserved/a..b")
@example("refs/ao/preserved/.a")
@example("refs/ao/preserved/a.")
@example("refs/ao/preserved/a@{b")
@example("refs/ao/preserved/a/")
@example("refs/ao/preserved//a")
@example("@")
@example("refs/ao/preserved/ok-1.2_x")
@example("-/a")
@example("-")
@example("refs/-/a")
def test_check_ref_format_matches_git(ref):
    if "\0" in ref:
        return
    assert git.check_ref_format(ref) == _git_says(ref), ref


def test_check_ref_format_starts_no_process():
    seen = []
    git.set_trace(lambda argv, cwd: seen.append(argv))
    try:
        assert git.check_ref_format("refs/ao/preserved/s1")
        assert not git.check_ref_format("refs/ao/preserved/s1.lock")
    finally:
        git.set_trace(None)
    assert seen == []


def _flags_reference(out: bytes):
    """The plain per-record reading of `git ls-files -v -z` that index_flags must match."""
    import os
    au, sw, attrs = [], [], []
    for rec in out.split(b"\0"):
        if len(rec) < 3:
            continue
        tag, path = rec[:1], os.fsdecode(rec[2:])
        if tag in (b"S", b"s"):
            sw.append(path)
        if tag.islower():
            au.append(path)
        if path == ".gitattributes" or path.endswith("/.gitattributes"):
            attrs.append(path)
    return au, sw, attrs


def test_index_flags_matches_a_plain_reading(repo):
    names = ["!first", "H", "H x", "a/H", "S", ".gitattributes", "a/.gitattributes", "b.gitattributes",
             "c/d/.gitattributes", "sp ace/.gitattributes", "new\nline", "nl\ndir/.gitattributes",
             "é/f", "x.gitattributes/y"]
    names += [f"many/f{i}" for i in range(300)]
    for n in names:
        p = repo / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(n + "\n")
    git_(repo, "add", "-A")
    git_(repo, "update-index", "--assume-unchanged", "!first", "H", "a/.gitattributes",
         "many/f7")
    git_(repo, "update-index", "--skip-worktree", "S", "many/f9", "c/d/.gitattributes")
    git_(repo, "update-index", "--assume-unchanged", "many/f9", "new\nline")
    out = subprocess.run(["git", "ls-files", "-v", "-z"], cwd=repo, capture_output=True,
                         check=True).stdout
    flags = query.index_flags(str(repo))
    assert (flags.assume_unchanged, flags.skip_worktree, flags.attributes) == \
        _flags_reference(out)
    assert "many/f9" in flags.skip_worktree and "many/f9" in flags.assume_unchanged
    assert flags.attributes == [".gitattributes", "a/.gitattributes", "c/d/.gitattributes",
                                "nl\ndir/.gitattributes", "sp ace/.gitattributes"]


@pytest.mark.parametrize("out", [
    b"", b"h a\0", b"S .gitattributes\0H b\0", b"H .gitattributes\0", b"s x/.gitattributes\0",
    b"H a.gitattributes\0H a/b.gitattributes\0H a/.gitattributes/c\0h a/.gitattributes\0",
    b"H /.gitattributes\0H .gitattributes.\0M .gitattributes\0", b"H x\0S y\0h z\0H w\0",
    b"c .gitattributes\0" + b"".join(b"H f%d\0" % i for i in range(50)) + b"S last\0",
])
def test_index_flags_parse_matches_a_plain_reading_first_and_last_records(out):
    """The first record (no NUL before it) and the last are read like the others."""
    from git_ao.git import porcelain
    flags = porcelain.index_flags(out)
    assert (flags.assume_unchanged, flags.skip_worktree, flags.attributes) == \
        _flags_reference(out)


def git_(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.parametrize("fmt", ["sha1", "sha256"])
@pytest.mark.parametrize("message", ["index on main: abc1234\n", "two\n\nlines é\nAo-X: y\n",
                                     "no newline at the end", ""])
@pytest.mark.parametrize("parents", [0, 1, 3])
def test_build_commit_gives_commit_trees_id_and_bytes(tmp_path, fmt, message, parents):
    """The commits a capture computes and writes in one hash-object are those `git
    commit-tree` writes: same bytes, same id, in either hash."""
    import os
    import time
    path = tmp_path / fmt
    git_(tmp_path, "init", "-q", f"--object-format={fmt}", str(path))
    tree = subprocess.run(["git", "hash-object", "-w", "-t", "tree", "--stdin"], cwd=path,
                          input=b"", capture_output=True, check=True).stdout.decode().strip()
    when = 1_700_000_000 + parents
    made = []
    for _ in range(parents):
        oid, data = git.build_commit(tree, made[-1:], "p\n", when=when)
        git.write_objects(str(path), str(path / ".git"), "commit", [(oid, data)])
        made.append(oid)
    got = git.build_commit(tree, made, message, when=when)
    assert got is not None
    off = time.localtime(when).tm_gmtoff
    zone = f"{'-' if off < 0 else '+'}{abs(off) // 3600:02d}{abs(off) % 3600 // 60:02d}"
    env = {**os.environ, **git.IDENTITY, "GIT_AUTHOR_DATE": f"{when} {zone}",
           "GIT_COMMITTER_DATE": f"{when} {zone}"}
    args = ["git", "commit-tree", tree] + [a for p in made for a in ("-p", p)]
    want = subprocess.run(args, cwd=path, input=message.encode(), env=env, capture_output=True,
                          check=True).stdout.decode().strip()
    assert got[0] == want
    assert subprocess.run(["git", "cat-file", "commit", want], cwd=path, capture_output=True,
                          check=True).stdout == got[1]
    git.write_objects(str(path), str(path / ".git"), "commit", [got])
    assert not [n for n in os.listdir(path / ".git") if n.startswith(git.OBJECT_PREFIX)]


def test_build_commit_leaves_a_message_git_would_rewrite_to_commit_tree():
    assert git.build_commit("4b825dc642cb6eb9a060e54bf8d69288fbee4904", [],
                            "bad \udcff byte\n") is None


def test_head_reflog_read_from_its_file_is_git_log_g(repo, worktrees):
    wt = worktrees(repo, "rl", register=False)
    assert query.head_reflog_commits(str(wt)) == query.reflog_commits(str(wt), "HEAD")
    for n in range(3):
        (wt / f"f{n}").write_text(f"{n}\n")
        git_(wt, "add", "-A")
        git_(wt, "commit", "-q", "-m", f"c{n}")
    git_(wt, "commit", "-q", "--amend", "-m", "amended")
    git_(wt, "reset", "-q", "--hard", "HEAD~2")
    git_(wt, "checkout", "-q", "--detach", "HEAD~1")
    got = query.head_reflog_commits(str(wt))
    assert len(got) >= 7 and got == query.reflog_commits(str(wt), "HEAD")
    assert query.head_reflog_commits(str(repo)) == query.reflog_commits(str(repo), "HEAD")


def test_read_refs_is_rev_parse_and_cat_file(repo, worktrees):
    from git_ao.save import history
    wt = worktrees(repo, "rr", register=False)
    tree = git.trees_of(str(repo), ["HEAD"])[0]
    head = git.rev_parse(str(repo), "HEAD")
    for name, msg in (("a", "one\n\nAo-Session: x\n"), ("b", "\n\nleading blank\n"),
                      ("c", "no end")):
        oid = subprocess.run(["git", "commit-tree", tree, "-p", head], cwd=repo,
                             input=msg.encode(), capture_output=True, check=True).stdout
        git_(repo, "update-ref", f"refs/ao/preserved/{name}", oid.decode().strip())
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"x",
                          capture_output=True, check=True).stdout.decode().strip()
    git_(repo, "update-ref", "refs/ao/preserved/blob", blob)
    git_(wt, "update-ref", "refs/worktree/mine", head)
    git_(wt, "update-ref", "refs/bisect/bad", head)
    got = git.read_refs(str(wt), "refs/ao/preserved/a", "refs/ao/preserved/b",
                        "refs/ao/preserved/c", "refs/ao/preserved/blob", "refs/ao/history/a",
                        "refs/worktree/", "refs/bisect/")
    assert got is not None
    assert sorted(got) == ["refs/ao/preserved/a", "refs/ao/preserved/b", "refs/ao/preserved/blob",
                           "refs/ao/preserved/c", "refs/bisect/bad", "refs/worktree/mine"]
    for ref, r in got.items():
        assert r.oid == git.rev_parse(str(wt), ref)
        if ref.endswith("blob"):
            assert (r.tree, r.parents, r.message) == ("", [], "")
            continue
        t, parents, message = query.commit_object(str(wt), r.oid)
        assert (r.tree, r.parents) == (t, parents)
        assert r.message == message.lstrip("\n")
    assert git.read_refs(str(repo), "refs/worktree/") == {}  # another worktree's refs
    assert history.newest_of(got, "a") is None
    assert history.newest_of(None, "a") is history.UNREAD


@pytest.mark.parametrize("message", [
    "WIP on x: abc git-ao preserve of s\n\nAo-Session: s\nAo-Kind: worker\n",
    "ao preserved s\n", "Ao-Session: s\n", "subject\n\nbody Ao-Session: s\n",
    "subject\n\nAo-Session: s\nnot a trailer\n", "subject\n\nAo-Session: \n",
    "subject\n\nAo-Session: s\n\n\n", "s\n\nfirst\n\nAo-Kind: w\nAo-Session: s2\n",
])
def test_a_preserve_commit_is_told_from_its_message_as_git_reads_its_trailers(repo, message):
    from git_ao.save import daemon_refs
    tree = git.trees_of(str(repo), ["HEAD"])[0]
    oid = subprocess.run(["git", "commit-tree", tree], cwd=repo, input=message.encode(),
                         capture_output=True, check=True).stdout.decode().strip()
    assert daemon_refs.written_by_git_ao(str(repo), oid, message) == \
        daemon_refs.written_by_git_ao(str(repo), oid)


def _cat_file_commit(cwd, oid):
    """git's own reading of a commit object, as `query.commit_object` returns it."""
    body = subprocess.run(["git", "cat-file", "commit", oid], cwd=cwd, capture_output=True,
                          check=True).stdout
    headers, _, message = body.partition(b"\n\n")
    tree = next(ln[5:].decode() for ln in headers.split(b"\n") if ln.startswith(b"tree "))
    parents = [ln[7:].decode() for ln in headers.split(b"\n") if ln.startswith(b"parent ")]
    return tree, parents, message.decode("utf-8", "replace")


def test_a_commit_read_from_its_loose_file_is_cat_file_and_packed_ones_ask_git(repo, worktrees):
    wt = worktrees(repo, "lo", register=False)
    (wt / "f").write_text("x\n")
    git_(wt, "add", "f")
    git_(wt, "commit", "-q", "-m", "subject\n\nbody \xe9\n")
    oid = git.rev_parse(str(wt), "HEAD")
    assert oid is not None
    want = _cat_file_commit(wt, oid)
    for cwd in (wt, repo, repo / ".git"):
        assert query.loose_object(str(cwd), oid, b"commit") is not None
        assert query.commit_object(str(cwd), oid) == want
    assert query.loose_object(str(wt), oid, b"blob") is None  # another type: git is asked
    tree = want[0]
    assert query.loose_object(str(wt), tree, b"commit") is None
    git_(repo, "gc", "-q", "--prune=now")  # packed: only git reads it
    assert query.loose_object(str(wt), oid, b"commit") is None
    assert query.commit_object(str(wt), oid) == want
    with pytest.raises(git.GitError):
        query.commit_object(str(wt), "0" * 40)


def test_a_branch_tip_read_from_the_ref_files_is_rev_parse(repo, worktrees):
    wt = worktrees(repo, "bt", register=False)
    common = git.common_dir_of(str(repo))
    head = git.rev_parse(str(repo), "HEAD")
    git_(repo, "branch", "packed-one")
    git_(repo, "branch", "nested/deep")
    git_(repo, "pack-refs", "--all")
    git_(repo, "branch", "loose-one")
    git_(repo, "branch", "-f", "nested/deep", "HEAD")  # loose again, over its packed line
    (wt / "g").write_text("y\n")
    git_(wt, "add", "g")
    git_(wt, "commit", "-q", "-m", "moved")
    git_(repo, "update-ref", "refs/heads/packed-one", git.rev_parse(str(wt), "HEAD"))
    git_(repo, "symbolic-ref", "refs/heads/sym", "refs/heads/loose-one")
    for branch in ("packed-one", "loose-one", "nested/deep", "bt", "sym", "gone", "nested",
                   "packed", "nested/deep/er"):
        assert query.branch_tip(common, branch) == git.rev_parse(common, f"refs/heads/{branch}"), \
            branch
    assert query.branch_tip(common, "loose-one") == head


def test_free_by_files_proves_only_what_git_worktree_list_shows(repo, worktrees, tmp_path):
    from git_ao.git import worktree
    common = git.common_dir_of(str(repo))
    wt = worktrees(repo, "fb", register=False)
    main_branch = git.current_branch(str(repo))
    git_(repo, "branch", "free-one")
    elsewhere = tmp_path / "elsewhere"

    def git_says_free(path, branch):
        entries = git.worktree_list(common)
        return worktree.find(entries, str(path)) is None and not any(
            e.branch == f"refs/heads/{branch}" for e in entries)

    cases = [(elsewhere, "free-one"), (elsewhere, None), (wt, "free-one"),
             (elsewhere, "fb"), (elsewhere, main_branch), (repo, "free-one")]
    for path, branch in cases:
        got = worktree.free_by_files(common, str(path), branch)
        assert not got or git_says_free(path, branch or "-"), (path, branch)
    assert worktree.free_by_files(common, str(elsewhere), "free-one")
    git_(wt, "checkout", "-q", "--detach")
    assert worktree.free_by_files(common, str(elsewhere), "fb")  # detached: the branch is free
    import shutil
    shutil.rmtree(wt)  # prunable: still registered until pruned, so not proven free
    assert not worktree.free_by_files(common, str(wt), "free-one")
    git_(repo, "worktree", "prune")
    assert worktree.free_by_files(common, str(wt), "free-one")
    other = worktrees(repo, "rel", register=False)
    admin = os.path.join(common, "worktrees", "rel")
    with open(os.path.join(admin, "gitdir"), "w") as fh:
        fh.write("../../../rel/.git\n")  # as worktree.useRelativePaths writes it
    assert not worktree.free_by_files(common, str(elsewhere), "free-one")
    os.unlink(os.path.join(admin, "gitdir"))
    assert not worktree.free_by_files(common, str(elsewhere), "free-one")
    assert other.exists()


def _git_dir_git_reads(path) -> str | None:
    res = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=path,
                         capture_output=True, check=False,
                         env={**os.environ, "GIT_CEILING_DIRECTORIES": str(path.parent)})
    return os.path.realpath(res.stdout.decode().strip()) if res.returncode == 0 else None


@pytest.mark.parametrize("form", ["absolute", "relative", "crlf", "relative-crlf", "no-space",
                                  "two-spaces", "empty", "no-newline"])
def test_read_gitfile_reads_a_git_file_as_git_does(repo, worktrees, form):
    """A `.git` file relative to its directory (submodules write them; git 2.48's
    worktree.useRelativePaths too), with CRLF, or malformed: the one parser agrees
    with git, and a worktree linked by a relative one is called linked."""
    from git_ao.fs.gone import repo_gone_advice
    from git_ao.store.records import Session
    path = worktrees(repo, "rel", register=False)
    dotgit = path / ".git"
    admin = os.path.realpath(dotgit.read_text().removeprefix("gitdir: ").strip())
    rel = os.path.relpath(admin, path)
    dotgit.write_bytes({"absolute": f"gitdir: {admin}\n", "relative": f"gitdir: {rel}\n",
                        "crlf": f"gitdir: {admin}\r\n", "relative-crlf": f"gitdir: {rel}\r\n",
                        "no-space": f"gitdir:{admin}\n", "two-spaces": f"gitdir:  {admin}\n",
                        "empty": "gitdir: \n", "no-newline": f"gitdir: {admin}"}[form].encode())
    ours = gitfiles.read_gitfile(str(dotgit))
    theirs = _git_dir_git_reads(path)
    assert (os.path.realpath(ours) if ours and os.path.isdir(ours) else None) == theirs
    if theirs is not None:
        # run from elsewhere: a relative name is the worktree's, not the caller's
        cwd = os.getcwd()
        os.chdir("/")
        try:
            s = Session(id="rel", kind="worker", harness="plain", common_dir=str(repo / ".git"),
                        branch="rel", worktree_path=str(path))
            assert "git worktree repair" not in repo_gone_advice(s)
        finally:
            os.chdir(cwd)


def test_refs_read_from_files_are_for_each_ref_or_left_to_git(repo, worktrees):
    """`query.refs_by_files` (a preserve's reading of the session's refs) gives what
    `git.read_refs` gives in the worktree, or None where only git can tell."""
    wt = worktrees(repo, "rf", register=False)
    admin = git.repo_dirs(str(wt)).git_dir
    tree = git.trees_of(str(repo), ["HEAD"])[0]
    head = git.rev_parse(str(repo), "HEAD")
    per_worktree = ("refs/worktree/", "refs/bisect/")

    def commit(msg: bytes, *parents: str) -> str:
        args = [a for p in parents for a in ("-p", p)]
        return subprocess.run(["git", "commit-tree", tree, *args], cwd=repo, input=msg,
                              capture_output=True, check=True).stdout.decode().strip()

    def both(sid: str):
        refs = (f"refs/ao/preserved/{sid}", f"refs/ao/history/{sid}")
        return (query.refs_by_files(admin, refs, per_worktree),
                git.read_refs(str(wt), *refs, *per_worktree))

    a = commit(b"one\n\nAo-Session: a\n", head)
    git_(repo, "update-ref", "refs/ao/preserved/a", a)
    git_(repo, "update-ref", "refs/ao/history/a", commit(b"\n\nleading blank \xc3\xa9\n", head, a))
    git_(repo, "update-ref", "refs/ao/preserved/none-yet", a)  # another session's
    for sid in ("a", "none", "none-ye"):
        got, want = both(sid)
        assert got is not None and got == want, sid
    assert both("a")[0]["refs/ao/history/a"].message == "leading blank \xe9\n"
    git_(repo, "pack-refs", "--all")  # packed refs, loose objects: still read from files
    got, want = both("a")
    assert got is not None and got == want and len(got) == 2
    # A NUL or a signature block in the message: git decides.
    nul = subprocess.run(["git", "hash-object", "-w", "-t", "commit", "--literally", "--stdin"],
                         cwd=repo, capture_output=True, check=True,
                         input=b"tree %s\nauthor a <a> 0 +0000\ncommitter a <a> 0 +0000\n\n"
                         b"x\0y\n" % tree.encode()).stdout.decode().strip()
    git_(repo, "update-ref", "refs/ao/preserved/nul", nul)
    git_(repo, "update-ref", "refs/ao/preserved/sig",
         commit(b"s\n\n-----BEGIN PGP SIGNATURE-----\nx\n-----END PGP SIGNATURE-----\n"))
    # Refs below the name (the pattern matches them too), loose or packed.
    git_(repo, "update-ref", "refs/ao/preserved/dir/x", a)
    git_(repo, "update-ref", "refs/ao/history/pdir/x", a)
    git_(repo, "pack-refs", "--all")
    git_(repo, "symbolic-ref", "refs/ao/preserved/sym", "refs/ao/preserved/a")
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"x",
                          capture_output=True, check=True).stdout.decode().strip()
    git_(repo, "update-ref", "refs/ao/preserved/blob", blob)
    for sid in ("nul", "sig", "dir", "pdir", "sym", "blob"):
        got, want = both(sid)
        assert got is None, (sid, got, want)
    # A per-worktree ref: git reads it.
    git_(wt, "update-ref", "refs/bisect/bad", head)
    assert both("a")[0] is None and "refs/bisect/bad" in both("a")[1]
    git_(wt, "update-ref", "-d", "refs/bisect/bad")
    assert both("a")[0] == both("a")[1]
    git_(repo, "gc", "-q", "--prune=now")  # packed objects: only git reads them
    got, want = both("a")
    assert got is None and want is not None and len(want) == 2


def test_the_blobs_of_several_trees_in_one_process_are_ls_tree_of_each(repo, worktrees):
    """`query.trees_blobs` (the removal proof's listing of a save's trees) gives what
    `ls_tree_blobs` of each tree gives, a later tree winning at the same path."""
    wt = worktrees(repo, "tb", register=False)
    (wt / "dir" / "deep").mkdir(parents=True)
    (wt / "dir" / "deep" / "f.txt").write_text("deep\n")
    (wt / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(wt / "run.sh", 0o755)
    os.symlink("run.sh", wt / "link")
    (wt / "tab\there").write_text("t\n")
    (wt / "new\nline").write_text("n\n")
    (wt / "caf\xe9").write_text("c\n")
    head = git.rev_parse(str(wt), "HEAD")
    git_(wt, "add", "-A")
    git_(wt, "update-index", "--add", "--cacheinfo", f"160000,{head},sub")
    full = git.line(["write-tree"], str(wt))
    (wt / "only.txt").write_text("other\n")
    git_(wt, "rm", "-q", "--cached", "-r", ".")
    git_(wt, "add", "only.txt", "run.sh")
    other = git.line(["write-tree"], str(wt))
    empty = git.line(["mktree"], str(wt), input=b"")
    for trees in ([full], [full, other], [other, full], [empty, full], [full, empty],
                  [empty], [empty, empty]):
        want: dict[str, str] = {}
        for t in trees:
            want.update(query.ls_tree_blobs(str(wt), t))
        assert query.trees_blobs(str(wt), trees) == want, trees
    assert "sub" in query.trees_blobs(str(wt), [full, other])


def test_changed_and_listed_is_changed_paths_and_trees_blobs(repo):
    # The witness's diff of I and W, with the removal proof's listing of W and U
    # taken in the same git process: the same answers as the two asked apart.
    (repo / "d").mkdir()
    (repo / "d" / "a.txt").write_text("a\n")
    (repo / "gone.txt").write_text("g\n")
    git_cli("add", "-A", cwd=repo)
    i_tree = git_cli("write-tree", cwd=repo).strip()
    (repo / "d" / "a.txt").write_text("changed\n")
    os.chmod(repo / "d" / "a.txt", 0o755)
    os.unlink(repo / "gone.txt")
    (repo / "new.txt").write_text("n\n")
    git_cli("add", "-A", cwd=repo)
    w_tree = git_cli("write-tree", cwd=repo).strip()
    u_tree = git_cli("rev-parse", "HEAD^{tree}", cwd=repo).strip()
    want_changed = sorted(query.changed_paths(str(repo), i_tree, w_tree))
    want_listed = query.trees_blobs(str(repo), [w_tree, u_tree])
    changed, listed = query.changed_and_listed(str(repo), i_tree, w_tree, [w_tree, u_tree])
    assert sorted(changed) == want_changed == ["d/a.txt", "gone.txt", "new.txt"]
    assert listed == want_listed
    changed, listed = query.changed_and_listed(str(repo), w_tree, w_tree, [w_tree])
    assert sorted(changed) == []
    assert listed == query.ls_tree_blobs(str(repo), w_tree)
