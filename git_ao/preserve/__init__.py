"""The preserve workflow: capture each session, commit its record, then take its worktree away."""
