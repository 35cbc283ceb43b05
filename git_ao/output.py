"""How results reach a person or a program.

On a terminal: rich tables, colour and a progress bar for batches. Otherwise:
plain, stable one-line records, tab-separated, no colour:

    <action>\t<status>\t<session-id>\t<message>

With --json: one JSON document on stdout, `{"schema": 1, "command": ..., ...}`.
NO_COLOR is honoured (rich reads it). Errors go to stderr as one line.
"""

from __future__ import annotations

import json
import sys

from .outcome import Status

JSON_SCHEMA = 1

_STYLE = {Status.OK: "green", Status.NOTHING: "dim", Status.ATTENTION: "yellow",
          Status.REFUSED: "red", Status.FAILED: "red"}


class Printer:
    """Renders outcomes and listings. json_mode: print one JSON document at the end;
    quiet: print nothing but errors; verbose: show the git commands run."""

    def __init__(self, *, json_mode=False, quiet=False, verbose=False, stream=None):
        self.json_mode = json_mode
        self.quiet = quiet
        self.verbose = verbose
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() and not json_mode
        self._console = None
        self._err_console = None

    @property
    def console(self):
        if self._console is None:
            from rich.console import Console
            self._console = Console(file=self.stream, highlight=False)
        return self._console

    # ------------------------------------------------------------ messages

    def error(self, prefix, message):
        """One line on stderr: `error: ...` or `fatal: ...`."""
        sys.stderr.write(f"{prefix}: {message}\n")
        sys.stderr.flush()

    def hint(self, message):
        if not self.quiet and not self.json_mode:
            sys.stderr.write(f"hint: {message}\n")

    def trace(self, argv, cwd):
        """The -v trace of one git command, on stderr like GIT_TRACE."""
        from shlex import quote
        sys.stderr.write(f"trace: git {' '.join(quote(a) for a in argv)}  (in {cwd})\n")

    def emit_json(self, command, **payload):
        doc = {"schema": JSON_SCHEMA, "command": command}
        doc.update(payload)
        self.stream.write(json.dumps(doc, indent=2) + "\n")

    # ------------------------------------------------------------ outcomes

    def outcome(self, o):
        """One session's result, as it happens (not in JSON mode)."""
        if self.json_mode or (self.quiet and o.status in (Status.OK, Status.NOTHING)):
            return
        if self.tty:
            style = _STYLE.get(o.status, "")
            from rich.markup import escape
            self.console.print(f"[{style}]{o.status:>9}[/] [bold]{escape(o.session_id)}[/] "
                               f"{escape(o.message)}")
        else:
            msg = o.message.replace("\t", " ").replace("\n", " ")
            self.stream.write(f"{o.action}\t{o.status}\t{o.session_id}\t{msg}\n")

    def outcomes_json(self, command, outcomes, exit_status, dry_run=False):
        if not self.json_mode:
            return
        self.emit_json(command, dry_run=dry_run, exit_status=exit_status, results=[
            {"id": o.session_id, "action": o.action, "status": o.status, "message": o.message,
             **o.data} for o in outcomes])

    def summary(self, outcomes, verb):
        if self.json_mode or self.quiet or not outcomes:
            return
        # Relaunch records follow the sessions they belong to; counted apart, so
        # the sessions' counts add up to the number of sessions.
        groups: dict[str, dict[str, int]] = {}
        for o in outcomes:
            counts = groups.setdefault("relaunch" if o.action == "relaunch" else verb, {})
            counts[o.status] = counts.get(o.status, 0) + 1
        line = "; ".join(f"{name}: " + ", ".join(f"{n} {k}" for k, n in counts.items())
                         for name, counts in groups.items())
        if self.tty:
            self.console.print(f"[dim]{line}[/]")
        else:
            sys.stderr.write(line + "\n")

    def progress(self, total, label):
        """A context manager yielding `advance(outcome)`; a rich bar on a terminal for
        batches of more than a few sessions, else printing each outcome."""
        printer = self

        class _Plain:
            def __enter__(self):
                return printer.outcome

            def __exit__(self, *exc):
                return False

        if not self.tty or self.quiet or total < 4:
            return _Plain()
        from rich.progress import Progress

        class _Bar:
            def __enter__(self):
                self.p = Progress(console=printer.console, transient=True)
                self.p.__enter__()
                self.task = self.p.add_task(label, total=total)

                def advance(o):
                    printer.outcome(o)
                    self.p.advance(self.task)
                return advance

            def __exit__(self, *exc):
                return self.p.__exit__(*exc)

        return _Bar()

    # ------------------------------------------------------------ listings

    def sessions(self, records):
        """`git ao list`: a table on a terminal, tab-separated records otherwise."""
        if self.json_mode:
            self.emit_json("list", sessions=records)
            return
        cols = ("id", "kind", "harness", "state", "branch", "workspace_path", "preserved")
        rows = [(r["id"], r["kind"], r["harness"] or "-", r["state"], r["branch"] or "-",
                 r["workspace_path"], _preserved(r)) for r in records]
        if self.tty:
            from rich.table import Table
            table = Table(box=None, header_style="bold")
            for c in cols:
                table.add_column(c.replace("_", " "))
            for row in rows:
                table.add_row(*row)
            self.console.print(table)
        else:
            for row in rows:
                self.stream.write("\t".join(row) + "\n")

    def facts(self, pairs, stat_text=""):
        """`git ao show`: `key: value` lines, then the stash-style stat of the saved work."""
        width = max(len(k) for k, _ in pairs)
        for k, v in pairs:
            if isinstance(v, bool):
                v = "true" if v else "false"  # as git config and the JSON write them
            self.stream.write(f"{k + ':':<{width + 1}} {'-' if v in (None, '') else v}\n")
        if stat_text:
            self.stream.write("\n" + stat_text)


def _preserved(r) -> str:
    if r.get("preserve_ref") and r.get("preserved_commit"):
        return f"{r['preserve_ref']} {r['preserved_commit'][:12]}"
    return "-"
