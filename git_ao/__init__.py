"""git-ao: preserve and restore AI coding-agent sessions that live in git linked worktrees."""

__version__ = "0.1.0"
