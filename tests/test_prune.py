"""Prune: cleans without ever losing work."""

import json
import os
import re
import shutil
import time

import pytest

from tests.support import add_submodule, ao, ao_refs, git, states


def test_prune_keeps_pending_work_and_cleans_the_rest(repo, make_repo, worktrees):
    wt = worktrees(repo, "keep")
    (wt / "f").write_text("x")
    done = worktrees(repo, "done")
    ao("ao-preserve", "keep", cwd=repo)
    ao("ao", "kill", "done", cwd=repo)
    other = make_repo()
    worktrees(other, "vanish")
    shutil.rmtree(other)
    leftover = os.path.join(repo, ".git", "git-ao-index.999999999.dead")
    open(leftover, "w").close()
    # A verification dir of a killed preserve, and one of a process still running.
    dead_dir = os.path.join(repo, ".git", "git-ao-verify.999999999.dead")
    os.makedirs(os.path.join(dead_dir, "src"))
    open(os.path.join(dead_dir, "src", "app.py"), "w").close()
    live_dir = os.path.join(repo, ".git", f"git-ao-verify.{os.getpid()}.live")
    os.mkdir(live_dir)

    dry = ao("ao-prune", "-n", cwd=repo)
    assert "would" in dry.stdout and os.path.exists(leftover) and os.path.isdir(dead_dir)
    assert {s["id"] for s in json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]} \
        == {"keep", "done", "vanish"}

    res = ao("ao-prune", "--expire=now", cwd=repo)
    ids = {s["id"] for s in json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]}
    # A live session's record stays though its repository is gone (it may have
    # moved: git ao add --id points it there); only the user drops it.
    assert ids == {"keep", "vanish"}
    assert "prune-record\tnothing\tvanish\tkept the record" in res.stdout, res.stdout
    ao("ao", "forget", "vanish", cwd=repo)
    assert not os.path.exists(leftover) and not os.path.exists(dead_dir)
    assert os.path.isdir(live_dir)
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/keep", cwd=repo).strip()
    assert not done.exists()
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    assert [n.split(".")[0] for n in os.listdir(trash)] == ["keep"]  # still pending
    ao("ao-restore", cwd=repo)
    assert (wt / "f").read_text() == "x"


def test_prune_force_named_session(repo, worktrees):
    wt = worktrees(repo, "forced")
    (wt / "f").write_text("x")
    ao("ao-preserve", "forced", cwd=repo)
    ao("ao-prune", "forced", cwd=repo, rc=129)
    res = ao("ao-prune", "--force", "forced", cwd=repo)
    assert "refs/ao/preserved/forced" in res.stdout
    assert ao_refs(repo, "refs/ao") == ""


def test_prune_expire_parses_like_git(repo):
    ao("ao-prune", "--expire", "2.weeks.ago", cwd=repo)
    ao("ao-prune", "--expire", "never", cwd=repo)
    res = ao("ao-prune", "--expire", "garbage", cwd=repo, rc=129)
    assert "malformed expiration date 'garbage'" in res.stderr


def test_checkpoint_ref_deleted_once_work_is_committed(repo, worktrees):
    wt = worktrees(repo, "cp")
    (wt / "README.md").write_text("new text\n")
    git("add", ".", cwd=wt)
    ao("ao-preserve", "--keep-worktree", "cp", cwd=repo)
    (wt / "README.md").write_text("moved on\n")
    kept = ao("ao-prune", cwd=repo)
    assert ao_refs(repo, "refs/ao").strip()  # work only in the ref: kept
    assert "kept refs/ao/preserved/cp" in kept.stdout  # and said so
    git("checkout", "--", "README.md", cwd=wt)
    git("commit", "-qm", "done", cwd=wt)
    res = ao("ao-prune", cwd=repo)
    assert "committed on cp" in res.stdout
    assert ao_refs(repo, "refs/ao") == ""


@pytest.mark.parametrize("kind", ["crlf", "mixed", "nested", "worktree", "submodule",
                                  "bisect", "changed"])
def test_a_kept_checkpoint_ref_names_why_the_worktree_is_no_proof(repo, worktrees, tmp_path,
                                                                  kind):
    # Nothing changed since the checkpoint, yet prune kept its ref saying "its work is
    # neither on the branch nor in the worktree": the proof's capture, which must
    # give the worktree back exactly, refused what the checkpoint saved otherwise
    # or left out. Only a worktree that changed since is said so.
    wt = worktrees(repo, "agent")
    (wt / "mine.txt").write_text("my work\n")
    if kind in ("crlf", "mixed"):
        git("config", "core.autocrlf", "true", cwd=repo)
        (wt / "win.txt").write_bytes(b"one\r\ntwo\r\n" if kind == "crlf" else b"one\r\ntwo\n")
        want = "would not come back from it byte for byte"
    elif kind == "nested":
        git("init", "-q", str(wt / "dep"), cwd=wt)
        want = f"'{wt / 'dep'}/': nested repository or worktree, in no save"
    elif kind == "worktree":
        git("worktree", "add", "-q", "-b", "inner", str(wt / "inner"), cwd=repo)
        want = f"'{wt / 'inner'}/': nested repository or worktree, in no save"
    elif kind == "submodule":
        add_submodule(wt, tmp_path / "lib-src")
        git("commit", "-qm", "submodule", cwd=wt)
        (wt / "lib" / "l.txt").write_text("edited inside\n")
        want = f"submodule '{wt / 'lib'}' has uncommitted changes, which no save holds"
    else:
        want = "its work is neither on the branch nor in the worktree"
    ao("ao", "checkpoint", "agent", cwd=repo)
    if kind == "bisect":
        git("bisect", "start", cwd=wt)
        want = "the worktree cannot be compared with it: a bisect is in progress"
    elif kind == "changed":
        (wt / "mine.txt").write_text("moved on\n")
    ref = "kept refs/ao/preserved/agent ("
    for extra in (["-n"], []):
        out = ao("ao-prune", *extra, cwd=repo).stdout
        line = next(ln for ln in out.splitlines() if ref in ln)
        assert want in line, (extra, line)
        if kind != "changed":
            assert "neither on the branch nor in the worktree" not in line, line
            assert "as a checkpoint saves it, but not proven there exactly" in line \
                or kind == "bisect", line
    assert ao_refs(repo, "refs/ao/preserved").strip()


@pytest.mark.parametrize("staged", [False, True], ids=["unstaged", "staged"])
def test_checkpoint_of_edits_committed_later_is_pruned_after_a_clean_preserve(
        repo, worktrees, staged):
    """A checkpoint of unstaged edits, the edits committed, then a clean preserve: the
    row no longer names the ref, and its work is on the branch, so prune deletes it.
    A staged version that differs from what was committed stays (it is nowhere else)."""
    wt = worktrees(repo, "late")
    (wt / "src" / "app.py").write_text("print('v2')\n")
    if staged:
        git("add", "src/app.py", cwd=wt)
        (wt / "src" / "app.py").write_text("print('v3')\n")
    ao("ao-preserve", "--keep-worktree", "late", cwd=repo)
    git("commit", "-qam", "commit the edits", cwd=wt)
    ao("ao-preserve", "late", cwd=repo)
    ao("ao-restore", cwd=repo)
    res = ao("ao-prune", cwd=repo)
    refs = ao_refs(repo, "refs/ao")
    if staged:
        assert "kept refs/ao/preserved/late" in res.stdout and refs.strip()
    else:
        assert "committed on late" in res.stdout and refs == ""


def test_prune_waits_for_the_session_lock(repo, worktrees):
    # prune decides about a session only while holding that session's lock, so a
    # preserve or restore in flight never has its record pulled away.
    import subprocess
    import time

    from git_ao.store.database import Store
    from git_ao.store.locks import session_lock

    worktrees(repo, "held")
    ao("ao", "kill", "held", cwd=repo)
    store = Store()
    with session_lock(store.dir, "held"):
        proc = subprocess.Popen(["git", "ao-prune"], cwd=repo, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        time.sleep(1.0)
        assert proc.poll() is None
        assert store.get("held") is not None
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert store.get("held") is None


def test_prune_keeps_trash_of_pending_sessions_and_stops_on_unknown_ids(repo, worktrees):
    wt = worktrees(repo, "pend")
    (wt / ".env").write_text("SECRET=1\n")
    (wt / ".gitignore").write_text(".env\n")
    ao("ao-preserve", "pend", cwd=repo)
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    kept = os.listdir(trash)
    assert len(kept) == 1
    # a typo in a forced id is refused, and nothing else is pruned
    res = ao("ao-prune", "--force", "typo", cwd=repo, rc=1)
    assert "refused\ttypo\tno session 'typo'" in res.stdout
    ao("ao-prune", cwd=repo)
    assert os.listdir(trash) == kept
    assert os.path.exists(os.path.join(trash, kept[0], "worktree", ".env"))
    ao("ao-restore", cwd=repo)
    ao("ao-prune", cwd=repo)
    assert os.listdir(trash) == []


def test_a_trash_entry_that_cannot_be_deleted_is_not_reported_deleted(repo, worktrees):
    """An entry prune cannot remove (here: made immutable) is reported as failed,
    never as deleted."""
    import shutil
    import subprocess

    if os.geteuid() != 0 or not shutil.which("chattr"):
        import pytest
        pytest.skip("needs root and chattr")
    wt = worktrees(repo, "stuck")
    ao("ao", "kill", "stuck", cwd=repo)
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    [entry] = os.listdir(trash)
    target = os.path.join(trash, entry, "worktree", "README.md")
    if subprocess.run(["chattr", "+i", target], check=False, capture_output=True).returncode:
        import pytest
        pytest.skip("this file system has no immutable flag")
    try:
        res = ao("ao-prune", "--expire=now", cwd=repo, rc=1)
        assert "could not delete all of" in res.stdout and "deleted" not in res.stdout.split(
            "could not delete")[0].split("\t")[-1]
    finally:
        subprocess.run(["chattr", "-i", target], check=False)
    assert not wt.exists()


def _age(entry_dir, days):
    """Make a trash entry `days` old, as entry.json records its time."""
    meta_path = os.path.join(entry_dir, "entry.json")
    with open(meta_path) as fh:
        meta = json.load(fh)
    meta["created_ns"] = time.time_ns() - int(days * 86400 * 1e9)
    with open(meta_path, "w") as fh:
        json.dump(meta, fh)


def test_the_trash_has_a_grace_period_and_a_deleted_entry_names_its_ignored_files(
        repo, worktrees):
    """By default the trash keeps an entry two weeks (git's gc.pruneExpire): the
    prune run right after a restore does not take the only copy of an ignored
    file, and an entry deleted names the ignored files that went with it."""
    wt = worktrees(repo, "old")
    (wt / "secret.log").write_text("TOKEN=1\n")
    (wt / "build").mkdir()
    (wt / "build" / "x.o").write_text("obj\n")
    ao("ao", "kill", "old", cwd=repo)
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    [name] = os.listdir(trash)
    entry = os.path.join(trash, name)
    res = ao("ao-prune", cwd=repo)
    [line] = [ln for ln in res.stdout.splitlines() if ln.startswith("prune-trash")]
    assert line.startswith(f"prune-trash\tnothing\told\tkept {entry} (")
    assert line.endswith("): newer than 2.weeks.ago; --expire=now deletes it")
    _age(entry, 13)
    ao("ao-prune", cwd=repo)
    assert os.path.isdir(entry)
    _age(entry, 15)
    res = ao("ao-prune", "-n", cwd=repo)
    assert re.search(r"^prune-trash\tok\told\twould delete .*\); it held 2 ignored "
                     r"path\(s\): build/, secret\.log$", res.stdout, re.MULTILINE), res.stdout
    res = ao("ao-prune", "--json", cwd=repo)
    [doc] = [r for r in json.loads(res.stdout)["results"] if r["action"] == "prune-trash"]
    assert doc["ignored"] == ["build/", "secret.log"]
    assert doc["message"].endswith("; it held 2 ignored path(s), now gone: build/, secret.log")
    assert not os.path.exists(entry)
    assert "ignored='build/ secret.log'" in ao("ao", "log", cwd=repo).stdout


def test_the_grace_period_is_a_setting(repo, worktrees):
    worktrees(repo, "set")
    ao("ao", "kill", "set", cwd=repo)
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    [name] = os.listdir(trash)
    _age(os.path.join(trash, name), 3)
    ao("ao", "config", "set", "prune.expire", "1.week.ago", cwd=repo)
    assert "newer than 1.week.ago" in ao("ao-prune", cwd=repo).stdout
    ao("ao", "config", "set", "prune.expire", "2.days.ago", cwd=repo)
    assert "\tok\tset\tdeleted" in ao("ao-prune", cwd=repo).stdout
    assert os.listdir(trash) == []


def test_prune_keeps_a_pending_record_while_its_repository_is_missing(make_repo, worktrees,
                                                                       tmp_path):
    """A moved repository (or an unmounted disk) keeps the record of a pending save:
    only the record says where the save is. A terminated session's record goes."""
    r3 = make_repo()
    wt = worktrees(r3, "r3w")
    (wt / "f").write_text("saved\n")
    (wt / "gone-ita").write_text("x\n")
    git("add", "-N", "gone-ita", cwd=wt)
    os.unlink(wt / "gone-ita")  # in no tree: only the record's private config has it
    before = git("status", "--porcelain", cwd=wt)
    worktrees(r3, "r3done")
    ao("ao-preserve", "r3w", cwd=r3)
    ao("ao", "kill", "r3done", cwd=r3)
    moved = tmp_path / "r3.moved"
    shutil.move(str(r3), moved)
    res = ao("ao-prune", "--expire=now", cwd=tmp_path)
    common = os.path.join(str(r3), ".git")
    assert f"kept the record: repository {common} is missing and the session is pending" \
        in res.stdout
    assert "git ao doctor --recover -C NEWPATH" in res.stdout
    assert "git ao forget --force r3w" in res.stdout
    assert "r3w dropped record" not in res.stdout and "r3done" in res.stdout
    ids = {s["id"] for s in json.loads(ao("ao", "list", "--all", "--json",
                                          cwd=tmp_path).stdout)["sessions"]}
    assert ids == {"r3w"}
    doc = ao("ao", "doctor", cwd=tmp_path, rc=None)
    assert "pending session(s) r3w keep their record" in doc.stdout + doc.stderr
    assert "git ao-prune drops it)" not in doc.stdout + doc.stderr
    # Recovering where the repository is now re-points the record; restore works.
    rec = ao("ao", "doctor", "--recover", "-C", str(moved), cwd=tmp_path)
    assert "recovered as pending" in rec.stdout
    (s,) = json.loads(ao("ao", "list", "--all", "--json", cwd=tmp_path).stdout)["sessions"]
    assert s["id"] == "r3w" and os.path.realpath(s["repo"]).startswith(os.path.realpath(moved))
    from tests.trash_helpers import checkout_path_only
    checkout_path_only()  # rebuilt from the commit: the index comes from the record
    ao("ao-restore", "r3w", cwd=moved)
    assert git("status", "--porcelain", cwd=wt) == before  # the private config came along


def test_a_forced_prune_says_in_one_line_what_goes_and_what_stays(repo, worktrees):
    """-n and the real run give the same line: the refs that exist, the record and
    the trash entries, joined as a list; never "no ref" in that list."""
    wt = worktrees(repo, "chk")
    (wt / "f").write_text("x")
    ao("ao", "checkpoint", "chk", cwd=repo)
    git("update-ref", "-d", "refs/ao/preserved/chk", cwd=repo)  # only the history left
    hist = git("rev-parse", "refs/ao/history/chk", cwd=repo).strip()
    dry = ao("ao-prune", "--force", "chk", "-n", cwd=repo).stdout
    assert f"would delete refs/ao/history/chk (was {hist}) and the record" in dry, dry
    assert "no ref" not in dry
    wt2 = worktrees(repo, "gone")
    (wt2 / "f").write_text("y")
    ao("ao-preserve", "gone", cwd=repo)
    ref = git("rev-parse", "refs/ao/preserved/gone", cwd=repo).strip()
    [entry] = [e for e in os.listdir(os.path.join(os.environ["AO_DATA_DIR"], "trash"))
               if e.startswith("gone")]
    dry = ao("ao-prune", "--force", "gone", "-n", cwd=repo).stdout
    line = re.search(r"^.*would delete refs/ao/preserved/gone.*$", dry, re.MULTILINE)
    assert line and re.search(rf"would delete refs/ao/preserved/gone \(was {ref}\), "
                              r"(refs/ao/history/gone \(was \w+\), )?the record and 1 trash "
                              rf"entry \([^)]*{re.escape(entry)}\)$", line.group(0)), dry
    real = ao("ao-prune", "--force", "gone", cwd=repo).stdout
    assert line.group(0).replace("would delete", "deleted") in real, real


def test_a_pending_sessions_older_trash_entry_says_which_one_restore_uses(repo, worktrees):
    """Restore puts back only the newest entry of a pending session: that one is
    kept for it; an older one is kept for its own reason (here the grace period),
    named with the entry restore uses instead."""
    wt = worktrees(repo, "twice")
    (wt / "f").write_text("two\n")
    ao("ao-preserve", "twice", cwd=repo)
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    [new] = [os.path.join(trash, n) for n in os.listdir(trash)]
    # An older entry of the same session, as an earlier run that left one behind.
    stamp = int(new.rsplit(".", 1)[1]) - 10**9
    old = f"{new.rsplit('.', 1)[0]}.{stamp}"
    shutil.copytree(new, old, symlinks=True)
    _age(old, 1)
    lines = [ln for ln in ao("ao-prune", "-n", cwd=repo).stdout.splitlines()
             if ln.startswith("prune-trash")]
    [used] = [ln for ln in lines if f"kept {new} (" in ln]
    assert used.endswith("): its session is pending: restore puts this entry back"), lines
    [older] = [ln for ln in lines if f"kept {old} (" in ln]
    assert older.endswith(f"): restore of its pending session uses {new}, not this entry; "
                          "newer than 2.weeks.ago; --expire=now deletes it"), lines
    ao("ao-prune", "--expire=now", cwd=repo)
    assert os.listdir(trash) == [os.path.basename(new)]
    ao("ao-restore", "twice", cwd=repo)
    assert (wt / "f").read_text() == "two\n"


def test_a_forced_prune_never_says_it_deleted_an_entry_it_could_not(repo, worktrees):
    import subprocess
    wt = worktrees(repo, "stuck")
    (wt / "f").write_text("y")
    ao("ao-preserve", "stuck", cwd=repo)
    root = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    [entry] = [os.path.join(root, e) for e in os.listdir(root) if e.startswith("stuck")]
    pinned = os.path.join(entry, "worktree", "f")
    res = subprocess.run(["chattr", "+i", pinned], capture_output=True, check=False)
    if res.returncode != 0:
        pytest.skip("no immutable files here (chattr +i)")
    try:
        out = ao("ao-prune", "--force", "stuck", cwd=repo).stdout
        assert os.path.exists(pinned)
        assert "trash entr" in out and f"kept 1 trash entry ({entry})" in out, out
        assert "deleted refs/ao/preserved/stuck" in out and "1 trash entry" not in \
            out.split("; kept")[0], out
    finally:
        subprocess.run(["chattr", "-i", pinned], capture_output=True, check=False)


def test_a_live_worktree_on_a_disk_not_mounted_keeps_its_registration(repo, worktrees,
                                                                       tmp_path):
    import subprocess

    from tests.support import bind_mount
    store, disk = tmp_path / "store", tmp_path / "disk"
    store.mkdir()
    with bind_mount(store, disk):
        wt = disk / "away"
        git("worktree", "add", "-q", "-b", "away", wt, cwd=repo)
        ao("ao", "add", wt, "--id", "away", cwd=repo)
        (wt / "staged.txt").write_text("staged\n")
        git("add", "staged.txt", cwd=wt)
    assert not wt.exists()  # the disk is not mounted now
    other = worktrees(repo, "other")
    (other / "f").write_text("x\n")
    ao("ao-preserve", "--all", cwd=repo, rc=None)  # its prune runs in this repository
    ao("ao-prune", cwd=repo, rc=None)
    common = git("rev-parse", "--git-common-dir", cwd=repo).strip()
    admin = os.path.join(repo, common, "worktrees", "away")
    assert os.path.isfile(os.path.join(admin, "index"))
    assert not os.path.exists(os.path.join(admin, "locked"))  # the prune's lock is gone
    with bind_mount(store, disk):
        st = subprocess.run(["git", "status", "--porcelain"], cwd=wt, capture_output=True,
                            text=True, check=True)
        assert "A  staged.txt" in st.stdout


def test_a_terminated_session_whose_ref_holds_work_keeps_its_record(repo, worktrees):
    # Killed after a checkpoint whose work the agent then removed: the ref holds
    # the only copy. Its record stays (dry run and real run alike), so no command
    # names an unrecorded ref and no recovery makes the killed session pending.
    import subprocess
    wt = worktrees(repo, "k")
    (wt / "new.txt").write_text("work\n")
    ao("ao", "checkpoint", "k", cwd=repo)
    (wt / "new.txt").unlink()
    ao("ao", "kill", "k", cwd=repo)
    lines = [ao("ao-prune", *extra, cwd=repo).stdout for extra in (["-n"], [])]
    for out in lines:
        assert "kept the record: refs/ao/preserved/k holds work" in out, out
        assert "kept refs/ao/preserved/k" in out, out
    res = subprocess.run(["git", "ao", "list"], cwd=repo, capture_output=True, text=True,
                         check=True)
    assert "no record knows" not in res.stderr, res.stderr
    assert states(repo) == {"k": "terminated"}
    ao("ao-prune", "--force", "k", cwd=repo)
    assert git("for-each-ref", "refs/ao/preserved/", cwd=repo) == ""


def test_a_dry_run_keeps_the_registration_of_a_live_session_whose_directory_is_missing(
        repo, worktrees):
    # Its disk not mounted yet: the real run locks the registration for git's prune
    # and keeps it; the dry run, which locks nothing, says the same.
    wt = worktrees(repo, "away")
    moved = wt.parent / "away.elsewhere"
    wt.rename(moved)
    try:
        for extra in (["-n"], []):
            out = ao("ao-prune", *extra, cwd=repo).stdout
            assert "worktrees/away" not in out, (extra, out)
        assert os.path.isdir(repo / ".git" / "worktrees" / "away")
    finally:
        moved.rename(wt)
    assert states(repo) == {"away": "live"}


def test_a_dry_run_says_which_registration_git_would_remove(repo, worktrees):
    """git worktree prune's own line ("Removing worktrees/x: ...") is the real run's:
    the dry run says it would remove that registration, naming it as git does."""
    worktrees(repo, "kept")  # a session makes the repository one prune looks at
    gone = worktrees(repo, "gone", register=False)
    shutil.rmtree(gone)
    dry = ao("ao-prune", "-n", cwd=repo).stdout
    assert "prune-worktree\tok\t-\twould remove worktrees/gone: " in dry, dry
    assert "Removing" not in dry
    assert (repo / ".git" / "worktrees" / "gone").exists()
    real = ao("ao-prune", cwd=repo).stdout
    assert "Removing worktrees/gone: " in real, real
    assert not (repo / ".git" / "worktrees" / "gone").exists()
