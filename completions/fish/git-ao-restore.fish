# Loaded by name for git-ao-restore; the completion lives in git-ao.fish beside this file.
source (status dirname)/git-ao.fish
