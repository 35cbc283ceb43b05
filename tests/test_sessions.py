"""Registration, kill, forget and the errors every bad input gets."""

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support import ao, dirty, git


def test_add_validates_through_git(repo, tmp_path, worktrees):
    # A main worktree or a bare repository is a fact about the path, not bad
    # usage: exit 1, as a refusal, not 129.
    for where in (repo, repo / "src"):
        res = ao("ao", "add", cwd=where, rc=1)
        assert res.stderr == (f"error: '{repo}' is the main worktree of its repository; "
                              "sessions live in linked worktrees (git worktree add)\n")
    ao("ao", "add", repo, cwd=tmp_path, rc=1)
    plain = tmp_path / "plain"
    plain.mkdir()
    # the path given is named, not git's `.git`
    for given in (plain, "plain"):
        res = ao("ao", "add", given, cwd=tmp_path, rc=128)
        assert res.stderr == ("fatal: not a git repository (or any of the parent "
                              f"directories): '{given}'\n")
    res = ao("ao", "list", "--repo", plain, cwd=repo, rc=128)
    assert f"'{plain}'" in res.stderr
    # in the directory itself, git's own words
    res = ao("ao", "add", cwd=plain, rc=128)
    assert res.stderr == "fatal: not a git repository (or any of the parent directories): .git\n"
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", bare, cwd=tmp_path)
    res = ao("ao", "add", bare, cwd=repo, rc=1)
    assert res.stderr == f"error: '{bare}' is a bare repository, not a linked worktree\n"
    wt = worktrees(repo, "one")
    res = ao("ao", "add", wt, "--id", "two", cwd=repo, rc=1)
    assert res.stderr == f"error: '{wt}' already belongs to session 'one' (live)\n"
    assert res.stdout == ""


def test_add_of_a_worktree_already_registered_is_idempotent(repo, worktrees):
    wt = worktrees(repo, "one", register=False)
    ao("ao", "add", wt, "--harness", "codex", "--agent-session-id", "7f3a", "--prompt", "p",
       cwd=repo)
    before = ao("ao", "list", "--json", cwd=repo).stdout
    for again in ((), ("--id", "one"), ("--harness", "codex", "--kind", "worker"),
                  ("--agent-session-id", "7f3a", "--prompt", "p")):
        res = ao("ao", "add", wt, *again, cwd=repo)
        assert res.stdout == f"add\tnothing\tone\talready registered as worker at {wt}\n"
        res = ao("ao", "add", *again, cwd=wt)  # the current worktree, the same
        assert "already registered" in res.stdout
    assert ao("ao", "list", "--json", cwd=repo).stdout == before
    # a fact that is not the recorded one is refused, naming the recorded one
    # (never the prompt's text)
    res = ao("ao", "add", wt, "--harness", "aider", "--kind", "orchestrator", "--prompt",
             "secret", cwd=repo, rc=1)
    assert res.stderr == (f"error: '{wt}' already belongs to session 'one' (live) with "
                          "kind 'worker', not 'orchestrator', harness 'codex', not 'aider', "
                          "another prompt; 'git ao forget one' first to register it again\n")
    assert ao("ao", "list", "--json", cwd=repo).stdout == before


def test_add_all_registers_every_linked_worktree_of_the_repository(repo, worktrees, tmp_path,
                                                                   make_repo):
    known = worktrees(repo, "known", harness="codex")
    loose = [worktrees(repo, n, register=False) for n in ("a", "b")]
    gone = worktrees(repo, "gone", register=False)
    shutil.rmtree(gone)  # prunable: its directory is gone
    other = make_repo()
    git("worktree", "add", "-q", "-b", "x", tmp_path / "x", cwd=other)
    res = ao("ao", "add", "--all", "-n", cwd=repo)
    assert sorted(res.stdout.splitlines()) == [
        f"add\tnothing\tknown\talready registered as worker at {known}",
        *(f"add\tok\t{p.name}\twould register worker at {p}" for p in loose)]
    # A would-be session has no creation time (null, not 1970); a known one has its own.
    got = {r["id"]: r["created_at"] for r in json.loads(
        ao("ao", "add", "--all", "-n", "--json", cwd=repo).stdout)["results"]}
    assert got["a"] is None and got["b"] is None and got["known"] > "2000"
    assert [r["id"] for r in json.loads(ao("ao", "list", "--json", cwd=repo).stdout)
            ["sessions"]] == ["known"]
    res = ao("ao", "add", "--all", "--harness", "aider", cwd=loose[0])
    assert sorted(re.findall(r"^add\t(\w+)\t", res.stdout, re.MULTILINE)) == ["nothing", "ok", "ok"]
    rows = {r["id"]: r for r in json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]}
    assert sorted(rows) == ["a", "b", "known"]
    assert rows["known"]["harness"] == "codex" and rows["a"]["harness"] == "aider"
    assert "x" not in rows
    # again: nothing to do, exit 0
    res = ao("ao", "add", "--all", cwd=repo)
    assert set(re.findall(r"^add\t(\w+)\t", res.stdout, re.MULTILINE)) == {"nothing"}
    for extra in (("--id", "z"), (str(loose[0]),), ("--prompt", "p")):
        res = ao("ao", "add", "--all", *extra, cwd=repo, rc=129)
        assert res.stderr.startswith("error: --all registers every linked worktree; ")


def test_a_worktree_path_that_is_not_utf8_is_refused_in_one_line(repo, tmp_path):
    wt = os.fsdecode(bytes(tmp_path) + b"/wt odd \xffname")
    git("worktree", "add", "-q", "-b", "odd", wt, cwd=repo)
    res = ao("ao", "add", wt, "--id", "odd", cwd=repo, rc=129)
    shown = f"{tmp_path}/wt odd \\377name"
    assert res.stderr == (f"error: worktree path '{shown}' is not valid UTF-8, which git-ao "
                          "records paths as; rename the directory\n")
    assert json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"] == []


@pytest.mark.parametrize("name", [b"wt \xffname", b"wt\nline"])
def test_add_all_and_preserve_all_name_a_worktree_they_cannot_record(repo, worktrees, tmp_path,
                                                                    name):
    # `git ao add --all` refuses it in its line and goes on (exit 1, no internal
    # error), and the shutdown's warning says to move it, not to `git ao add --all`.
    worktrees(repo, "known")  # (the warning looks in the repositories of sessions)
    wt = os.fsdecode(bytes(tmp_path) + b"/" + name)
    git("worktree", "add", "-q", "-b", "odd", wt, cwd=repo)
    res = ao("ao", "add", "--all", "--json", cwd=repo, rc=1)
    [r] = [r for r in json.loads(res.stdout)["results"] if r["status"] != "nothing"]
    assert r["status"] == "refused", res.stdout
    res = ao("ao-preserve", "--all", cwd=repo)
    assert "git-ao cannot record were not saved" in res.stderr, res.stderr
    assert "git ao add --all" not in res.stderr, res.stderr


@pytest.mark.parametrize("bad, shown", [
    *((b, b) for b in ["-x", ".hidden", "a b", "x" * 201, "a..b", "a.lock", "a/b", ""]),
    # the error stays one line: control characters are shown escaped
    ("bad\nid", "bad\\nid"), ("tab\tid", "tab\\tid"),
    (os.fsdecode(b"\xffbyte"), "\\377byte")])
def test_invalid_session_ids_are_rejected(repo, tmp_path, bad, shown):
    wt = tmp_path / "wtbad"
    git("worktree", "add", "-q", "-b", "bad", wt, cwd=repo)
    res = ao("ao", "add", wt, f"--id={bad}", cwd=repo, rc=129)
    assert res.stderr == (f"error: invalid session id '{shown}': use 1 to 200 of A-Z a-z 0-9 . _ -, "
                          "not starting with '.' or '-', forming a valid ref name\n")
    assert json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"] == []


def test_unknown_session_and_usage_errors(repo):
    res = ao("ao", "show", "nope", cwd=repo, rc=1)
    assert res.stderr.strip() == "error: no session 'nope' (see 'git ao list')"
    res = ao("ao-preserve", "--bogus", cwd=repo, rc=129)
    assert res.stderr.startswith("error: ")
    res = ao("ao-preserve", "--all", "x", cwd=repo, rc=129)
    assert res.stderr == "error: give session ids or --all, not both\n"
    res = ao("ao-preserve", cwd=repo, rc=129)
    assert res.stderr == ("error: not inside a linked worktree: name sessions (git ao-preserve "
                          "ID), or use --all\n")
    res = ao("ao-preserve", "-h", cwd=repo, rc=129)
    assert "--keep-worktree" in res.stdout


def test_kill_clean_only_and_never_resurrected(repo, worktrees):
    wt = worktrees(repo, "k")
    (wt / "dirty").write_text("x")
    res = ao("ao", "kill", "k", cwd=repo, rc=1)
    assert res.stdout == (f"kill\trefused\tk\t'{wt}' has uncommitted work (0 changed, "
                          "1 untracked); commit it or preserve it\n")
    assert res.stderr == "kill: 1 refused\n"
    assert (wt / "dirty").exists()
    (wt / "dirty").unlink()
    # a preserve/restore cycle first, then kill: no later restore brings it back
    ao("ao-preserve", "k", cwd=repo)
    ao("ao-restore", cwd=repo)
    (wt / ".env").write_text("SECRET=1\n")  # ignored: kept with the directory
    with open(repo / ".git" / "info" / "exclude", "a") as fh:
        fh.write(".env\n")
    res = ao("ao", "kill", "k", "--json", cwd=repo)
    got = json.loads(res.stdout)["results"][0]
    assert got["message"] == (f"terminated; {wt} moved to the trash ({got['trash']}; "
                              "git ao-prune deletes it)")
    assert (Path(got["trash"]) / ".env").read_text() == "SECRET=1\n"
    assert not wt.exists()
    # A worktree already gone is said so, not called removed.
    gone = worktrees(repo, "g")
    git("worktree", "remove", gone, cwd=repo)
    res = ao("ao", "kill", "g", cwd=repo)
    assert res.stdout == f"kill\tok\tg\tterminated; {gone} was already gone\n"
    assert "nothing to restore" in ao("ao-restore", cwd=repo).stderr
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists()


@pytest.mark.parametrize("keeper", ["refs/worktree/keep", "refs/bisect/bad", "reflog"])
def test_kill_keeps_the_commits_only_the_worktrees_own_refs_hold(repo, worktrees, keeper):
    """A worktree's own refs (refs/worktree/*, refs/bisect/*) and its HEAD's reflog
    go with its admin dir: a commit only they reach is kept under refs/ao/kept/<id>,
    as a preserve keeps it, before the worktree is taken away."""
    wt = worktrees(repo, "kk")
    git("commit", "-q", "--allow-empty", "-m", "only here", cwd=wt)
    only = git("rev-parse", "HEAD", cwd=wt).strip()
    if keeper == "reflog":
        git("reset", "-q", "--hard", "HEAD~1", cwd=wt)
    else:
        git("update-ref", keeper, only, cwd=wt)
        git("reset", "-q", "--hard", "HEAD~1", cwd=wt)
        git("reflog", "expire", "--expire=now", "--all", cwd=wt)
    res = json.loads(ao("ao", "kill", "kk", "--json", cwd=repo).stdout)["results"][0]
    assert res["status"] == "ok", res
    assert "refs/ao/kept/kk" in res["message"]
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    assert git("cat-file", "-t", only, cwd=repo).strip() == "commit"
    assert only in git("rev-list", "refs/ao/kept/kk", cwd=repo).split()


def test_what_refs_ao_kept_held_stays_kept_when_more_is_kept(repo, worktrees):
    """A second keeping under refs/ao/kept/<id> (a preserve's, then a kill's after
    the restore) adds to what the ref holds: the first commit it kept is reachable
    from the ref alone, and the new keeping cannot count it as safe elsewhere."""
    wt = worktrees(repo, "kk2")
    git("commit", "-q", "--allow-empty", "-m", "first", cwd=wt)
    first = git("rev-parse", "HEAD", cwd=wt).strip()
    git("reset", "-q", "--hard", "HEAD~1", cwd=wt)  # first: in HEAD's reflog only
    ao("ao-preserve", "kk2", cwd=repo)
    assert first in git("rev-list", "refs/ao/kept/kk2", cwd=repo).split()
    ao("ao-restore", "kk2", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "second", cwd=wt)
    second = git("rev-parse", "HEAD", cwd=wt).strip()
    git("reset", "-q", "--hard", "HEAD~1", cwd=wt)
    ao("ao", "kill", "kk2", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    kept = git("rev-list", "refs/ao/kept/kk2", cwd=repo).split()
    assert first in kept and second in kept


def test_kill_refuses_pending(repo, worktrees):
    wt = worktrees(repo, "kp")
    (wt / "f").write_text("x")
    ao("ao-preserve", "kp", cwd=repo)
    ao("ao", "kill", "kp", cwd=repo, rc=1)


def test_forget_refuses_pending_unless_forced(repo, worktrees):
    wt = worktrees(repo, "fg")
    (wt / "f").write_text("x")
    ao("ao-preserve", "fg", cwd=repo)
    ao("ao", "forget", "fg", cwd=repo, rc=1)
    ao("ao", "forget", "--force", "fg", cwd=repo)
    assert json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"] == []
    # the work itself is still in the ref
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/fg", cwd=repo).strip()


def test_data_dir_and_database_modes(repo, worktrees):
    old = os.umask(0)
    try:
        worktrees(repo, "modes")
    finally:
        os.umask(old)
    d = os.environ["AO_DATA_DIR"]
    assert os.stat(d).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(d, "git-ao.db")).st_mode & 0o777 == 0o600
    conn = sqlite3.connect(os.path.join(d, "git-ao.db"))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
    conn.close()


def test_newer_schema_is_refused_never_rewritten(repo):
    ao("ao-prune", cwd=repo)  # a command that writes creates the database
    db = os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db")
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.commit()
    conn.close()
    res = ao("ao", "list", cwd=repo, rc=128)
    assert "schema version 999" in res.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 999
    conn.close()


def test_unreadable_database_is_fatal(repo):
    d = os.environ["AO_DATA_DIR"]
    os.makedirs(d, mode=0o700)
    with open(os.path.join(d, "git-ao.db"), "wb") as fh:
        fh.write(b"this is not sqlite" * 100)
    res = ao("ao-preserve", "--all", cwd=repo, rc=128)
    assert res.stderr.startswith("fatal: ") and "unreadable" in res.stderr


def test_show_lists_preserved_changes(repo, worktrees):
    wt = worktrees(repo, "sh")
    (wt / "README.md").write_text("changed\n")
    (wt / "brand-new").write_text("n\n")
    ao("ao-preserve", "sh", cwd=repo)
    out = ao("ao", "show", "sh", cwd=repo).stdout
    assert "README.md" in out and "brand-new" in out and "pending" in out
    assert re.search(rf"^workspace_path:\s+{re.escape(str(wt))}$", out, re.MULTILINE)


def test_dry_run_in_an_unregistered_worktree_says_what_the_real_run_does(repo, tmp_path):
    wt = tmp_path / "unreg-dry"
    git("worktree", "add", "-q", "-b", "unreg-dry", wt, cwd=repo)
    res = ao("ao-preserve", "-n", cwd=wt)
    assert "would register and preserve and remove: 0 changed" in res.stdout
    assert json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"] == []


def test_worktree_name_that_is_no_id_gives_a_plain_one(repo, tmp_path):
    wt = tmp_path / "ünïcødé"
    git("worktree", "add", "-q", "-b", "sp", wt, cwd=repo)
    res = ao("ao", "add", wt, cwd=repo)
    assert res.stdout.startswith("add\tok\tunicde\t")
    # a bad id given by hand is still refused, saying how to choose one
    res = ao("ao", "add", wt, "--id", "-bad", cwd=repo, rc=129)
    assert "invalid session id" in res.stderr


def test_a_version_1_database_is_migrated_with_its_rows(repo, worktrees):
    """Schema 1 (the first release) gains the restore-tracking columns; a pending
    save written under it reads back unchanged and restores as before."""
    from git_ao.store import database as store_mod
    wt = worktrees(repo, "old")
    (wt / "new.txt").write_text("saved under schema 1\n")
    ao("ao-preserve", "old", cwd=repo)
    db = os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db")
    conn = sqlite3.connect(db)
    # Back to exactly what schema 1 had (SQLite 3.35+ drops columns).
    conn.executescript("ALTER TABLE sessions DROP COLUMN tool; ALTER TABLE sessions DROP COLUMN tool_id; "
                       "ALTER TABLE sessions DROP COLUMN tmux_session; "
                       "ALTER TABLE session_worktrees DROP COLUMN holds_less_than; "
                       "ALTER TABLE session_worktrees DROP COLUMN removed_by; "
                       "ALTER TABLE session_worktrees DROP COLUMN needs_attention;"
                       "ALTER TABLE session_worktrees DROP COLUMN restore_started_at;"
                       "ALTER TABLE sessions DROP COLUMN group_id;"
                       "ALTER TABLE sessions DROP COLUMN session_mode;"
                       "ALTER TABLE sessions DROP COLUMN provider_conversation_id;"
                       "DROP TABLE import_notes;"
                       "ALTER TABLE session_worktrees DROP COLUMN pending;"
                       "ALTER TABLE session_worktrees DROP COLUMN ref_held;"
                       "PRAGMA user_version = 1;")
    conn.close()
    assert "old\tworker\t-\tpending" in ao("ao", "list", cwd=repo).stdout
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(store_mod.MIGRATIONS)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(session_worktrees)")}
    assert {"needs_attention", "restore_started_at"} <= cols
    conn.close()
    ao("ao-restore", cwd=repo)
    assert (wt / "new.txt").read_text() == "saved under schema 1\n"


def _moved_repo(tmp_path: Path, inside: bool, repair: bool = True) -> tuple[Path, Path, Path]:
    """A repository with a live session 'wt' holding work, then moved (`mv`, and
    `git worktree repair`): (the repository now, its worktree now, the worktree's
    recorded path). inside: the worktree lives inside the repository and moves
    with it; else it stays where it was."""
    from tests.support import init_repo
    old = tmp_path / "repo"
    old.mkdir()
    git("init", "-q", "-b", "main", cwd=old)
    init_repo(old)
    (old / ".git" / "info" / "exclude").write_text(".wt/\n")
    recorded = old / ".wt" / "wt" if inside else tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "wt", recorded, cwd=old)
    ao("ao", "add", recorded, "--id", "wt", "--harness", "claude-code",
       "--agent-session-id", "7f3a", cwd=old)
    (recorded / "new.txt").write_text("the agent's work\n")
    new = tmp_path / "repo2"
    old.rename(new)
    now = new / ".wt" / "wt" if inside else recorded
    if repair:
        git("worktree", "repair", now, cwd=new)
    return new, now, recorded


@pytest.mark.parametrize("inside,repair", [(True, True), (False, True), (False, False)],
                         ids=["worktree-inside", "worktree-outside", "link-broken"])
def test_a_live_session_whose_repository_moved_is_kept_and_re_pointed_by_add(
        tmp_path, inside, repair):
    """Nothing suggests a command that is then refused, prune keeps the live record,
    and git ao add PATH --id ID points it at its repository where it is now,
    keeping its id and facts (after git worktree repair, named when the
    worktree's link is broken); then shutdown and boot work again."""
    repo, wt, recorded = _moved_repo(tmp_path, inside, repair)
    add = f"git ao add {recorded if not inside else 'NEWPATH'} --id wt re-points the session"
    if not repair:
        add = f"git worktree repair {recorded} run in it, then {add}"
    for args, rc in ((("ao-restore",), 3), (("ao-preserve", "wt"), 1),
                     (("ao-preserve", "--all"), 1), (("ao-prune", "-n"), 0),
                     (("ao-prune",), 0), (("ao", "doctor"), 1)):
        res = ao(*args, cwd=repo, rc=rc)
        said = res.stdout + res.stderr
        assert add in said, (args, said)
        assert "git ao-preserve wt records" not in said and "see 'git ao-prune'" not in said
        assert "drop record" not in said and "dropped" not in said, (args, said)
    listed = ao("ao", "list", "--all", cwd=repo)
    assert "\tattention\t" in listed.stdout and add in listed.stderr, listed
    if not repair:
        git("worktree", "repair", wt, cwd=repo)
    res = ao("ao", "add", wt, cwd=repo)
    if inside:
        # Registered anew under another id, with the way to keep the old one.
        assert res.stdout.startswith("add\tok\trepo2-wt\t"), res.stdout
        assert "git ao forget repo2-wt, then git ao add " f"{wt} --id wt re-points it" \
            in res.stdout, res.stdout
        ao("ao", "forget", "repo2-wt", cwd=repo)
        res = ao("ao", "add", wt, "--id", "wt", cwd=repo)
    assert res.stdout.startswith("add\tok\twt\tre-pointed session 'wt'"), res.stdout
    [rec] = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert (rec["id"], rec["state"], rec["harness"], rec["agent_session_id"],
            rec["workspace_path"], rec["repo"]) == (
        "wt", "live", "claude-code", "7f3a", str(wt), str(repo / ".git")), rec
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "new.txt").read_text() == "the agent's work\n"


def test_a_worktree_moved_by_hand_with_staged_work_is_not_advised_a_refused_preserve(
        repo, worktrees, tmp_path):
    """Moved with mv, its registration holding staged work: list and restore say to
    move it back (what preserve asks), never to run git ao-preserve, which refuses."""
    wt = worktrees(repo, "mv")
    (wt / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=wt)
    wt.rename(tmp_path / "elsewhere")
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "still holds staged work in its index: if the directory was moved, move it " \
        "back" in res.stdout, res.stdout
    assert "git ao-preserve mv records" not in res.stdout, res.stdout
    res = ao("ao-preserve", "mv", cwd=repo, rc=1)
    assert "move it back" in res.stdout, res.stdout
    listed = ao("ao", "list", cwd=repo)
    assert "move it back" in listed.stderr and "records that" not in listed.stderr


def test_a_pending_sessions_ref_deleted_by_hand_is_not_listed_and_a_hint_says_so(
        repo, worktrees):
    dirty(worktrees(repo, "lost"))
    ao("ao-preserve", "lost", cwd=repo)
    ref = "refs/ao/preserved/lost"
    commit = git("rev-parse", ref, cwd=repo).strip()
    git("update-ref", "-d", ref, cwd=repo)
    [rec] = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert (rec["state"], rec["preserve_ref"], rec["preserved_commit"]) == (
        "pending", None, commit), rec
    res = ao("ao", "list", cwd=repo)
    assert ref not in res.stdout, res.stdout
    want = f"hint: lost: its ref {ref} was deleted (git update-ref -d, or a git fetch " \
        "--prune with a refspec covering refs/ao/); git ao-restore lost still applies"
    assert want in res.stderr, res.stderr
    shown = ao("ao", "show", "lost", cwd=repo)
    assert f"its ref {ref} was deleted (" in shown.stderr, shown
    assert json.loads(ao("ao", "show", "lost", "--json", cwd=repo).stdout)[
        "session"]["preserve_ref"] is None
    ao("ao-restore", "lost", cwd=repo)
    assert ao("ao", "list", cwd=repo).stderr == ""
