"""The `--tool` names and their adapter modules (imports next to nothing: completion
reads it)."""

from git_ao.store.states import IMPORT_TOOLS

# --tool name -> its adapter module under git_ao.importers.
TOOLS = {
    "claude-code": "claude_code",
    "claude-squad": "claude_squad",
    "codex": "codex",
    "conductor": "conductor",
    "crystal": "crystal",
    "vibe-kanban": "vibe_kanban",
}
AO = "ao"  # the ao daemon, read by importers/daemon.py
NAMES = (AO, *sorted(TOOLS))
assert NAMES == IMPORT_TOOLS  # the names settings check import.tools against

# How a refusal already reported (remembered in import_notes) is said again, with
# status nothing: `git ao import` prints it; the import before a preserve --all or
# a restore (import.tools) does not, so a boot's journal stays quiet.
REPORTED_BEFORE = "still not importable (reported before)"
