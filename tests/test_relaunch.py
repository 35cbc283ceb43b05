"""Relaunch: a configured command per harness or global, run in the restored
worktree with the facts in AO_* variables, never through a shell string."""

import json
import shlex
import shutil
import sys

from tests.support import PROBE, ao, ao_refs, git, init_repo


def _configure(repo, key, *extra):
    argv = [sys.executable, "-c", PROBE, *extra]
    ao("ao", "config", "set", key, " ".join(shlex.quote(a) for a in argv), cwd=repo)


def test_relaunch_gets_facts_as_data_in_the_worktree(repo, worktrees, tmp_path):
    evil = "x $(touch pwned) ; `touch pwned2` 'q\" y"
    wt = worktrees(repo, "rl", harness=evil, agent_session_id="a b;c")
    ao("ao-preserve", "rl", cwd=repo)
    _configure(repo, "relaunch.command", "--resume", "{agent_session_id}", "{harness}")
    out = tmp_path / "probe.json"
    res = ao("ao-restore", cwd=repo, env={"PROBE_OUT": str(out)})
    seen = json.loads(out.read_text())
    assert seen["cwd"] == str(wt)
    assert seen["argv"] == ["--resume", "a b;c", evil]
    seen["env"].pop("AO_DATA_DIR")  # the test's own, inherited
    assert seen["env"] == {"AO_SESSION_ID": "rl", "AO_WORKTREE": str(wt), "AO_BRANCH": "rl",
                           "AO_KIND": "worker", "AO_HARNESS": evil,
                           "AO_AGENT_SESSION_ID": "a b;c", "AO_RESTORE_STATUS": "ok",
                           "AO_SESSION_MODE": "", "AO_PROVIDER_CONVERSATION_ID": "",
                           "AO_SESSION_GROUP": ""}
    assert not list(tmp_path.rglob("pwned*")) and not list(repo.rglob("pwned*"))
    assert "relaunch\tok\trl\t" in res.stdout
    log = ao("ao", "log", "--session", "rl", "--json", cwd=repo).stdout
    assert any(e["action"] == "relaunch" and e["decision"] == "ok"
               for e in json.loads(log)["entries"])


def test_per_harness_command_wins_and_no_launch_skips(repo, worktrees, tmp_path):
    worktrees(repo, "h1", harness="codex")
    ao("ao-preserve", "h1", cwd=repo)
    ao("ao", "config", "set", "relaunch.command", "false", cwd=repo)
    _configure(repo, "relaunch.harness.codex", "{session_id}")
    out = tmp_path / "probe.json"
    res = ao("ao-restore", "--no-launch", cwd=repo, env={"PROBE_OUT": str(out)})
    assert not out.exists() and "relaunch" not in res.stdout
    ao("ao-preserve", "h1", cwd=repo)
    ao("ao-restore", cwd=repo, env={"PROBE_OUT": str(out)})
    assert json.loads(out.read_text())["argv"] == ["h1"]


def test_failing_relaunch_never_undoes_the_restore(repo, worktrees):
    wt = worktrees(repo, "bad")
    (wt / "work.txt").write_text("saved\n")
    ao("ao-preserve", "bad", cwd=repo)
    ao("ao", "config", "set", "relaunch.command", "false", cwd=repo)
    res = ao("ao-restore", "--json", cwd=repo, rc=1)
    results = {r["action"]: r for r in json.loads(res.stdout)["results"]}
    assert results["restore"]["status"] == "ok"
    assert results["relaunch"]["status"] == "failed" and results["relaunch"]["returncode"] == 1
    assert (wt / "work.txt").read_text() == "saved\n"
    assert json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"][0]["state"] \
        == "live"
    assert ao_refs(repo, "refs/ao") == ""
    ao("ao", "config", "set", "relaunch.command", "/no/such/program --x", cwd=repo)
    ao("ao-preserve", "bad", cwd=repo)
    res = ao("ao-restore", cwd=repo, rc=1)
    assert "could not start" in res.stdout and (wt / "work.txt").exists()
    # The summary counts sessions, and relaunches apart.
    assert "restore: 1 ok; relaunch: 1 failed" in res.stderr
    log = ao("ao", "log", cwd=repo).stdout
    assert "relaunch bad failed" in log


def test_no_command_prints_the_resume_hint(repo, worktrees):
    worktrees(repo, "hint", harness="claude-code", agent_session_id="7f3a")
    ao("ao-preserve", "hint", cwd=repo)
    res = ao("ao-restore", cwd=repo)
    # The exact command: cd into the worktree, then the harness's own resume form.
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("hint: resume hint: "))
    assert line.startswith("hint: resume hint: cd /") and line.endswith(
        " && claude --resume 7f3a")


def test_an_agent_id_read_from_another_tool_never_becomes_an_option_or_a_broken_line(
        repo, worktrees):
    for n, bad in enumerate(["--dangerous", "a b", "x\ny", "nul\x00id", "z" * 300]):
        sid = f"odd{n}"
        worktrees(repo, sid, harness="claude-code", agent_session_id=bad)
        ao("ao-preserve", sid, cwd=repo)
        res = ao("ao-restore", sid, cwd=repo)
        hints = [ln for ln in res.stderr.splitlines() if ln.startswith("hint: resume")]
        assert len(hints) == 1 and "claude --resume" not in hints[0], (bad, res.stderr)
        assert all(ln.startswith(("hint: ", "restore: ")) for ln in res.stderr.splitlines()), \
            res.stderr  # each line is one message: a newline in the id is escaped
        shown = ao("ao", "show", sid, cwd=repo).stdout
        facts = shown.split("\n\n")[0].splitlines()
        assert "\x00" not in shown and all(": " in ln or ln.endswith(":") for ln in facts), \
            shown


def test_hints_name_only_the_sessions_this_restore_brought_back(repo, worktrees, tmp_path):
    # One pending session, one whose repository moved away (its worktree with it),
    # one whose worktree was removed by hand: a boot restore brings back the first
    # and only names the others, whose directories are not there.
    worktrees(repo, "back", harness="claude-code", agent_session_id="7f3a")
    ao("ao-preserve", "back", cwd=repo)
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", "-b", "main", cwd=other)
    init_repo(other)
    wt = other / "wt-away"
    git("worktree", "add", "-q", "-b", "away", wt, cwd=other)
    ao("ao", "add", wt, "--id", "away", "--harness", "claude-code",
       "--agent-session-id", "8e4b", cwd=other)
    other.rename(tmp_path / "other2")
    gone = worktrees(repo, "gone", harness="claude-code", agent_session_id="9c5d")
    shutil.rmtree(gone)
    res = ao("ao-restore", cwd=repo, rc=3)
    hints = [ln for ln in res.stderr.splitlines() if ln.startswith("hint: resume")]
    assert [h.split(":")[1] for h in hints] == [" resume back"], res.stderr
    # Named, a live session with nothing pending is said, not relaunched.
    res = ao("ao-restore", "gone", cwd=repo, rc=3)
    assert not [ln for ln in res.stderr.splitlines() if ln.startswith("hint: resume")], res
