"""The `--tool` names and their adapter modules (imports nothing: completion reads it)."""

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
