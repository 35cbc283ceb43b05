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
