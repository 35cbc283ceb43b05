"""The restore workflow: put each session's worktree back at its path and re-apply its work."""
