"""What a new user, reading only the README and the man pages, found breaking:
each refusal or error says what is true and what to do."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from git_ao.context import give_up_hint
from tests.support import ao, git, init_repo


def _deleted_branch(repo, worktrees):
    """A session on 'feat' with a checkpoint, whose branch ref is then deleted
    (`git update-ref -d`) in its worktree. Returns (worktree, the branch's commit)."""
    wt = worktrees(repo, "feat")
    (wt / "base.txt").write_text("on feat\n")
    git("add", "base.txt", cwd=wt)
    git("commit", "-qm", "feat's", cwd=wt)
    tip = git("rev-parse", "HEAD", cwd=wt).strip()
    (wt / "work.txt").write_text("uncommitted\n")
    ao("ao", "checkpoint", cwd=wt)
    git("update-ref", "-d", "refs/heads/feat", cwd=wt)
    return wt, tip


@pytest.mark.parametrize("dry", [False, True])
def test_a_deleted_branch_is_named_deleted_with_the_branch_that_brings_it_back(
        repo, worktrees, dry):
    """A branch ref deleted under a session whose history knows its commit is no
    unborn branch: every refusal (checkpoint, --at, preserve, doctor) says it was
    deleted and names `git branch feat <commit>`, never "commit once first"."""
    wt, tip = _deleted_branch(repo, worktrees)
    n = ["-n"] if dry else []
    back = f"git branch feat {tip[:12]}"
    outs = [ao("ao", "checkpoint", *n, cwd=wt, rc=1).stdout,
            ao("ao-restore", "feat", "--at", "1", *n, cwd=repo, rc=1).stdout,
            ao("ao-preserve", "feat", *n, cwd=repo, rc=1).stdout]
    if not dry:
        checks = json.loads(ao("ao", "doctor", "--json", cwd=repo, rc=1).stdout)["checks"]
        outs.append("".join(c["detail"] for c in checks if c["name"] == "preserve"))
    for out in outs:
        assert "branch 'feat'" in out and "was deleted" in out, out
        assert back in out, out
        assert "commit once first" not in out, out
    git("branch", "feat", tip, cwd=repo)
    ao("ao", "checkpoint", cwd=wt)
    assert (wt / "work.txt").read_text() == "uncommitted\n"


def test_a_branch_never_committed_keeps_commit_once_first(repo, worktrees):
    """An orphan branch with no commit ever, in a session whose history knows
    other branches only: still "commit once first"."""
    wt = worktrees(repo, "fresh")
    ao("ao", "checkpoint", cwd=wt)
    git("checkout", "-q", "--orphan", "scratch", cwd=wt)
    out = ao("ao", "checkpoint", cwd=wt, rc=1).stdout
    assert "has no commit yet (unborn); commit once first" in out, out
    assert "deleted" not in out


@pytest.mark.parametrize("dry", [False, True])
def test_an_executable_bit_git_does_not_record_gets_advice_about_modes(repo, worktrees, dry):
    """core.fileMode=false and a `chmod +x` of a tracked file: the worktree is kept,
    and what it says is about the executable bit the save loses (and the
    `git update-index --chmod=+x` that records it), not about line endings."""
    wt = worktrees(repo, "modes")
    git("config", "core.fileMode", "false", cwd=wt)
    (wt / "README.md").chmod(0o755)
    out = ao("ao-preserve", "modes", *(["-n"] if dry else []), cwd=repo, rc=1).stdout
    assert "-text" not in out and "line-ending" not in out, out
    assert "executable bit" in out and "core.fileMode=false" in out, out
    assert f"git -C {wt} update-index --chmod=+x -- README.md" in out, out
    git("update-index", "--chmod=+x", "--", "README.md", cwd=wt)
    ao("ao-preserve", "modes", cwd=repo)
    ao("ao-restore", "modes", cwd=repo)
    assert (wt / "README.md").stat().st_mode & 0o111


def test_an_executable_bit_git_holds_and_the_file_lacks_gets_chmod_minus_x(repo, worktrees):
    """The other way round: git holds the file as executable, the worktree's copy
    is not (core.fileMode=false): the advice records -x, or a chmod +x."""
    wt = worktrees(repo, "unset")
    git("update-index", "--chmod=+x", "--", "run.sh", cwd=wt)
    git("commit", "-qm", "executable", cwd=wt)
    git("config", "core.fileMode", "false", cwd=wt)
    (wt / "run.sh").chmod(0o644)
    out = ao("ao-preserve", "unset", cwd=repo, rc=1).stdout
    assert "is not executable in the worktree and git holds it as executable" in out, out
    assert "update-index --chmod=-x -- run.sh" in out and "chmod +x them" in out, out


def test_each_cause_of_a_file_that_would_not_come_back_gets_its_own_advice(repo, worktrees):
    """Line endings (-text), a filter that does not give the bytes back (the
    driver, -filter) and a symbolic link under core.symlinks=false: each named
    with what fixes it, and only that."""
    wt = worktrees(repo, "causes")
    (wt / ".gitattributes").write_text("*.crlf text eol=lf\n*.up filter=upper\n")
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=wt)
    git("config", "filter.upper.smudge", "cat", cwd=wt)
    git("config", "core.symlinks", "false", cwd=wt)
    (wt / "a.crlf").write_bytes(b"one\r\ntwo\r\n")
    (wt / "b.up").write_text("lower\n")
    (wt / "link").symlink_to("base.txt")
    out = ao("ao-preserve", "causes", "-n", cwd=repo, rc=1).stdout
    crlf, up, link = (f"'{wt / n}'" for n in ("a.crlf", "b.up", "link"))
    at = sorted((out.index(name), name) for name in (crlf, up, link))
    said = {name: out[i:(at[k + 1][0] if k + 1 < len(at) else None)]
            for k, (i, name) in enumerate(at)}
    assert "-text" in said[crlf] and "line endings" in said[crlf], out
    assert "filter=upper" in said[up] and "-text" not in said[up], out
    assert "symbolic link" in said[link] and "core.symlinks" in said[link], out
    assert "-text" not in said[link], out


@pytest.mark.parametrize(("key", "value", "why"), [
    ("history.keep", "-5", "expected a whole number, 1 or more"),
    ("preserve.jobs", "-3", "expected a whole number from 1 to 64"),
    ("restore.jobs", "-1", "expected a whole number from 1 to 64"),
    ("preserve.agentTimeout", "-1.5", "expected a number of seconds, 0 or more"),
    ("relaunch.timeout", "-.5", "expected a number of seconds, 0 or more"),
    ("preserve.timeout", "-2", "expected a number of seconds greater than 0"),
    ("preserve.pushTimeout", "-2", "expected a number of seconds greater than 0"),
    ("restore.timeout", "-2", "expected a number of seconds greater than 0"),
])
def test_a_negative_number_is_a_bad_value_not_a_switch(repo, key, value, why):
    """`git ao config set history.keep -5`: the bad value's one-line error (exit
    129), not click's "unknown switch '5'"; with options around it and after
    `--` alike, and a dry run too."""
    said = f"error: bad value for '{key}': {why}\n"
    for argv in ([key, value], [key, "--", value], ["-n", key, value],
                 ["--color", "never", key, value, "-q"]):
        res = ao("ao", "config", "set", *argv, cwd=repo, rc=129)
        assert res.stderr == said, (argv, res.stderr)
    assert ao("ao", "config", "get", key, cwd=repo, rc=1).stdout == ""
    ao("ao", "config", "set", "history.keep", "--", "3", cwd=repo)
    assert ao("ao", "config", "get", "history.keep", cwd=repo).stdout == "3\n"
    assert "unknown switch 'x'" in ao("ao", "config", "set", "history.keep", "3", "-x",
                                      cwd=repo, rc=129).stderr


def test_outside_any_repository_a_command_given_no_id_says_to_name_the_session(
        repo, worktrees, tmp_path):
    """A command that takes its session from the current directory, given no id
    and run outside any git repository (or in one, outside every session's
    worktree): one line saying to name the session, with the command's form, not
    git's "not a git repository" (exit 129, as a usage error)."""
    worktrees(repo, "agent")
    away = tmp_path / "away"
    away.mkdir()
    forms = {("ao-restore", "--at", "1"): "git ao-restore ID --at N",
             ("ao-restore", "--at", "1", "-n"): "git ao-restore ID --at N",
             ("ao", "history"): "git ao history ID",
             ("ao", "checkpoint"): "git ao checkpoint ID",
             ("ao-preserve",): "git ao-preserve ID",
             ("ao-preserve", "--keep-worktree", "-n"): "git ao-preserve ID"}
    for argv, form in forms.items():
        for where in (away, repo):
            err = ao(*argv, cwd=where, rc=129).stderr
            assert err.count("\n") == 1 and err.startswith("error: "), (argv, err)
            assert f"({form})" in err and "fatal" not in err, (argv, err)
            if where == away:
                assert "in no git repository" in err, (argv, err)


def _daemon_db(content):
    """Write `content` (bytes, or a callable given the path) where the ao daemon
    importer reads its database (`ao.db` in the data dir). Returns the path."""
    data = Path(os.environ["AO_DATA_DIR"])
    data.mkdir(parents=True, exist_ok=True)
    path = data / "ao.db"
    if callable(content):
        content(path)
    else:
        path.write_bytes(content)
    return path


def _other_program_db(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (id TEXT, body TEXT)")
        conn.commit()


@pytest.mark.parametrize("content", [b"", _other_program_db], ids=["empty", "other-tables"])
@pytest.mark.parametrize("other_tool", [False, True])
def test_an_ao_db_that_holds_no_daemon_session_fails_no_shutdown(
        repo, worktrees, content, other_tool):
    """An empty ao.db (or another program's SQLite file there) holds no session:
    with import.tools auto, every preserve --all and restore exits 0 and says
    nothing of it (a note with -v and in git ao import), whether another tool's
    state is found beside it or not."""
    db = _daemon_db(content)
    if other_tool:
        (Path(os.environ["HOME"]) / ".claude" / "projects").mkdir(parents=True)
    worktrees(repo, "agent")
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    for _ in range(2):
        for argv in (("ao-preserve", "--all"), ("ao-restore",)):
            res = ao(*argv, cwd=repo)
            assert "ao.db" not in res.stdout + res.stderr, res
    assert f"'{db}' is an " in ao("ao-preserve", "--all", "-v", cwd=repo).stdout
    res = ao("ao", "import", "--tool", "ao", cwd=repo)
    assert "holds no ao daemon session; nothing imported" in res.stdout, res


def test_a_corrupt_ao_db_is_reported_once_as_any_unreadable_source(repo, worktrees):
    """A file at ao.db that is no SQLite database is refused in the first run that
    meets it (exit 1, so a shutdown log shows it), and a note after (exit 0), as
    another tool's unreadable file is, also when it is the only source found."""
    _daemon_db(b"this is not a database, just some text long enough for a header\n" * 4)
    worktrees(repo, "agent")
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    first = ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert "import\trefused\tao\t" in first.stdout and "ao.db" in first.stdout, first
    assert "preserve\tok\tagent" in first.stdout
    again = ao("ao-restore", cwd=repo)
    assert "ao.db" not in again.stdout + again.stderr
    ao("ao-preserve", "--all", cwd=repo)
    assert ao("ao", "import", cwd=repo, rc=128).stderr.startswith("fatal: ")


DEAD = "ssh://nonexistent.invalid/x.git"


def test_a_push_to_a_dead_url_is_said_under_q_and_forget_push_gives_it_up(repo, worktrees):
    """A push to a URL that will never answer: prune -q exits 3 and prints the
    push's attention record on stderr only (as every -q does, and as
    git-ao-prune(1) says), naming `git ao forget --push ID`; that gives the push up,
    keeping the local save, and the next prune and doctor are clean."""
    wt = worktrees(repo, "dead")
    (wt / "work.txt").write_text("mine\n")
    ao("ao-preserve", "--push", DEAD, "dead", cwd=repo, rc=3)
    res = ao("ao-prune", "-q", cwd=repo, rc=3)
    assert res.stdout == "", res.stdout
    [line] = [ln for ln in res.stderr.splitlines() if ln.startswith("push\t")]
    assert line.startswith("push\tattention\tdead\t") and \
        "git ao forget --push dead" in line, line
    doctor = ao("ao", "doctor", cwd=repo, rc=1).stdout
    assert "git ao forget --push dead" in doctor, doctor
    assert line.endswith(give_up_hint("dead")) and give_up_hint("dead") in doctor, doctor
    save = git("rev-parse", "refs/ao/preserved/dead", cwd=repo).strip()
    out = ao("ao", "forget", "--push", "-n", "dead", cwd=repo).stdout
    assert "would give up the push to " + DEAD in out, out
    ao("ao-prune", "-q", cwd=repo, rc=3)  # the dry run changed nothing
    out = ao("ao", "forget", "--push", "dead", cwd=repo).stdout
    assert "gave up the push to " + DEAD in out and "local save" in out, out
    res = ao("ao-prune", "-q", cwd=repo, rc=0)
    assert res.stdout == res.stderr == "", res
    assert "push:" not in ao("ao", "doctor", cwd=repo).stdout
    assert git("rev-parse", "refs/ao/preserved/dead", cwd=repo).strip() == save
    ao("ao-restore", "dead", cwd=repo)
    assert (wt / "work.txt").read_text() == "mine\n"
    ao("ao", "forget", "--push", "--force", "dead", cwd=repo, rc=129)


def test_kill_leaves_no_worktree_registration_behind(repo, worktrees):
    """`git ao kill` deregisters the worktree it moved to the trash, as a preserve
    does: `git worktree add` at the same path works at once."""
    wt = worktrees(repo, "gone")
    ao("ao", "kill", "gone", cwd=repo)
    assert str(wt) not in git("worktree", "list", "--porcelain", cwd=repo)
    git("worktree", "add", "-q", "-b", "again", wt, cwd=repo)


def test_forget_names_the_history_it_keeps_and_add_says_it_is_taken_on(repo, worktrees):
    """forget of a live session with a history says the history ref stays, with
    how to read and drop it; a new worktree added under that id says it takes those
    entries on as its older ones, rather than silently."""
    wt = worktrees(repo, "hist")
    (wt / "work.txt").write_text("one\n")
    ao("ao", "checkpoint", "hist", cwd=repo)
    out = ao("ao", "forget", "hist", cwd=repo).stdout
    assert "refs/ao/history/hist" in out and "update-ref -d refs/ao/history/hist" in out, out
    git("worktree", "remove", "--force", wt, cwd=repo)
    git("worktree", "add", "-q", "-b", "hist2", wt, cwd=repo)
    out = ao("ao", "add", wt, "--id", "hist", cwd=repo).stdout
    assert "refs/ao/history/hist already holds 1 entry of an earlier session" in out, out
    assert "update-ref -d refs/ao/history/hist" in out, out


def test_doctor_recover_has_a_dry_run(repo, worktrees):
    """`git ao doctor --recover -n` (git-ao(1): the commands that change anything
    take -n) lists the records it would rebuild and writes none."""
    wt = worktrees(repo, "lost")
    (wt / "work.txt").write_text("mine\n")
    ao("ao-preserve", "lost", cwd=repo)
    ao("ao", "forget", "--force", "lost", cwd=repo)
    out = ao("ao", "doctor", "--recover", "-n", "-C", str(repo), cwd=repo, rc=1).stdout
    assert "recover\tok\tlost\twould recover as pending" in out, out
    assert "lost" not in ao("ao", "list", cwd=repo).stdout
    ao("ao", "doctor", "--recover", "-C", str(repo), cwd=repo)
    assert "pending" in ao("ao", "list", cwd=repo).stdout


def test_outside_any_repository_a_preserve_naming_nothing_is_a_usage_error_as_paged(tmp_path):
    """Run in no repository, naming no session: 129, as git-ao-preserve(1) and
    git-ao(1) say; their 128 no longer claims "not a repository" for it."""
    from tests.support import ROOT, man_source_text
    here = tmp_path / "plain"
    here.mkdir()
    for args in (["ao-preserve"], ["ao", "checkpoint"], ["ao", "history"]):
        res = ao(*args, cwd=here, rc=129)
        assert "in no git repository" in res.stderr, res.stderr
    for page in ("git-ao-preserve.1", "git-ao.1"):
        text = man_source_text((ROOT / "man" / page).read_text())
        status = " ".join(text[text.index(".SH EXIT STATUS"):].split())
        fatal = status[status.index(".B 128"):status.index(".B 129")]
        assert "not a repository," not in fatal, (page, fatal)
        usage = status[status.index(".B 129"):]
        assert "in no git repository" in usage.split(".TP")[0], (page, usage)


def test_doctor_recover_dry_run_without_c_creates_nothing(repo, worktrees, tmp_path):
    """`git ao doctor --recover -n` naming no repository changes nothing (git-ao(1)):
    its look at the database opens it read-only, so a data dir never used is
    still not there after it (no database, no -wal or -shm)."""
    data = Path(os.environ["AO_DATA_DIR"])
    shutil.rmtree(data, ignore_errors=True)
    ao("ao", "doctor", "--recover", "-n", cwd=repo, rc=None)
    assert not data.exists(), sorted(p.name for p in data.iterdir())


def test_doctor_dry_run_without_recover_is_a_usage_error(repo):
    """-n belongs to `--recover` (git-ao(1)'s synopsis): `git ao doctor -n` alone is
    refused in one line, never accepted to do nothing different."""
    res = ao("ao", "doctor", "-n", cwd=repo, rc=129)
    assert "-n" in res.stderr and "--recover" in res.stderr, res.stderr


def test_kill_whose_worktree_prune_fails_still_says_terminated(repo, worktrees, monkeypatch):
    """The `git worktree prune` after a kill marked the session terminated and moved
    its worktree to the trash fails (here: a config git's worktree command cannot
    read appears just then): the kill says what it did, with the registration
    left, never a failure for a session that was ended; the next prune clears it."""
    from git_ao.context import Context
    from git_ao.manage import kill as kill_mod
    from git_ao.store import trash
    from git_ao.store.database import Store
    wt = worktrees(repo, "ended")
    real_detach = trash.detach

    def detach_then_break_config(entry):
        real_detach(entry)
        git("config", "worktree.guessRemote", "maybe", cwd=repo)

    monkeypatch.setattr(trash, "detach", detach_then_break_config)
    ctx = Context(Store())
    out = kill_mod.kill(ctx, "ended")
    assert out.status == "ok" and out.message.startswith("terminated; "), out
    assert "git worktree prune failed" in out.message, out.message
    assert not wt.exists() and ctx.store.get("ended").state == "terminated"
    git("config", "--unset", "worktree.guessRemote", cwd=repo)
    assert str(wt) in git("worktree", "list", "--porcelain", cwd=repo)
    ao("ao-prune", cwd=repo)
    assert str(wt) not in git("worktree", "list", "--porcelain", cwd=repo)


def test_the_history_drop_command_runs_as_printed_from_a_path_with_a_space(tmp_path,
                                                                          worktrees):
    """forget and add print the one command that drops a session id's history;
    pasted into a shell, it works from a repository whose path holds a space."""
    import re
    import subprocess
    repo = tmp_path / "my repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", repo, cwd=tmp_path)
    init_repo(repo)
    wt = worktrees(repo, "hist")
    (wt / "work.txt").write_text("one\n")
    ao("ao", "checkpoint", "hist", cwd=repo)
    said = re.compile(r"(git -C [^;(]+? update-ref -d refs/ao/history/hist) drops")
    forgot = said.search(ao("ao", "forget", "hist", cwd=repo).stdout)
    git("worktree", "remove", "--force", wt, cwd=repo)
    git("worktree", "add", "-q", "-b", "hist2", wt, cwd=repo)
    added = said.search(ao("ao", "add", wt, "--id", "hist", cwd=repo).stdout)
    assert forgot and added and forgot[1] == added[1], (forgot, added)
    subprocess.run(added[1], shell=True, cwd=tmp_path, check=True)
    assert git("for-each-ref", "refs/ao/history/", cwd=repo) == ""
