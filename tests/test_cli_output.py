"""Output a new user meets: list filters and states, -z and quoting, colour as git
decides it, the summary on stderr and git's short usage for -h, kept in step
with the man pages."""

import json
import re
from pathlib import Path

import click
import pytest

from git_ao.cli import ao as ao_cli
from git_ao.cli import preserve, prune, restore
from tests.conftest import ao, commit_on, git
from tests.support import man_source_text
from tests.test_output_format import _on_tty

MAN = Path(__file__).resolve().parent.parent / "man"
ANSI = re.compile(r"\x1b\[")
STYLE = re.compile(r"\x1b\[[0-9;]*m")


def _ids(stdout):
    return sorted(ln.split("\t")[0] for ln in stdout.splitlines())


def test_list_filters_by_repository_and_state(repo, make_repo, worktrees):
    other = make_repo()
    worktrees(repo, "here1")
    worktrees(repo, "here2")
    worktrees(other, "there")
    ao("ao-preserve", "here2", cwd=repo)
    res = ao("ao", "list", cwd=repo)
    assert _ids(res.stdout) == ["here1", "here2"]
    assert "hint: 1 session(s) of other repositories not listed" in res.stderr
    assert _ids(ao("ao", "list", "--all", cwd=repo).stdout) == ["here1", "here2", "there"]
    assert _ids(ao("ao", "list", "--repo", other, cwd=repo).stdout) == ["there"]
    assert _ids(ao("ao", "list", cwd=repo.parent.parent).stdout) == ["here1", "here2", "there"]
    assert _ids(ao("ao", "list", "--state", "pending", cwd=repo).stdout) == ["here2"]
    res = ao("ao", "list", "--all", "--state", "live", "--json", cwd=repo)
    assert sorted(s["id"] for s in json.loads(res.stdout)["sessions"]) == ["here1", "there"]
    ao("ao", "list", "--state", "bogus", cwd=repo, rc=129)


def test_a_restore_with_conflicts_lists_as_attention_until_the_ref_is_dropped(repo, worktrees):
    wt = worktrees(repo, "c")
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "c", cwd=repo)
    commit_on(repo, "c", {"README.md": "theirs\n"})
    ao("ao-restore", "c", cwd=repo, rc=3)
    (rec,) = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert rec["state"] == "attention"
    assert ao("ao", "list", "--state", "attention", cwd=repo).stdout.startswith("c\t")
    git("update-ref", "-d", "refs/ao/preserved/c", cwd=repo)
    (rec,) = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert rec["state"] == "live"


def test_a_tab_in_a_path_is_quoted_and_z_separates_with_nul(repo, worktrees):
    wt = worktrees(repo, "tab\there", branch="tabbed", register=False)
    ao("ao", "add", wt, "--id", "tabbed", cwd=repo)
    (line,) = ao("ao", "list", cwd=repo).stdout.splitlines()
    fields = line.split("\t")
    assert len(fields) == 7
    quoted = '"' + str(wt).replace("\t", "\\t") + '"'
    assert fields[5] == quoted
    out = ao("ao", "list", "-z", cwd=repo).stdout
    assert out.endswith("\0") and "\n" not in out
    assert out.split("\0")[:-1][5] == str(wt)
    res = ao("ao-preserve", "-z", "tabbed", cwd=repo)
    fields = res.stdout.split("\0")
    assert fields[:3] == ["preserve", "ok", "tabbed"] and len(fields) == 5
    assert fields[4] == ""


def test_colour_follows_color_option_git_config_and_clicolor_force(repo, worktrees):
    worktrees(repo, "col")
    assert not ANSI.search(ao("ao", "list", cwd=repo).stdout)
    assert ANSI.search(ao("ao-preserve", "col", "-n", "--color=always", cwd=repo).stdout)
    assert ANSI.search(ao("ao-preserve", "col", "-n", cwd=repo,
                          env={"CLICOLOR_FORCE": "1"}).stdout)
    assert ANSI.search(ao("-c", "color.ui=always", "ao-preserve", "col", "-n", cwd=repo).stdout)
    assert not ANSI.search(ao("-c", "color.ao=never", "ao-preserve", "col", "-n", cwd=repo,
                              env={"CLICOLOR_FORCE": "1"}).stdout)
    # On a terminal: never, color.ui=never and NO_COLOR drop every style, bold and dim too.
    assert STYLE.search(_on_tty(["ao", "list"], repo, {}))
    for args, env in ((["ao", "list", "--color=never"], {}),
                      (["-c", "color.ui=never", "ao", "list"], {}),
                      (["ao", "list"], {"NO_COLOR": "1"})):
        out = _on_tty(args, repo, env)
        assert "col" in out and not STYLE.search(out), (args, env, out)


def test_summary_goes_to_stderr_on_a_terminal_too(repo, worktrees):
    worktrees(repo, "sum")
    out = _on_tty(["ao-preserve", "sum", "-n"], repo, {})
    assert "sum" in out and "preserve: 1 ok" not in out
    man = man_source_text((MAN / "git-ao.1").read_text())
    assert re.search(r"a summary \(counts per status\) goes to standard\s+error, on a "
                     r"terminal too", man)




COMMANDS = {"git-ao-preserve.1": (["ao-preserve"], preserve.command),
            "git-ao-restore.1": (["ao-restore"], restore.command),
            "git-ao-prune.1": (["ao-prune"], prune.command),
            "git-ao.1": (["ao", "list"], ao_cli.group.commands["list"])}


@pytest.mark.parametrize("page", sorted(COMMANDS))
def test_short_usage_is_gits_and_matches_the_page(repo, page):
    args, cmd = COMMANDS[page]
    res = ao(*args, "-h", cwd=repo, rc=129)
    assert res.stdout.startswith(f"usage: git {' '.join(args)} ") and res.stderr == ""
    for p in cmd.params:
        if isinstance(p, click.Option) and "--help" not in p.opts:
            assert re.search(rf"^    {re.escape(', '.join(sorted(p.opts, key=len)))}\b",
                             res.stdout, re.MULTILINE), (p.opts, res.stdout)
    text = man_source_text((MAN / page).read_text())
    assert re.search(r"Print a short usage on standard output, as git's own commands do\s+"
                     r"\(usage:, then one line per option\), and exit with status 129", text)


def test_list_on_a_narrow_terminal_cuts_paths_from_the_left(repo, worktrees, tmp_path):
    """At 80 columns the end of a path (the worktree's name) is what tells
    sessions apart: paths are cut from the left, ids and branches kept whole."""
    deep = tmp_path / "a-rather-long-directory" / "of-agent-worktrees" / "kept-by-the-harness"
    deep.mkdir(parents=True)
    for name in ("fix-parser", "fix-lexer"):
        git("worktree", "add", "-q", "-b", name, deep / name, cwd=repo)
        ao("ao", "add", deep / name, "--harness", "claude-code", cwd=repo)
    out = _on_tty(["ao", "list"], repo, {"COLUMNS": "80", "NO_COLOR": "1"})
    lines = [ln for ln in out.replace("\r", "").splitlines() if ln.strip()]
    assert all(len(ln) <= 80 for ln in lines), out
    for name in ("fix-parser", "fix-lexer"):
        [row] = [ln for ln in lines if ln.split()[0] == name]
        cells = row.split()
        assert cells[4] == name  # the branch, whole
        path = cells[5]
        assert path.startswith("...") and path.endswith(f"/{name}"), row
        assert str(deep / name).endswith(path[3:])
    # wide enough: the paths whole
    out = _on_tty(["ao", "list"], repo, {"COLUMNS": "250", "NO_COLOR": "1"})
    assert str(deep / "fix-parser") in out
