"""Man pages: every click option documented, nothing documented that does not exist,
lint-clean with groff and mandoc, rendered by man."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from git_ao.cli import ao, preserve, prune, restore
from tests.support import man_source_text

MAN = Path(__file__).resolve().parent.parent / "man"
PAGES = {"git-ao.1": ao.group, "git-ao-preserve.1": preserve.command,
         "git-ao-restore.1": restore.command, "git-ao-prune.1": prune.command}
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT",
            "FILES", "EXAMPLES", "SEE ALSO")


def _options(cmd):
    out = set()
    for p in cmd.params:
        if isinstance(p, click.Option):
            out.update(p.opts + p.secondary_opts)
    for sub in getattr(cmd, "commands", {}).values():
        out |= _options(sub)
    return out




def _section(text, name):
    m = re.search(rf"^\.SH {name}\n(.*?)(?=^\.SH |\Z)", text, re.MULTILINE | re.DOTALL)
    return m.group(1) if m else ""


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_option_documented_and_every_documented_option_exists(page):
    text = (MAN / page).read_text()
    plain = man_source_text(text)
    for sec in SECTIONS:
        assert re.search(rf"^\.SH {sec}$", text, re.MULTILINE), f"{page} lacks {sec}"
    options = _options(PAGES[page])
    for opt in options:
        assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", plain), \
            f"{opt} missing from {page}"
    # Options of git's own commands quoted as \fBgit stash show --stat\fR are not ours.
    ours = re.sub(r"\\fBgit (?:[^\\]|\\-)*\\fR", "",
                  _section(text, "OPTIONS") + _section(text, "COMMANDS"))
    documented = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", man_source_text(ours)))
    assert documented - options - {"--help"} == set(), page


def test_examples_cover_the_scenarios():
    text = man_source_text((MAN / "git-ao.1").read_text())
    for needle in ("Shutdown script", "Boot script", "systemd", "Manual use",
                   "Recovering from a conflict"):
        assert needle in text


@pytest.mark.parametrize("page", sorted(PAGES))
def test_groff_is_silent(page):
    if not shutil.which("groff"):
        pytest.skip("groff not installed")
    res = subprocess.run(["groff", "-ww", "-z", "-man", MAN / page], capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0 and res.stderr == ""


@pytest.mark.parametrize("page", sorted(PAGES))
def test_mandoc_lint_is_clean(page):
    if not shutil.which("mandoc"):
        pytest.skip("mandoc not installed")
    res = subprocess.run(["mandoc", "-T", "lint", MAN / page], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0 and res.stdout + res.stderr == ""


def test_man_renders_the_page():
    if not shutil.which("man"):
        pytest.skip("man not installed")
    res = subprocess.run(["man", "--warnings", "-l", MAN / "git-ao-preserve.1"],
                         capture_output=True, text=True,
                         env=dict(os.environ, MANPAGER="cat", MANWIDTH="80"), check=False)
    assert res.returncode == 0 and res.stderr == ""
    assert "--keep-worktree" in res.stdout.replace("\u2010", "-")


# The modules whose code decides each command's exit status: the command's own and
# the bodies and helpers it runs (app.finish, SignalStop, ExitStatus members).
_STATUS_CODE = {"git-ao.1": ("ao", "bodies:list_sessions", "bodies:checkpoint"),
                "git-ao-preserve.1": ("preserve", "remote_opts:after_preserve"),
                "git-ao-restore.1": ("restore", "bodies:restore", "bodies:_restore_at",
                                     "remote_opts:restore_from", "remote_opts:retry_pushes"),
                "git-ao-prune.1": ("prune", "remote_opts:prune_remote")}
SIGNALLED = "128+signal"


def _code_statuses(modules):
    """The statuses the commands of `modules` (git_ao.cli, or module:function) can
    exit with: those every
    command has (common.run: 0, 1 for an AoError, 128 fatal, 129 usage, 130 for
    SIGINT), 3 when it returns `finish`'s worst outcome status, every ExitStatus
    named, and 128 + the signal when it stops a batch on SIGTERM/SIGINT."""
    import importlib
    import inspect

    from git_ao.errors import ExitStatus
    got = {0, 1, 128, 129, 130}
    for name in modules:
        module, _, function = name.partition(":")
        code = importlib.import_module(f"git_ao.cli.{module}")
        src = inspect.getsource(getattr(code, function) if function else code)
        if re.search(r"\bfinish\(", src):
            got.add(3)
        got |= {int(ExitStatus[m]) for m in re.findall(r"ExitStatus\.([A-Z]+)\b", src)}
        if "SignalStop()" in src:
            got.add(SIGNALLED)
    return got


def _page_statuses(text):
    """The statuses a page's EXIT STATUS lists (`.B N`, and `128 + signal`, which
    holds 130)."""
    sec = _section(text, "EXIT STATUS")
    got = {int(n) for n in re.findall(r"^\.B (\d+)$", sec, re.MULTILINE)}
    if re.search(r"^\\fB128\\fR \+ \\fIsignal\\fR$", sec, re.MULTILINE):
        got |= {SIGNALLED, 130}
    return got


@pytest.mark.parametrize("page", sorted(PAGES))
def test_exit_status_lists_exactly_what_the_code_exits_with(page):
    """Every status the command can exit with is in its page's EXIT STATUS, and
    nothing else is (git-ao-prune(1) once left out the 3 of a pending push)."""
    code = _code_statuses(_STATUS_CODE[page])
    if SIGNALLED in code:
        code.add(130)  # SIGINT is one of the signals
    assert _page_statuses((MAN / page).read_text()) == code, page


def _leaves(cmd, path=()):
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield " ".join(path), {o for p in cmd.params if isinstance(p, click.Option)
                               for o in p.opts}


def test_git_ao_names_each_subcommand_taking_z_and_n_as_its_h_does():
    """git-ao(1)'s SYNOPSIS names the subcommands that take -z and those whose -n is
    a dry run: exactly those whose -h lists them."""
    text = " ".join(man_source_text(_section((MAN / "git-ao.1").read_text(),
                                             "SYNOPSIS")).split())
    z = re.search(r"print records \(([^)]*)\) take -z", text)
    n = re.search(r"change anything \(([^)]*)\) take -n", text)
    assert z and n, text
    listed_z = {w.strip() for w in z.group(1).split(",")}
    listed_n = {w.strip().replace(" --recover", "") for w in n.group(1).split(",")}
    leaves = dict(_leaves(ao.group))
    assert listed_z == {c for c, o in leaves.items() if "-z" in o}
    assert listed_n == {c for c, o in leaves.items() if "--dry-run" in o}
