"""The file system under a worktree, read without git: the walk and the repositories nested inside."""

import os


def is_empty_dir(path: str) -> bool:
    """Is `path` a directory (not a symlink to one) with nothing in it, not even a
    `.git`? False when it cannot be read."""
    try:
        return os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path)
    except OSError:
        return False
