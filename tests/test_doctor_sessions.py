"""git ao doctor names what a restore would meet: a preserve ref that is gone, a
restore path something else holds, nested sessions, and a database that lost its
records while preserve refs remain (restore then says how to rebuild them)."""

from __future__ import annotations

import json
import os
import shutil

from tests.support import ao, git


def _checks(repo, rc):
    res = ao("ao", "doctor", "--json", cwd=repo, rc=rc)
    return [c for c in json.loads(res.stdout)["checks"]
            if c["name"] in ("session", "nested", "database")]


def test_a_pending_session_whose_ref_is_gone_is_named_with_its_trash_copy(repo, worktrees):
    wt = worktrees(repo, "fetched")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "fetched", cwd=repo)
    git("update-ref", "-d", "refs/ao/preserved/fetched", cwd=repo)
    [check] = [c for c in _checks(repo, 1) if c["name"] == "session"]
    assert check["ok"] is False
    assert "its ref refs/ao/preserved/fetched was deleted (git update-ref -d, or a git " \
        "fetch --prune with a refspec covering refs/ao/)" in check["detail"]
    assert "the trash still holds the directory" in check["detail"]


def test_a_pending_session_whose_path_is_taken_is_named(repo, worktrees):
    wt = worktrees(repo, "blocked")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "blocked", cwd=repo)
    wt.mkdir()
    (wt / "stray.txt").write_text("someone else's\n")
    [check] = [c for c in _checks(repo, 1) if c["name"] == "session"]
    assert f"{wt} exists and is not its worktree" in check["detail"]


def test_nested_sessions_are_a_note(repo, worktrees):
    outer = worktrees(repo, "outer")
    inner = outer / "sub"
    git("worktree", "add", "-q", "-b", "inner", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "inner", cwd=repo)
    [check] = [c for c in _checks(repo, 0) if c["name"] == "nested"]
    assert check == {"name": "nested", "ok": None,
                     "detail": "inner lives inside outer: preserved inner first, restored "
                               "outer first"}


def test_a_lost_database_is_named_and_restore_says_how_to_rebuild_it(repo, worktrees):
    wt = worktrees(repo, "lost")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "lost", cwd=repo)
    # The whole data dir is gone (a new machine user, a wiped ~/.ao): only the
    # repository still knows, through its preserve refs.
    shutil.rmtree(os.environ["AO_DATA_DIR"])
    res = ao("ao-restore", cwd=repo)
    common = os.path.realpath(repo / ".git")
    assert res.stderr == ("warning: the database is new ("
                          f"{os.environ['AO_DATA_DIR']}/git-ao.db did not exist): if sessions "
                          "were saved before the data dir was lost, git ao doctor --recover "
                          "finds their preserve refs (it searches the home directory; "
                          "-C REPO or DIR names others)\n"
                          "nothing to restore: no pending sessions\n"
                          "hint: the database holds no session, but preserve refs exist in "
                          f"{common}: rebuild the records with git ao doctor --recover "
                          f"-C {os.path.dirname(common)}\n")
    # Said also with -q (the boot runs so); a second run finds the database made.
    res = ao("ao-restore", "-q", cwd=repo)
    assert "warning: the database is new" not in res.stderr
    shutil.rmtree(os.environ["AO_DATA_DIR"])
    res = ao("ao-restore", "-q", cwd=repo)
    assert res.stderr.startswith("warning: the database is new"), res.stderr
    [check] = [c for c in _checks(repo, 1) if c["name"] == "database" and not c["ok"]]
    assert "git ao doctor --recover" in check["detail"]


def _tree_of_data_dir(repo):
    """Every file of the data dir with its bytes, and the repository's refs: what a
    doctor run must leave as it found them."""
    from tests.support import db_path
    return _files_of(os.path.dirname(db_path())), git("for-each-ref", cwd=repo)


def test_doctor_names_each_live_session_preserve_would_refuse_and_writes_nothing(
        repo, worktrees):
    # The admin dir of a worktree deleted by hand: git ao-preserve --all refuses it
    # every time, so the next shutdown would not save it. Doctor runs preserve's own
    # checks (nothing captured, nothing written) and says why and what fixes it.
    broken = worktrees(repo, "broken")
    worktrees(repo, "fine")
    (broken / "work.txt").write_text("only here\n")
    shutil.rmtree(repo / ".git" / "worktrees" / "broken")
    refused = ao("ao-preserve", "--all", "-n", cwd=repo, rc=1).stdout
    before = _tree_of_data_dir(repo)
    res = ao("ao", "doctor", "--json", cwd=repo, rc=1)
    assert _tree_of_data_dir(repo) == before
    bad = [c for c in json.loads(res.stdout)["checks"] if c["name"] == "preserve"]
    assert [c["ok"] for c in bad] == [False], bad
    detail = bad[0]["detail"]
    assert detail.startswith("broken: git ao-preserve refuses it, so a shutdown would not "
                             "save it: "), detail
    why = detail.split("save it: ", 1)[1]
    assert f"preserve\trefused\tbroken\t{why}\n" in refused  # preserve's own words
    assert f"git worktree add {broken} broken" in why
    # the fix it names works: doctor is quiet, and preserve saves the work
    old = f"{broken}.old"
    os.rename(broken, old)
    git("worktree", "add", "-q", broken, "broken", cwd=repo)
    shutil.copy(os.path.join(old, "work.txt"), broken / "work.txt")
    checks = json.loads(ao("ao", "doctor", "--json", cwd=repo).stdout)["checks"]
    assert not [c for c in checks if c["name"] == "preserve"]
    ao("ao-preserve", "--all", cwd=repo)
    assert "work.txt" in git("stash", "show", "--include-untracked", "--name-only",
                             "refs/ao/preserved/broken", cwd=repo)


def _files_of(top):
    """Every file under `top` with its bytes."""
    out = {}
    for root, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[path] = fh.read()
    return out


def test_doctor_names_each_state_preserve_refuses_in_one_line_and_writes_nothing(
        repo, make_repo, worktrees):
    """Each state git ao-preserve refuses (an operation in progress, unmerged paths,
    an unborn branch, a nested repository, a submodule's work) keeps a live session
    from being saved at shutdown: doctor names each session once with preserve's
    own reason, exits 1, and writes nothing (the data dir, the git dirs)."""
    from tests.test_hard_states import _with_submodule
    sub = _with_submodule(repo, make_repo, worktrees, "sub")
    (sub / "lib" / "README.md").write_text("edited inside the submodule\n")
    worktrees(repo, "fine")
    stopped = {}
    for sid in ("rebase", "merge"):
        stopped[sid] = wt = worktrees(repo, sid)
        (wt / "README.md").write_text(f"{sid}'s\n")
        git("commit", "-qam", sid, cwd=wt)
    (repo / "README.md").write_text("main's\n")
    git("commit", "-qam", "main's", cwd=repo)
    for sid, wt in stopped.items():  # each stops on the conflict in README.md
        git(sid, "main", cwd=wt, check=False)
    unborn = worktrees(repo, "unborn")
    git("switch", "-q", "--orphan", "fresh", cwd=unborn)
    nested = worktrees(repo, "nested")
    git("init", "-q", "inner", cwd=nested)
    refused = ao("ao-preserve", "--all", "-n", cwd=repo, rc=1).stdout
    before = _tree_of_data_dir(repo), _files_of(repo / ".git"), _files_of(sub / "lib")
    res = ao("ao", "doctor", "--json", cwd=repo, rc=1)
    assert (_tree_of_data_dir(repo), _files_of(repo / ".git"), _files_of(sub / "lib")) == before
    lines = [c["detail"] for c in json.loads(res.stdout)["checks"] if c["name"] == "preserve"]
    named = sorted(d.split(":", 1)[0] for d in lines)
    assert named == ["merge", "nested", "rebase", "sub", "unborn"], lines
    for detail in lines:
        sid, why = detail.split(": git ao-preserve refuses it, so a shutdown would not save "
                                "it: ", 1)
        assert f"preserve\trefused\t{sid}\t{why}\n" in refused, (detail, refused)
    assert "preserve\tok\tfine\t" in refused


def test_doctor_says_a_worktree_kept_with_its_work_saved_is_saved_not_refused(repo, worktrees):
    """A file that would not come back byte for byte (CRLF under core.autocrlf=input)
    or one a required filter fails on: git ao-preserve saves the rest as a
    checkpoint and keeps the worktree. doctor says that, as a note, in preserve's
    own reason, not that a shutdown would not save the session."""
    git("config", "core.autocrlf", "input", cwd=repo)
    git("config", "filter.boom.clean", "false", cwd=repo)
    git("config", "filter.boom.smudge", "cat", cwd=repo)
    git("config", "filter.boom.required", "true", cwd=repo)
    crlf = worktrees(repo, "crlf")
    (crlf / "README.md").write_bytes(b"hello\r\n")
    boom = worktrees(repo, "boom")
    (boom / ".gitattributes").write_text("*.dat filter=boom\n")
    (boom / "secret.dat").write_text("kept as it is\n")
    res = ao("ao", "doctor", "--json", cwd=repo, rc=None)
    checks = [c for c in json.loads(res.stdout)["checks"] if c["name"] == "preserve"]
    assert sorted(c["detail"].split(":", 1)[0] for c in checks) == ["boom", "crlf"], checks
    for c in checks:
        assert c["ok"] is None, c
        assert "git ao-preserve saves its work as a checkpoint but keeps the worktree at a " \
            "shutdown: " in c["detail"] and "would not save" not in c["detail"], c
    real = ao("ao-preserve", "--all", cwd=repo, rc=None).stdout
    for sid in ("crlf", "boom"):
        assert f"{sid}\t" in real and "worktree kept" in real, real


def test_doctor_names_a_fifo_a_socket_and_a_stale_index_lock_with_their_fix(repo, worktrees):
    """What preserve's removal proof keeps a worktree for (a FIFO, a socket, a stale
    index.lock in its admin dir) is judged by doctor too, in preserve's words with
    the fix; the fix it names (ignore the FIFO and socket) lets preserve remove it."""
    import socket
    pipes = worktrees(repo, "pipes")
    os.mkfifo(pipes / "myfifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(pipes / "sock"))
    worktrees(repo, "locked")
    (repo / ".git" / "worktrees" / "locked" / "index.lock").write_text("")
    dry = ao("ao-preserve", "--all", "-n", cwd=repo, rc=1).stdout
    res = ao("ao", "doctor", "--json", cwd=repo, rc=None)
    lines = {c["detail"].split(":", 1)[0]: c for c in json.loads(res.stdout)["checks"]
             if c["name"] == "preserve"}
    assert sorted(lines) == ["locked", "pipes"], lines
    for sid, c in lines.items():
        why = c["detail"].split("keeps the worktree at a shutdown: ", 1)[1]
        assert f"preserve\trefused\t{sid}\twould save (" in dry and why in dry, (why, dry)
    # (two paths for one reason: named once, as the run says it)
    assert "2 paths in" in lines["pipes"]["detail"], lines["pipes"]["detail"]
    assert "(myfifo, sock), each a FIFO, socket or device" in lines["pipes"]["detail"]
    assert "info/exclude" in lines["pipes"]["detail"]
    assert "index.lock" in lines["locked"]["detail"] and "rm " in lines["locked"]["detail"]
    with open(repo / ".git" / "info" / "exclude", "a") as fh:
        fh.write("/myfifo\n/sock\n")
    os.unlink(repo / ".git" / "worktrees" / "locked" / "index.lock")
    checks = json.loads(ao("ao", "doctor", "--json", cwd=repo).stdout)["checks"]
    assert not [c for c in checks if c["name"] == "preserve"], checks
    ao("ao-preserve", "pipes", cwd=repo)
    assert not pipes.exists()
    sock.close()


def test_doctor_and_preserve_name_every_untracked_nested_repository_with_its_fix(
        repo, worktrees):
    """Preserve refuses every untracked nested repository, and says so of each, with
    the fix (move it away, or ignore it); doctor says the same."""
    wt = worktrees(repo, "nest")
    git("init", "-q", "nested-clone", cwd=wt)
    git("init", "-q", "scratch", cwd=wt)
    dry = ao("ao-preserve", "nest", "-n", cwd=repo, rc=1).stdout
    real = ao("ao-preserve", "nest", cwd=repo, rc=1).stdout
    for out in (dry, real):
        assert "nested-clone/" in out and "scratch/" in out, out
        assert "info/exclude" in out and "move it out of the worktree" in out, out
    checks = json.loads(ao("ao", "doctor", "--json", cwd=repo, rc=1).stdout)["checks"]
    [c] = [c for c in checks if c["name"] == "preserve"]
    assert "nested-clone/" in c["detail"] and "scratch/" in c["detail"], c
    with open(repo / ".git" / "info" / "exclude", "a") as fh:
        fh.write("/nested-clone/\n/scratch/\n")
    ao("ao-preserve", "nest", cwd=repo)
    assert not wt.exists()
