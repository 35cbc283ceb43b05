"""A refusal an import reported before, said again as a note: each source's notes
are kept in the store (`import_notes`), one per key (a file, a row, a session)."""

from __future__ import annotations

from git_ao.batch import log_failure
from git_ao.context import Context
from git_ao.importers.names import REPORTED_BEFORE
from git_ao.outcome import Action, Outcome, Status


def said_once(ctx: Context, source: str, key: str, o: Outcome,
              notes: dict[str, tuple[str, int]] | None = None) -> Outcome:
    """A refusal already reported for this source and key (same reason) is a note,
    not a failure; anything else clears the note. notes: the source's notes read
    beforehand, else read here."""
    notes = ctx.store.import_notes(source) if notes is None else notes
    if o.status != Status.REFUSED:
        if key in notes and not ctx.dry_run:
            ctx.store.drop_import_note(source, key)
        return o
    known = notes.get(key)
    if known is not None and known[0] == o.message:
        return Outcome(o.session_id, Action.IMPORT, Status.NOTHING,
                       f"{REPORTED_BEFORE}: {o.message}", o.data, said_before=True)
    if not ctx.dry_run:
        ctx.store.note_import(source, key, o.message)
    log_failure(ctx, o)
    return o
