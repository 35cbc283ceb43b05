# fish completion for git ao, git ao-preserve, git ao-restore, git ao-prune.
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


complete -c git-ao -f -a '(__git_ao_click git-ao)'
complete -c git -f -n '__fish_seen_subcommand_from ao' -a '(__git_ao_click git-ao)'
complete -c git-ao-preserve -f -a '(__git_ao_click git-ao-preserve)'
complete -c git -f -n '__fish_seen_subcommand_from ao-preserve' -a '(__git_ao_click git-ao-preserve)'
complete -c git-ao-restore -f -a '(__git_ao_click git-ao-restore)'
complete -c git -f -n '__fish_seen_subcommand_from ao-restore' -a '(__git_ao_click git-ao-restore)'
complete -c git-ao-prune -f -a '(__git_ao_click git-ao-prune)'
complete -c git -f -n '__fish_seen_subcommand_from ao-prune' -a '(__git_ao_click git-ao-prune)'
