"""A whole session from a user's shell, every byte of stdout and stderr asserted.

The output of these commands is deterministic once the temporary paths,
object ids and times are replaced by placeholders (`_plain`), so the test
compares all of it: a changed word, a lost line or a stray hint fails here.
"""

from __future__ import annotations

import re

from tests.support import ao

_OID = re.compile(r"\b[0-9a-f]{40}\b|\b[0-9a-f]{12}\b")
_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")
_TRASH = re.compile(r"/trash/([^/.]+)\.\d+/")
_BYTES = re.compile(r"\b\d+ bytes\b")


def _plain(text: str, repo, tmp_path) -> str:
    text = text.replace(str(tmp_path), "<tmp>").replace(str(repo), "<repo>")
    text = _TRASH.sub(r"/trash/\1.<ns>/", text)
    return _BYTES.sub("<n> bytes", _TIME.sub("<time>", _OID.sub("<oid>", text)))


def _run(repo, tmp_path, *args: str) -> str:
    res = ao(*args, cwd=repo, rc=None)
    return (f"$ git {' '.join(args)}\n{res.stdout}" + "".join(
        f"2> {ln}\n" for ln in res.stderr.splitlines()) + f"[{res.returncode}]\n")


TRANSCRIPT = """\
$ git ao list
alpha\tworker\t-\tlive\talpha\t<tmp>/wt/alpha\t-
beta\tworker\t-\tlive\tbeta\t<tmp>/wt/beta\t-
[0]
$ git ao-preserve beta -n
preserve\tok\tbeta\twould preserve and remove: 0 changed, 0 untracked, 0 ignored
2> preserve: 1 ok
[0]
$ git ao-preserve alpha
preserve\tok\talpha\t1 changed, 1 untracked saved in <oid>; worktree removed
2> preserve: 1 ok
[0]
$ git ao list
alpha\tworker\t-\tpending\talpha\t<tmp>/wt/alpha\trefs/ao/preserved/alpha <oid>
beta\tworker\t-\tlive\tbeta\t<tmp>/wt/beta\t-
[0]
$ git ao show alpha
id:                       alpha
kind:                     worker
harness:                  -
state:                    pending
branch:                   alpha
workspace_path:           <tmp>/wt/alpha
repo:                     <repo>/.git
agent_session_id:         -
preserve_ref:             refs/ao/preserved/alpha
preserved_commit:         <oid>
detached:                 false
saved_at:                 <time>
restored_at:              -
created_at:               <time>
tool:                     -
tool_id:                  -
tmux_session:             -
group:                    -
session_mode:             -
provider_conversation_id: -
holds_less_than:          -
removed_by:               -
daemon_refs:              -
trash:                    <tmp>/aodata/trash/alpha.<ns>/worktree (preserved, <n> bytes, 0 ignored: -)
history:                  1 entry, <n> bytes only it keeps (refs/ao/history/alpha; git ao history alpha)

 README.md | 2 +-
 new.txt   | 1 +
 2 files changed, 2 insertions(+), 1 deletion(-)
[0]
$ git ao-restore -n
restore\tok\talpha\twould put the worktree back at <tmp>/wt/alpha from the trash (<tmp>/aodata/trash/alpha.<ns>/worktree)
2> restore: 1 ok
[0]
$ git ao-restore
restore\tok\talpha\trestored at <tmp>/wt/alpha from the trash
2> restore: 1 ok
[0]
$ git ao-restore
2> nothing to restore: no pending sessions
[0]
$ git ao-prune -n
2> nothing to prune
[0]
$ git ao kill beta
kill\tok\tbeta\tterminated; <tmp>/wt/beta moved to the trash (<tmp>/aodata/trash/beta.<ns>/worktree; git ao-prune deletes it)
2> kill: 1 ok
[0]
$ git ao list
alpha\tworker\t-\tlive\talpha\t<tmp>/wt/alpha\t-
beta\tworker\t-\tterminated\tbeta\t<tmp>/wt/beta\t-
[0]
$ git ao forget beta
forget\tok\tbeta\trecord dropped; kept: the trash copy <tmp>/aodata/trash/beta.<ns>/worktree
2> forget: 1 ok
[0]
$ git ao-preserve -q -n alpha
[0]
$ git ao show nope
2> error: no session 'nope' (see 'git ao list')
[1]
$ git ao add <repo>
2> error: '<repo>' is the main worktree of its repository; sessions live in linked worktrees (git worktree add)
[1]
"""


def test_a_whole_session_prints_exactly_this(repo, worktrees, tmp_path):
    wt = worktrees(repo, "alpha")
    (wt / "new.txt").write_text("new\n")
    (wt / "README.md").write_text("changed\n")
    worktrees(repo, "beta")
    steps = [("ao", "list"), ("ao-preserve", "beta", "-n"), ("ao-preserve", "alpha"),
             ("ao", "list"), ("ao", "show", "alpha"), ("ao-restore", "-n"), ("ao-restore",),
             ("ao-restore",), ("ao-prune", "-n"), ("ao", "kill", "beta"), ("ao", "list"),
             ("ao", "forget", "beta"), ("ao-preserve", "-q", "-n", "alpha"),
             ("ao", "show", "nope"), ("ao", "add", str(repo))]
    got = "".join(_run(repo, tmp_path, *s) for s in steps)
    assert _plain(got, repo, tmp_path) == TRANSCRIPT


def test_a_usage_error_is_one_line_in_gits_words_then_the_short_usage(repo):
    """The usage after the error line is exactly what -h prints; the line says
    what git's parse-options says of the same mistake, not click's words."""
    for argv, usage_of, line in [
        (("ao-preserve", "--bogus"), 1, "error: unknown option 'bogus'"),
        (("ao-preserve", "-x"), 1, "error: unknown switch 'x'"),
        (("ao", "list", "--bogus=1"), 1, "error: unknown option 'bogus'"),
        (("ao", "list", "--state", "bogus"), 2,
         ("error: option 'state' expects one of live, attention, pending, terminated, "
          "not 'bogus'")),
        (("ao", "list", "--state"), 1, "error: option 'state' requires a value"),
        (("ao-preserve", "--timeout", "-5"), 2,
         "error: option 'timeout' expects a number of seconds, 0 or more, not '-5'"),
        (("ao-preserve", "--timeout", "nan"), 2,
         "error: option 'timeout' expects a number of seconds, 0 or more, not 'nan'"),
        (("ao-restore", "-j", "0"), 2,
         "error: option 'jobs' expects a whole number from 1 to 64, not '0'"),
        (("ao", "log", "-n", "x"), 2,
         "error: option 'max-count' expects a whole number, 1 or more, not 'x'"),
        (("ao", "add", "--kind", "boss"), 2,
         "error: option 'kind' expects one of worker, orchestrator, not 'boss'"),
        (("ao", "list", "--color", "sometimes"), 2,
         "error: option 'color' expects one of always, never, auto, not 'sometimes'"),
        (("ao", "completion", "tcsh"), 1,
         "error: <shell> expects one of bash, zsh, fish, not 'tcsh'"),
        (("ao", "show"), 0, "error: <id> is required"),
        (("ao", "show", "a", "b"), 2, "error: too many arguments"),
        (("ao", "bogus"), 1, "error: unknown subcommand: 'bogus'"),
    ]:
        res = ao(*argv, cwd=repo, rc=129)
        usage = ao(*argv[:len(argv) - usage_of], "-h", cwd=repo, rc=129)
        assert res.stdout == ""
        assert res.stderr == f"{line}\n{usage.stdout}", argv
