"""The database schema, as the list of migrations that build it.

`PRAGMA user_version` holds how many have run; the store runs the rest, in
order, each in one transaction, and refuses a database newer than this list.
A migration is never edited once released: a change is a new one at the end.
"""

# Each entry upgrades the schema from version N-1 to N. Append, never edit.
MIGRATIONS = [
    # 1: sessions and their saves.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('worker', 'orchestrator')),
        harness TEXT NOT NULL DEFAULT '',
        repo TEXT NOT NULL,
        branch TEXT,
        workspace_path TEXT NOT NULL,
        agent_session_id TEXT,
        prompt TEXT,
        terminated INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE session_worktrees (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        repo TEXT NOT NULL,
        worktree_path TEXT NOT NULL,
        branch TEXT,
        head TEXT,
        detached INTEGER NOT NULL,
        preserve_ref TEXT NOT NULL,
        preserved_commit TEXT,
        worktree_config TEXT,
        saved_at INTEGER NOT NULL,
        restored_at INTEGER
    );
    """,
    # 2: a restore that left the work in the ref (needs_attention), and the start of
    # a restore, to recognise one a kill interrupted (restore_started_at, ns).
    """
    ALTER TABLE session_worktrees ADD COLUMN needs_attention INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE session_worktrees ADD COLUMN restore_started_at INTEGER
    """,
    # 3: facts imported from the ao daemon: the daemon session a repository's worktree
    # belongs to (group_id: one daemon session of a workspace spans several
    # worktrees), the chat-mode resume facts, and the daemon rows an import could
    # not register (said once, not on every run).
    """
    ALTER TABLE sessions ADD COLUMN group_id TEXT;
    ALTER TABLE sessions ADD COLUMN session_mode TEXT;
    ALTER TABLE sessions ADD COLUMN provider_conversation_id TEXT;
    CREATE TABLE import_notes (
        source TEXT NOT NULL,
        daemon_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        noted_at INTEGER NOT NULL,
        PRIMARY KEY (source, daemon_id)
    )
    """,
    # 4: preserve refs to replicate to a git remote (git_ao/remote/pushes.py): per session and
    # remote, the commit the remote should hold ('' for none: a delete) and the one
    # it was last seen holding ('' for none: the lease of the next push). A row
    # whose two differ is a push still to do; error says why the last try failed.
    """
    CREATE TABLE IF NOT EXISTS remote_pushes (
        session_id TEXT NOT NULL,
        remote TEXT NOT NULL,
        repo TEXT NOT NULL,
        want TEXT NOT NULL,
        have TEXT NOT NULL,
        branch TEXT,
        error TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, remote)
    )
    """,
    # 5: whether a save is pending, and whether its preserve ref is still its own, as
    # explicit states: comparing saved_at with restored_at (wall-clock times) called
    # a restored session pending when the clock was fast at shutdown and right at
    # boot. Existing rows take the value the old rule gave them.
    """
    ALTER TABLE session_worktrees ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE session_worktrees ADD COLUMN ref_held INTEGER NOT NULL DEFAULT 0;
    UPDATE session_worktrees SET
        pending = (restored_at IS NULL OR saved_at > restored_at),
        ref_held = (preserve_ref != '' AND (restored_at IS NULL OR saved_at >= restored_at))
    """,
    # 6: facts imported from the tool that made a session (git ao import --tool): the
    # tool's name, its own id for the session, and the tmux session it ran the agent in.
    """
    ALTER TABLE sessions ADD COLUMN tool TEXT;
    ALTER TABLE sessions ADD COLUMN tool_id TEXT;
    ALTER TABLE sessions ADD COLUMN tmux_session TEXT
    """,
    # 7: per session and remote, the tip of the session's history this machine last
    # pushed there (or found there): the lease of the push that replaces a chain
    # retention rewrote, so no other machine's chain is ever replaced
    # (git_ao/remote/pushes.py).
    """
    CREATE TABLE IF NOT EXISTS remote_histories (
        session_id TEXT NOT NULL,
        remote TEXT NOT NULL,
        pushed TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, remote)
    )
    """,
    # 8: the save of an earlier capture of the same preserve (before the agents were
    # stopped, or before a late write) holding what the recorded save lacks, so the
    # restore, list and show name the history entry that brings it back.
    """
    ALTER TABLE session_worktrees ADD COLUMN holds_less_than TEXT
    """,
    # 9: the tool whose own removal of the worktree made the save (claude-code: its
    # WorktreeRemove hook), NULL for any other: still pending, but the restore of
    # every pending session (the boot's) leaves it; `git ao-restore ID` brings it back.
    """
    ALTER TABLE session_worktrees ADD COLUMN removed_by TEXT
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
