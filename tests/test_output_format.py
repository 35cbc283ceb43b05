"""Output: plain stable records off a terminal, rich on one, NO_COLOR, --json with a
versioned schema on every command, -q and -v."""

import json
import os
import pty
import re
import subprocess

from tests.support import ao, dirty, git

ANSI = re.compile(r"\x1b\[")
COLOUR = re.compile(r"\x1b\[[0-9;]*?(?:\b3[0-9]|\b9[0-7])[;m]")


def test_plain_records_are_tab_separated_and_colourless(repo, worktrees):
    wt = worktrees(repo, "plain", harness="codex")
    dirty(wt)
    res = ao("ao-preserve", "plain", cwd=repo)
    assert not ANSI.search(res.stdout + res.stderr)
    fields = res.stdout.strip().split("\t")
    assert fields[:3] == ["preserve", "ok", "plain"] and len(fields) == 4
    assert res.stderr.strip() == "preserve: 1 ok"
    listed = ao("ao", "list", cwd=repo).stdout.strip().split("\t")
    assert listed[:5] == ["plain", "worker", "codex", "pending", "plain"]
    assert listed[5] == str(wt) and listed[6].startswith("refs/ao/preserved/plain ")


def test_quiet_prints_nothing_and_verbose_traces_git(repo, worktrees):
    worktrees(repo, "q")
    res = ao("ao-preserve", "q", "-q", cwd=repo)
    assert res.stdout == "" and res.stderr == ""
    res = ao("ao-restore", "q", "-v", cwd=repo)
    assert re.search(r"^trace: git .*worktree add", res.stderr, re.MULTILINE)


def test_quiet_prints_the_warnings_of_a_session_that_went_well(repo, worktrees):
    # A preserve that removed the worktree, ok, in a mirror clone whose next `git
    # fetch --prune` deletes the preserve ref: -q printed nothing of it.
    wt = worktrees(repo, "mirror")
    git("config", "remote.origin.url", "/nowhere", cwd=repo)
    git("config", "remote.origin.fetch", "+refs/*:refs/*", cwd=repo)
    (wt / "f.txt").write_text("work\n")
    for extra in (["-n"], []):
        res = ao("ao-preserve", "mirror", "-q", *extra, cwd=repo)
        assert res.stdout == "" and res.stderr == (
            "warning: mirror: remote.origin.fetch = +refs/*:refs/* covers refs/ao/, so git "
            "fetch --prune deletes the preserve ref; the trash keeps a copy\n"), (extra, res.stderr)
    assert not wt.exists()


def _json(*args, cwd, rc=0):
    doc = json.loads(ao(*args, "--json", cwd=cwd, rc=rc).stdout)
    assert doc["schema"] == 1
    return doc


def test_every_command_speaks_versioned_json(repo, worktrees):
    wt = worktrees(repo, "j", register=False)
    assert _json("ao", "add", str(wt), "--id", "j", cwd=repo)["command"] == "add"
    assert _json("ao", "list", cwd=repo)["sessions"][0]["workspace_path"] == str(wt)
    assert _json("ao", "show", "j", cwd=repo)["session"]["id"] == "j"
    doc = _json("ao-preserve", "j", cwd=repo)
    assert doc["command"] == "preserve" and doc["exit_status"] == 0
    assert doc["results"][0]["workspace_path"] == str(wt)
    assert _json("ao-restore", cwd=repo)["results"][0]["status"] == "ok"
    assert _json("ao-prune", "-n", cwd=repo)["dry_run"] is True
    assert _json("ao", "config", "set", "preserve.jobs", "2", cwd=repo)["value"] == 2
    assert _json("ao", "config", "get", "preserve.jobs", cwd=repo)["value"] == 2
    assert _json("ao", "config", "list", cwd=repo)["values"] == {"preserve.jobs": 2}
    assert _json("ao", "config", "unset", "preserve.jobs", cwd=repo)["removed"] is True
    assert _json("ao", "log", cwd=repo)["entries"]
    assert "_git_ao_preserve" in _json("ao", "completion", "bash", cwd=repo)["script"]
    assert {c["name"] for c in _json("ao", "doctor", cwd=repo)["checks"]} >= {
        "git", "database", "man pages", "bash completion"}
    assert _json("ao", "kill", "j", cwd=repo)["results"][0]["status"] == "ok"
    assert _json("ao", "forget", "j", cwd=repo)["results"][0]["status"] == "ok"


def _on_tty(args, cwd, env):
    """Run `git args` with stdout on a pseudo-terminal; return what it printed."""
    master, slave = pty.openpty()
    full = dict(os.environ, COLUMNS="200", TERM="xterm-256color")
    full.update(env)  # COLUMNS too
    proc = subprocess.Popen(["git", *args], cwd=cwd, stdout=slave, stderr=subprocess.DEVNULL,
                            env=full)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(master)
    return out.decode()


def test_terminal_gets_a_table_and_colour_unless_no_color(repo, worktrees):
    worktrees(repo, "tty", harness="aider")
    out = _on_tty(["ao", "list"], repo, {"FORCE_COLOR": "1"})
    assert "workspace path" in out and "aider" in out and "\t" not in out
    assert ANSI.search(out)
    out = _on_tty(["ao-preserve", "tty"], repo, {"FORCE_COLOR": "1"})
    assert COLOUR.search(out)
    ao("ao-restore", cwd=repo)
    # NO_COLOR: no colour (bold stays, as the NO_COLOR convention allows).
    out = _on_tty(["ao-preserve", "tty"], repo, {"NO_COLOR": "1"})
    assert "tty" in out and not COLOUR.search(out)


def test_error_documents_name_the_command_as_success_documents_do(repo):
    """`command` is the same word on both paths: "preserve", "config set", not the
    program name."""
    res = ao("ao-preserve", "no-such", "--json", cwd=repo, rc=1)
    assert json.loads(res.stdout)["command"] == "preserve"
    res = ao("ao", "show", "no-such", "--json", cwd=repo, rc=1)
    assert json.loads(res.stdout.splitlines()[-1])["command"] == "show"
    res = ao("ao-restore", "--json", "-j", "0", cwd=repo, rc=129)  # a usage error
    doc = json.loads(res.stdout)
    assert doc["command"] == "restore" and doc["exit_status"] == 129 and "option 'jobs'" in doc["error"]
    res = ao("ao", "config", "get", "preserve.jobs", "--json", cwd=repo, rc=None)
    assert json.loads(res.stdout)["command"] == "config get"


def test_show_writes_booleans_as_git_does(repo, worktrees):
    worktrees(repo, "b")
    ao("ao-preserve", "b", "--keep-worktree", cwd=repo)
    out = ao("ao", "show", "b", cwd=repo).stdout
    assert re.search(r"^detached: +false$", out, re.MULTILINE) and "False" not in out


def test_a_path_or_a_field_holding_a_newline_or_a_tab_stays_on_its_line(repo, worktrees,
                                                                       tmp_path):
    worktrees(repo, "tabbed", harness="cl\taude", agent_session_id="a\nb")
    odd = os.fsdecode(bytes(tmp_path) + b"/wt sp\nnl \xff")
    git("worktree", "add", "-q", "-b", "spnl", odd, cwd=repo)  # a worktree no session holds
    res = ao("ao-preserve", "--all", "--keep-worktree", cwd=repo)
    warned = [ln for ln in res.stderr.splitlines() if ln.startswith("warning: ")]
    assert any("wt sp\\nnl \\377" in ln for ln in warned), res.stderr
    assert all(ln.startswith(("warning: ", "hint: ", "preserve: ", "nothing"))
               for ln in res.stderr.splitlines()), res.stderr
    shown = ao("ao", "show", "tabbed", cwd=repo).stdout.split("\n\n")[0].splitlines()
    assert any(ln.endswith('"cl\\taude"') for ln in shown), shown
    assert any(ln.endswith('"a\\nb"') for ln in shown), shown


def test_every_time_printed_is_utc_with_a_z(repo, worktrees):
    """show, list --json, history (plain and --json), log and the outcomes that name
    a history entry write times one way: UTC with a Z, also where TZ is not UTC."""
    wt = worktrees(repo, "when")
    (wt / "README.md").write_text("work\n")
    env = {"TZ": "Asia/Kolkata"}  # +0530: a local time would show
    ao("ao", "checkpoint", "-q", cwd=wt, env=env)
    texts = [ao("ao", "show", "when", cwd=repo, env=env).stdout,
             ao("ao", "show", "when", "--json", cwd=repo, env=env).stdout,
             ao("ao", "list", "--json", cwd=repo, env=env).stdout,
             ao("ao", "history", "when", cwd=repo, env=env).stdout,
             ao("ao", "history", "when", "--json", cwd=repo, env=env).stdout,
             ao("ao", "log", cwd=repo, env=env).stdout]
    ao("ao-prune", cwd=repo, env=env)
    git("worktree", "remove", "--force", str(wt), cwd=repo)
    texts.append(ao("ao-preserve", "when", cwd=repo, env=env).stdout)
    for text in texts:
        after = re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(.?)", text)
        assert after and set(after) == {"Z"}, text
