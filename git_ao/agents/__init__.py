"""Processes tied to a worktree: finding them, stopping them for a shutdown, relaunching agents after a restore."""
