"""Completion as a new user meets it: the README's zsh eval lists the commands under
`git <TAB>`, session ids come with their state and branch in zsh and fish, and a
path to register never offers a repository's .git."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import ao
from tests.test_completion import FILES, GIT_BASH, ZSH_REAL, _bash, _words, sessions  # noqa: F401

# ZSH_REAL with the script of `git ao completion zsh` eval'd (file $1) instead of the
# _git-ao* files on $fpath, as the README sets it up.
ZSH_EVAL = ZSH_REAL.replace(
    '''zpty -w z "PROMPT=''; fpath=($1 \\$fpath); autoload -Uz compinit; compinit -u -D"''',
    '''zpty -w z "PROMPT=''; autoload -Uz compinit; compinit -u -D; eval \\"\\$(<$1)\\""''')

ZSH_DESCRIBED = r"""
fpath=($1 $fpath); autoload -Uz $2
_describe() { local n=$3; print -rl -- ${(P)n}; }
compadd() { print -rl -- ${(P)${@[-1]}}; }
local fn=$2; shift 2
words=("$@"); CURRENT=$#words
$fn
"""


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh not installed")
def test_zsh_eval_lists_the_commands_under_git_tab(sessions, tmp_path):  # noqa: F811
    assert ZSH_EVAL != ZSH_REAL
    script = tmp_path / "eval.zsh"
    script.write_text(ao("ao", "completion", "zsh", cwd=sessions).stdout)

    def z(line):
        out = tmp_path / "zsh.out"
        out.unlink(missing_ok=True)
        subprocess.run(["zsh", "-f", "-c", ZSH_EVAL, "drv", str(script), str(out), line],
                       cwd=sessions, capture_output=True, timeout=120, check=False)
        return sorted(set(out.read_text().split())) if out.exists() else []

    assert z("git ao-pr") == ["ao-preserve", "ao-prune"]
    assert z("git ao-restore ") == ["gamma"]


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh not installed")
def test_zsh_and_fish_describe_session_ids_with_state_and_branch(sessions):  # noqa: F811
    res = subprocess.run(["zsh", "-f", "-c", ZSH_DESCRIBED, "drv", str(FILES / "zsh"),
                          "_git-ao", "ao", "show", ""], cwd=sessions, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert {"alpha:live, alpha", "gamma:pending, gamma"} <= set(res.stdout.splitlines())
    if shutil.which("fish"):
        script = f"source {FILES / 'fish' / 'git-ao.fish'}; complete -C 'git ao show '"
        res = subprocess.run(["fish", "--no-config", "-c", script],
                             cwd=sessions, capture_output=True, text=True, check=False)
        assert "gamma\tpending, gamma" in res.stdout.splitlines(), res.stdout


def test_a_path_to_register_never_offers_dot_git(sessions):  # noqa: F811
    os.mkdir(sessions / "sub")
    if GIT_BASH and shutil.which("bash"):
        got = _words(_bash("git ao add ", sessions))
        assert "sub/" in got and ".git/" not in got, got
    if shutil.which("fish"):
        script = f"source {FILES / 'fish' / 'git-ao.fish'}; complete -C 'git ao add '"
        res = subprocess.run(["fish", "--no-config", "-c", script],
                             cwd=sessions, capture_output=True, text=True, check=False)
        got = _words(res.stdout)
        assert "sub/" in got and ".git/" not in got, res.stdout
