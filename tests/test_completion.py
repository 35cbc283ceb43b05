"""Completions: bash (inside git's own completion), zsh and fish, driven for real and
non-interactively; candidates come from click and session ids from the database."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from git_ao.cli import completion
from tests.support import ao

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "completions"
GIT_BASH = next((p for p in ("/usr/share/bash-completion/completions/git",
                             "/usr/local/etc/bash_completion.d/git-completion.bash")
                 if os.path.exists(p)), None)

BASH_DRIVER = r"""
source "$GIT_COMPLETION"; source "$1"
COMP_LINE=$2; COMP_POINT=${#COMP_LINE}
read -r -a COMP_WORDS <<< "$COMP_LINE"; [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
spec=$(complete -p "${COMP_WORDS[0]}") && fn=${spec##* -F } && fn=${fn%% *}
"$fn"; printf '%s\n' "${COMPREPLY[@]}"
"""

ZSH_DRIVER = r"""
fpath=($1 $fpath); autoload -Uz $2
_describe() { local n=$3; print -rl -- ${${(P)n}%%:*}; }
compadd() { print -rl -- ${(P)${@[-1]}}; }
_path_files() { print -r -- '<files>'; }
local fn=$2; shift 2
words=("$@"); CURRENT=$#words
$fn
"""

# A child interactive zsh in a pseudo-terminal (zpty) completes LINE with git's own
# _git; compadd is wrapped to append every candidate to OUTFILE.
ZSH_REAL = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' menu no"
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; local r=$?; print -rl -- $__hits >> '"$2"'; return r; }'
zpty -w z "bindkey '^I' complete-word"
zpty -w -n z "$3"$'\t'
for i in {1..300}; do [[ -s $2 ]] && break; sleep 0.1; done
sleep 0.5
zpty -d z
"""


@pytest.fixture
def sessions(repo, worktrees):
    """Three sessions: 'alpha' and 'beta' live, 'gamma' pending."""
    for name in ("alpha", "beta", "gamma"):
        worktrees(repo, name)
    ao("ao-preserve", "gamma", cwd=repo)
    return repo


def _words(text):
    return sorted(w.split("\t")[0].strip() for w in text.splitlines() if w.strip())


def _bash(line, cwd, script=FILES / "bash" / "git-ao"):
    res = subprocess.run(["bash", "--norc", "--noprofile", "-c", BASH_DRIVER, "drv",
                          str(script), line], cwd=cwd, capture_output=True, text=True,
                         env=dict(os.environ, GIT_COMPLETION=GIT_BASH), check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_shipped_files_are_what_the_generator_and_the_command_print(repo):
    for rel, text in completion.files().items():
        assert (FILES / rel).read_text() == text, f"completions/{rel} is stale: run " \
                                                  "python -m git_ao.cli.completion completions"
    for shell in completion.SHELLS:
        assert ao("ao", "completion", shell, cwd=repo).stdout == completion.script(shell)


@pytest.mark.skipif(not GIT_BASH or not shutil.which("bash"), reason="no git bash completion")
def test_bash_inside_gits_completion(sessions, tmp_path):
    repo = sessions
    # trailing spaces come from git's `complete -o nospace`
    assert _bash("git ao-restore ", repo).split("\n")[:-1] == ["gamma "]
    assert _words(_bash("git ao-preserve ", repo)) == ["alpha", "beta"]
    assert _words(_bash("git ao show ", repo)) == ["alpha", "beta", "gamma"]
    assert _words(_bash("git ao-preserve --k", repo)) == ["--keep-worktree"]
    assert _words(_bash("git ao-restore --no", repo)) == ["--no-launch"]
    assert _words(_bash("git ao-restore --a", repo)) == ["--at"]
    assert {"history", "checkpoint"} <= set(_words(_bash("git ao ", repo)))
    assert _words(_bash("git ao checkpoint --trigger t", repo)) == ["timer"]
    assert _words(_bash("git ao history ", repo)) == ["alpha", "beta", "gamma"]
    assert _words(_bash("git ao-prune --expire 2", repo)) == ["2.weeks.ago"]
    assert {"show", "list", "config", "import"} <= set(_words(_bash("git ao ", repo)))
    assert _words(_bash("git ao config set relaunch.t", repo)) == ["relaunch.timeout"]
    assert _words(_bash("git ao add --kind o", repo)) == ["orchestrator"]
    assert _words(_bash("git ao import --tool c", repo)) == [
        "claude-code", "claude-squad", "codex", "conductor", "crystal"]
    assert _words(_bash(f"git -C {repo} ao-restore g", tmp_path)) == ["gamma"]
    assert {"ao-preserve", "ao-restore", "ao-prune"} <= set(_words(_bash("git ao", repo)))
    # the dashed commands too
    assert _words(_bash("git-ao-preserve --al", repo)) == ["--all"]
    assert _words(_bash("git-ao-restore ", repo)) == ["gamma"]


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh not installed")
def test_zsh_functions(sessions):
    def z(fn, *words):
        res = subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "drv", str(FILES / "zsh"), fn,
                              *words], cwd=sessions, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr
        return _words(res.stdout)

    # as _git calls them (words shifted: words[1] is the subcommand) and dashed
    assert z("_git-ao-restore", "ao-restore", "") == ["gamma"]
    assert z("_git-ao-preserve", "ao-preserve", "") == ["alpha", "beta"]
    assert z("_git-ao-preserve", "git-ao-preserve", "--keep") == ["--keep-worktree"]
    assert z("_git-ao", "ao", "show", "") == ["alpha", "beta", "gamma"]
    assert z("_git-ao-prune", "ao-prune", "-C", "") == ["<files>"]
    for prog in completion.COMMANDS:
        head = (FILES / "zsh" / f"_{prog}").read_text().splitlines()[:2]
        assert head[0] == f"#compdef {prog}" and head[1].startswith("#description ")


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh not installed")
def test_zsh_through_gits_own_completion(sessions, tmp_path):
    def z(line):
        out = tmp_path / "zsh.out"
        out.unlink(missing_ok=True)
        subprocess.run(["zsh", "-f", "-c", ZSH_REAL, "drv", str(FILES / "zsh"), str(out), line],
                       cwd=sessions, capture_output=True, timeout=120, check=False)
        return sorted(set(out.read_text().split())) if out.exists() else []

    assert z("git ao-restore ") == ["gamma"]
    assert z("git ao-preserve --ke") == ["--keep-worktree"]
    assert z("git ao show ") == ["alpha", "beta", "gamma"]
    assert z("git ao-pr") == ["ao-preserve", "ao-prune"]  # _git lists the _git-ao* files


@pytest.mark.skipif(not shutil.which("fish"), reason="fish not installed")
def test_fish_with_the_fallback(sessions):
    def f(line):
        res = subprocess.run(["fish", "--no-config", "-c",
                              f"source {FILES / 'fish' / 'git-ao.fish'}; complete -C '{line}'"],
                             cwd=sessions, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr
        return res.stdout

    assert _words(f("git ao-restore ")) == ["gamma"]
    assert _words(f("git ao-preserve ")) == ["alpha", "beta"]
    assert _words(f("git ao show ")) == ["alpha", "beta", "gamma"]
    out = f("git ao-preserve --ke")
    assert _words(out) == ["--keep-worktree"] and "checkpoint" in out  # click's help text
    assert _words(f("git-ao-restore --no")) == ["--no-launch"]


def test_completing_ids_imports_only_the_light_modules_and_runs_no_git(sessions):
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1", COMP_WORDS="git-ao-restore ",
               COMP_CWORD="1", _GIT_AO_RESTORE_COMPLETE="bash_complete",
               GIT_TRACE=str(sessions / "trace"))
    res = subprocess.run([shutil.which("git-ao-restore")], cwd=sessions, capture_output=True,
                         text=True, env=env, check=False)
    assert res.stdout.split() == ["plain,gamma"]
    heavy = re.findall(r"\|\s+((?:rich|json|git_ao\.(?:git|context|store\.(?:database|records)|cli\.output|restore))(?:\.\w+)*)\s*$",
                       res.stderr, re.MULTILINE)
    assert heavy == []
    assert not (sessions / "trace").exists()
    # and nothing was restored by asking
    assert "gamma\tworker\t-\tpending" in ao("ao", "list", cwd=sessions).stdout


def _shells(repo):
    """A function per shell installed: the words it offers for a line typed in `repo`."""
    shells = []
    if GIT_BASH and shutil.which("bash"):
        def bash(line):
            return _words(_bash(line, repo))
        shells.append(bash)
    if shutil.which("fish"):
        def fish(line):
            res = subprocess.run(["fish", "--no-config", "-c",
                                  f"source {FILES / 'fish' / 'git-ao.fish'}; complete -C '{line}'"],
                                 cwd=repo, capture_output=True, text=True, check=False)
            return _words(res.stdout)
        shells.append(fish)
    if shutil.which("zsh"):
        def zsh(line):
            words = line.split(" ")
            res = subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "drv", str(FILES / "zsh"),
                                  f"_git-{words[1]}", *words[1:]], cwd=repo,
                                 capture_output=True, text=True, check=False)
            return _words(res.stdout)
        shells.append(zsh)
    if not shells:
        pytest.skip("no shell to complete with")
    return shells


def test_ids_are_those_the_command_takes_with_the_options_given(sessions):
    """`--at` takes one live session (a pending one is refused), `--all` and
    `--hook-input` take none, `git ao-prune` takes ids only with --force: in every
    shell, a TAB offers what the command would accept there."""
    lines = {"git ao-restore ": ["gamma"],
             "git ao-restore --at 1 ": ["alpha", "beta"],
             "git ao-restore --at=2 b": ["beta"],
             "git ao-restore --at 1 alpha ": [],
             "git ao-preserve ": ["alpha", "beta"],
             "git ao-preserve --all ": [],
             "git ao checkpoint ": ["alpha", "beta"],
             "git ao checkpoint --all ": [],
             "git ao checkpoint --hook-input ": [],
             "git ao-prune ": [],
             "git ao-prune --force ": ["alpha", "beta", "gamma"]}
    for complete in _shells(sessions):
        got = {line: complete(line) for line in lines}
        assert got == lines, complete.__name__
    # the dashed command takes the light path for its ids, the same way
    if GIT_BASH and shutil.which("bash"):
        assert _words(_bash("git-ao-prune ", sessions)) == []


def test_remote_names_after_push_from_and_remote_in_every_shell(sessions, tmp_path):
    """As git's own completion offers remotes after `git push`: after --push,
    --from and --remote, the remotes of the repository the line runs in."""
    repo = sessions
    for name in ("origin", "backup"):
        subprocess.run(["git", "remote", "add", name, str(tmp_path / f"{name}.git")], cwd=repo,
                       check=True)
    lines = {"git ao-preserve --push ": ["backup", "origin"],
             "git ao-preserve --push b": ["backup"],
             "git ao-restore --from ": ["backup", "origin"],
             "git ao-prune --remote o": ["origin"]}
    for complete in _shells(repo):
        for line, want in lines.items():
            assert complete(line) == want, (complete.__name__, line)
    # outside a repository: nothing, and no error
    if GIT_BASH:
        assert _words(_bash("git ao-preserve --push ", tmp_path)) == []


def test_entry_numbers_after_at_newest_first_with_their_time_and_trigger(sessions, tmp_path):
    """`git ao-restore ID --at <TAB>` offers the entries of that session's history
    (1 the newest first, as `git ao history` numbers them), and in its worktree
    the session there needs no id; zsh and fish show each entry's time and
    trigger. A pending session (which --at refuses) or two ids offer nothing."""
    repo = sessions
    wt = tmp_path / "wt" / "alpha"
    for n, trigger in ((1, "timer"), (2, "hook"), (3, "checkpoint")):
        (wt / "work.txt").write_text(f"{n}\n")
        ao("ao", "checkpoint", "alpha", "--trigger", trigger, cwd=repo)
    lines = {"git ao-restore alpha --at ": ["1", "2", "3"],
             "git ao-restore alpha --at 2": ["2"],
             "git ao-restore gamma --at ": [],
             "git ao-restore alpha beta --at ": []}
    for complete in _shells(repo):
        for line, want in lines.items():
            assert complete(line) == want, (complete.__name__, line)
    for complete in _shells(wt):
        assert complete("git ao-restore --at ") == ["1", "2", "3"], complete.__name__
    env = dict(os.environ, COMP_WORDS="git-ao-restore alpha --at ", COMP_CWORD="3",
               _GIT_AO_RESTORE_COMPLETE="zsh_complete")
    res = subprocess.run([shutil.which("git-ao-restore")], cwd=repo, capture_output=True,
                         text=True, env=env, check=False)
    got = res.stdout.split("\n")
    numbers = [got[i + 1] for i in range(0, len(got) - 2, 3) if got[i] == "plain"]
    helps = [got[i + 2] for i in range(0, len(got) - 2, 3) if got[i] == "plain"]
    assert numbers == ["1", "2", "3"], res.stdout  # newest first
    assert [h.split(" ")[1] for h in helps] == ["checkpoint,", "hook,", "timer,"], helps
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ", h) for h in helps), helps
