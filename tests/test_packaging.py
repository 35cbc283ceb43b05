"""Packaging: git-ao's wheel installed into a fresh venv (by pipx, where there is
one, else by pip) gives working commands, the man pages (opened by `git
ao-preserve --help` through git) and the completion files under share/.

One wheel and one venv for the whole run (pip fetches the dependencies, so this
needs the package index or pip's cache)."""

import os
import shutil
import subprocess
import sys
import venv

import pytest

from git_ao import __version__
from git_ao.cli import completion
from tests.support import ROOT, built_once, venv_with

PAGES = ("git-ao.1", "git-ao-preserve.1", "git-ao-restore.1", "git-ao-prune.1")


@pytest.fixture(scope="session")
def installed(shared_temp, wheel):
    """git-ao's wheel installed, not editable, with its dependencies from the package
    index; returns the venv's directory.

    With pipx where there is one, as the README installs it: that venv then serves
    the pipx test too. Else a venv pip installs into. Built once per run, shared
    by the xdist workers (`built_once`)."""
    def build(base):
        if shutil.which("pipx"):
            # A pipx that has run before: its shared libraries (pip) are there and
            # fresh, so it does not fetch and reinstall pip, setuptools and wheel.
            venv.EnvBuilder(with_pip=True).create(base / "pipx" / "shared")
            res = subprocess.run(["pipx", "install", str(wheel)], env=_pipx_env(base),
                                 capture_output=True, text=True, check=False)
        else:
            res = venv_with(base / "venv", str(wheel), home=base)
        if res.returncode != 0:
            pytest.fail(f"install failed:\n{res.stdout}\n{res.stderr}")
    base = built_once(shared_temp, "pkg-installed", build)
    return base / "pipx" / "venvs" / "git-ao" if (base / "pipx").is_dir() else base / "venv"


def _pipx_env(base):
    env = _env(base, PIPX_HOME=str(base / "pipx"), PIPX_BIN_DIR=str(base / "bin"),
               PIPX_MAN_DIR=str(base / "share" / "man"), PIPX_DEFAULT_PYTHON=sys.executable,
               HOME=str(base), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["PATH"] = f"{base / 'bin'}:{os.environ['PATH']}"
    return env


def _env(venv_dir, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "PYTHONPATH")}
    env["PATH"] = f"{venv_dir / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    env.update(extra)
    return env


@pytest.mark.slow
def test_man_pages_and_completions_land_under_share(installed):
    share = installed / "share"
    for page in PAGES:
        assert (share / "man" / "man1" / page).read_bytes() == (ROOT / "man" / page).read_bytes()
    for prog in completion.COMMANDS:
        assert (share / "bash-completion" / "completions" / prog).is_file()
        assert (share / "zsh" / "site-functions" / f"_{prog}").is_file()
        assert (share / "fish" / "vendor_completions.d" / f"{prog}.fish").is_file()


def test_commands_work_through_git(installed, repo):
    env = _env(installed)
    res = subprocess.run(["git", "ao", "--version"], cwd=repo, env=env, capture_output=True,
                         text=True, check=False)
    assert res.stdout == f"git-ao version {__version__}\n"
    res = subprocess.run(["git", "ao", "list", "--json"], cwd=repo, env=env,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and '"sessions": []' in res.stdout
    res = subprocess.run(["git", "ao", "doctor"], cwd=repo, env=env, capture_output=True,
                         text=True, check=False)
    assert f"ok  man pages: {installed}/share/man/man1/git-ao-preserve.1" in res.stdout


@pytest.mark.skipif(not shutil.which("man"), reason="man not installed")
def test_git_help_opens_the_installed_man_page(installed, repo):
    env = _env(installed, MANPAGER="cat", MANWIDTH="80", PAGER="cat")
    res = subprocess.run(["git", "ao-preserve", "--help"], cwd=repo, env=env,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert "GIT-AO-PRESERVE(1)" in res.stdout and "keep" in res.stdout
    res = subprocess.run(["git", "help", "ao-restore"], cwd=repo, env=env,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and "GIT-AO-RESTORE(1)" in res.stdout


LAZY = r"""
source /usr/share/bash-completion/bash_completion
__load_completion git
COMP_LINE=$1; COMP_POINT=${#COMP_LINE}
read -r -a COMP_WORDS <<< "$COMP_LINE"; [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
__git_wrap__git_main; printf '%s\n' "${COMPREPLY[@]}"
"""


@pytest.mark.skipif(not os.path.exists("/usr/share/bash-completion/bash_completion"),
                    reason="bash-completion not installed")
def test_bash_completion_lazy_loads_from_the_venv(installed, repo, worktrees):
    worktrees(repo, "lazy")
    env = _env(installed, XDG_DATA_DIRS=f"{installed / 'share'}:/usr/share")
    res = subprocess.run(["bash", "--norc", "--noprofile", "-c", LAZY, "drv",
                          "git ao-preserve "], cwd=repo, env=env, capture_output=True,
                         text=True, check=False)
    assert res.stdout.split() == ["lazy"], res.stderr


@pytest.mark.skipif(not shutil.which("pipx"), reason="pipx not installed")
def test_pipx_install(installed, repo):
    base = installed.parents[2]
    env = _pipx_env(base)
    res = subprocess.run(["git", "ao", "--version"], cwd=repo, env=env, capture_output=True,
                         text=True, check=False)
    assert res.stdout == f"git-ao version {__version__}\n"
    assert os.path.realpath(shutil.which("git-ao", path=env["PATH"]) or "") == \
        str(installed / "bin" / "git-ao")
    share = installed / "share"
    assert (share / "bash-completion" / "completions" / "git-ao-restore").is_file()
    if not (base / "share" / "man" / "man1" / "git-ao-preserve.1").exists():
        # pipx before pypa/pipx#1047 (Debian 12's 1.1.0) links no man pages: the
        # README's MANPATH line covers it.
        env["MANPATH"] = f"{share / 'man'}:"
    if shutil.which("man"):
        res = subprocess.run(["git", "ao-preserve", "--help"], cwd=repo, capture_output=True,
                             text=True, env=dict(env, MANPAGER="cat", PAGER="cat"), check=False)
        assert "GIT-AO-PRESERVE(1)" in res.stdout, res.stderr
