"""The shell completion scripts: small bridges from git's completers to click.

Click's parameters are the single source of truth: every script asks the
command itself (`_GIT_AO_PRESERVE_COMPLETE=bash_complete git-ao-preserve ...`,
click's protocol) for the candidates, so options, choices and session ids
(read from the database by the commands' shell_complete callbacks) never drift.

The files under `completions/` in the source tree are exactly what `script()`
returns (a test checks it); regenerate them with
`python -m git_ao.cli.completion completions`.
"""

from __future__ import annotations

import os
import sys

COMMANDS = {
    "git-ao": "list, show, add, kill, resolve, forget sessions; config, log, doctor, import",
    "git-ao-preserve": "save sessions' uncommitted work and take their worktrees away",
    "git-ao-restore": "bring preserved sessions back at their paths, on their branches",
    "git-ao-prune": "clean up git-ao records, refs and trash without losing work",
}
SHELLS = ("bash", "zsh", "fish")

def id_candidates(state: str, incomplete: str,
                  taken: set[str]) -> list[tuple[str, str]]:
    """(id, its state and branch) of the sessions in `state` ('live', 'pending' or
    'all') whose id starts with `incomplete` and is not in `taken`: what a TAB
    offers for an id, through click or the light entry (entry.py)."""
    from git_ao.store.datadir import completion_rows
    return [(i, about) for i, about in completion_rows(state)
            if i.startswith(incomplete) and i not in taken]


_BASH = r"""# bash completion for git ao, git ao-preserve, git ao-restore, git ao-prune.
# Printed by `git ao completion bash`. git's own completion calls _git_ao_preserve
# for `git ao-preserve <TAB>`; the candidates come from the command's click
# parameters (options, choices, session ids from the git-ao database).

__git_ao_click ()
{
	local prog=$1 i
	local -a args=()
	for ((i = __git_cmd_idx + 1; i < cword; i++)); do
		args+=("${words[i]}")
	done
	local var="_${prog^^}_COMPLETE"
	var=${var//-/_}
	local line="$prog ${args[*]} $cur"
	local response
	response=$(env COMP_WORDS="$line" COMP_CWORD=$((${#args[@]} + 1)) \
		"$var=bash_complete" "$prog" 2>/dev/null) || return 0
	local IFS=$'\n' entry type value
	local -a out=()
	for entry in $response; do
		type=${entry%%,*}
		value=${entry#*,}
		case $type in
		plain) out+=("$value ") ;;
		dir)
			local d
			COMPREPLY=()
			for d in $(compgen -d -S / -- "$cur"); do
				# a repository's .git is never a worktree to name
				[[ $d == .git/ || $d == */.git/ ]] || COMPREPLY+=("$d")
			done
			return 0 ;;
		file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
		esac
	done
	COMPREPLY=("${out[@]}")
}

_git_ao () { __git_ao_click git-ao; }
_git_ao_preserve () { __git_ao_click git-ao-preserve; }
_git_ao_restore () { __git_ao_click git-ao-restore; }
_git_ao_prune () { __git_ao_click git-ao-prune; }

# The dashed forms (git-ao-preserve <TAB>) go through git's own wrapper too.
if declare -F __git_complete >/dev/null || { declare -F __load_completion >/dev/null &&
	__load_completion git && declare -F __git_complete >/dev/null; }; then
	__git_complete git-ao _git_ao
	__git_complete git-ao-preserve _git_ao_preserve
	__git_complete git-ao-restore _git_ao_restore
	__git_complete git-ao-prune _git_ao_prune
fi
"""

_ZSH_HELPER = r"""(( $+functions[__git_ao_click] )) || __git_ao_click() {
  # Ask the command (click) for candidates; words[1] is the command word.
  local prog=$1 var="_${${1//-/_}:u}_COMPLETE"
  local -a response plain described
  local type key descr
  response=("${(@f)$(env COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT-1)) \
    $var=zsh_complete $prog 2>/dev/null)}")
  for type key descr in ${response}; do
    case $type in
      plain) if [[ $descr == _ ]]; then plain+=("$key"); else described+=("$key:$descr"); fi ;;
      dir) _path_files -/ -F '(.git */.git)' ;;
      file) _path_files -f ;;
    esac
  done
  (( $#described )) && _describe -V unsorted described -U
  (( $#plain )) && compadd -U -V unsorted -a plain
  return 0
}
"""

_FISH = r"""# fish completion for git ao, git ao-preserve, git ao-restore, git ao-prune.
# Printed by `git ao completion fish`. fish 3.6 does not forward `git ao-preserve`
# to git-ao-preserve's completions (fish-shell#9457), so this file also registers
# them for git itself; source it from config.fish: git ao completion fish | source
# The candidates come from the commands' click parameters.

function __git_ao_click --argument-names prog
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l sub (string replace -r '^git-' '' -- $prog)
    set -l args
    set -l seen 0
    for t in $tokens
        if test $seen = 1
            set -a args $t
        else if test "$t" = "$sub"; or test "$t" = "$prog"
            set seen 1
        end
    end
    set -l var _(string upper (string replace -a -- - _ $prog))_COMPLETE
    for line in (env $var=fish_complete COMP_WORDS="$prog $args $cur" COMP_CWORD="$cur" $prog 2>/dev/null)
        set -l meta (string split -m 1 -- , $line)
        switch $meta[1]
            case dir
                __fish_complete_directories $cur | string match -rv '(^|/)\.git/(\t|$)'
            case file
                __fish_complete_path $cur
            case plain
                echo $meta[2]
        end
    end
end

"""


def _zsh_file(prog: str) -> str:
    return (f"#compdef {prog}\n#description {COMMANDS[prog]}\n\n" + _ZSH_HELPER
            + f"\n__git_ao_click {prog}\n")


def _zsh_source() -> str:
    out = ["# zsh completion for git ao, git ao-preserve, git ao-restore, git ao-prune.",
           "# Printed by `git ao completion zsh`: eval it after compinit, or install the",
           "# _git-ao* files into a directory on $fpath so that `git ao<TAB>` lists them.",
           _ZSH_HELPER]
    for prog in COMMANDS:
        out.append(f"_{prog}() {{ __git_ao_click {prog}; }}")
    for prog in COMMANDS:
        out.append(f"compdef _{prog} {prog}")
    # Without the _git-ao* files on $fpath, _git lists a third-party command under
    # `git <TAB>` only through its user-commands style: add ours to the user's.
    entries = " ".join(_zsh_quote(f"{prog[4:]}:{about}") for prog, about in COMMANDS.items())
    out += ["() {",
            "  local -a cmds",
            "  zstyle -a ':completion:*:*:git:*' user-commands cmds",
            f"  cmds+=({entries})",
            "  zstyle ':completion:*:*:git:*' user-commands ${(u)cmds}",
            "}"]
    return "\n".join(out) + "\n"


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _fish_source() -> str:
    lines = [_FISH]
    for prog in COMMANDS:
        sub = prog[len("git-"):]
        lines.append(f"complete -c {prog} -f -a '(__git_ao_click {prog})'")
        lines.append(f"complete -c git -f -n '__fish_seen_subcommand_from {sub}' "
                     f"-a '(__git_ao_click {prog})'")
    return "\n".join(lines) + "\n"


def script(shell: str, prog: str | None = None) -> str:
    """The completion script for `shell` ('bash', 'zsh' or 'fish').

    prog: for zsh, the command of one autoloadable `_git-ao*` file (None: the
    script for eval). Raises KeyError for an unknown shell."""
    if shell == "bash":
        return _BASH
    if shell == "zsh":
        return _zsh_file(prog) if prog else _zsh_source()
    if shell == "fish":
        return _fish_source()
    raise KeyError(shell)


def files() -> dict[str, str]:
    """Relative path under completions/ -> text, for every file the wheel installs.

    bash-completion and fish load a file by the command's name, so each dashed
    command gets one; all but git-ao's only source git-ao's file beside them."""
    out = {"bash/git-ao": script("bash"), "fish/git-ao.fish": script("fish")}
    for prog in COMMANDS:
        out[f"zsh/_{prog}"] = script("zsh", prog)
        if prog != "git-ao":
            out[f"bash/{prog}"] = ('# Loaded by name for "git ' + prog[4:] + '"; the completion '
                                   'lives in git-ao beside this file.\n'
                                   '. "${BASH_SOURCE[0]%/*}/git-ao"\n')
            out[f"fish/{prog}.fish"] = (f"# Loaded by name for {prog}; the completion lives in "
                                        "git-ao.fish beside this file.\n"
                                        "source (status dirname)/git-ao.fish\n")
    return out


def main(argv: list[str]) -> None:
    """`python -m git_ao.cli.completion DIR`: write every completion file under DIR."""
    root = argv[0] if argv else "completions"
    for rel, text in files().items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
