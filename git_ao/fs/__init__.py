"""The file system under a worktree, read without git: the walk and the repositories nested inside."""
