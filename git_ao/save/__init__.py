"""A save: the stash-shaped commit captured from a worktree, what the worktree keeps outside it, and applying it back."""
