#!/usr/bin/env bash
# git-ao demo: agent sessions in two real repositories are saved at "shutdown"
# and brought back at "boot", byte for byte. Everything happens in a throwaway
# directory with its own AO_DATA_DIR; your ~/.ao is never touched.
set -euo pipefail

command -v git-ao-preserve >/dev/null || { echo "git-ao is not on PATH (see README.md)" >&2; exit 1; }
demo=$(mktemp -d "${TMPDIR:-/tmp}/git-ao-demo.XXXXXX")
export AO_DATA_DIR="$demo/ao-data"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
say() { printf '\n== %s\n' "$*"; }

make_repo() {  # make_repo NAME STDLIB-PACKAGE...
  local repo="$demo/$1"; shift
  git init -q -b main "$repo"
  for pkg in "$@"; do cp -r "$stdlib/$pkg" "$repo/$pkg"; done
  find "$repo" -name __pycache__ -prune -exec rm -rf {} +
  printf '__pycache__/\n*.log\n' > "$repo/.gitignore"
  git -C "$repo" add -A && git -C "$repo" commit -q -m "stdlib sources"
}

# A fingerprint of everything a person would notice: HEAD, branch, index,
# status, and the bytes, mode and link target of every file that is not ignored.
fingerprint() {
  local wt=$1
  ( cd "$wt"
    git rev-parse HEAD; git symbolic-ref -q HEAD || echo detached
    git ls-files -s
    git status --porcelain=v2 --untracked-files=all
    git ls-files -z -c -o --exclude-standard | sort -z | while IFS= read -r -d '' f; do
      if [ -L "$f" ]; then printf 'link %s -> %s\n' "$f" "$(readlink "$f")"
      elif [ -f "$f" ]; then printf '%s %s %s\n' "$(stat -c %a "$f")" "$(sha256sum < "$f" | cut -c1-16)" "$f"
      fi
    done )
}

say "two repositories made from the Python standard library sources in $demo"
make_repo web json http email urllib
make_repo tools asyncio logging
git -C "$demo/web" worktree add -q -b plan "$demo/sessions/orchestrator"
git -C "$demo/web" worktree add -q -b fix-json "$demo/sessions/worker-json"
git -C "$demo/tools" worktree add -q -b async-docs "$demo/sessions/worker-async"
git -C "$demo/tools" worktree add -q -b idle "$demo/sessions/worker-idle"
git ao add "$demo/sessions/orchestrator" --id orchestrator --kind orchestrator --harness claude --agent-session-id 7f3a
git ao add "$demo/sessions/worker-json" --id worker-json --harness codex
git ao add "$demo/sessions/worker-async" --id worker-async --harness aider
git ao add "$demo/sessions/worker-idle" --id worker-idle

say "the agents work: staged, unstaged, deleted, untracked and ignored changes"
( cd "$demo/sessions/orchestrator"
  echo "# plan: split the parser" >> json/__init__.py && git add json/__init__.py
  echo "# and then edit it again" >> json/__init__.py
  git rm -q http/cookies.py
  mkdir -p notes/2026 && echo "orchestrator notes" > "notes/2026/plan ünïcode.md"
  echo "debug output" > server.log )
( cd "$demo/sessions/worker-json"
  sed -i 's/import re/import re  # touched/' json/decoder.py
  rm email/base64mime.py
  head -c 4096 /dev/urandom > json/fixture.bin
  ln -s json/decoder.py decoder-link
  chmod +x email/utils.py
  mkdir -p json/__pycache__ && echo junk > json/__pycache__/x.pyc )
( cd "$demo/sessions/worker-async"
  echo "# faster" >> asyncio/tasks.py && git add asyncio/tasks.py
  echo "new module" > asyncio/new_module.py )
for s in orchestrator worker-json worker-async worker-idle; do
  fingerprint "$demo/sessions/$s" > "$demo/$s.before"
done
git -C "$demo/sessions/orchestrator" status --short

say "shutdown: git ao-preserve --all"
start=$(date +%s.%N)
git ao-preserve --all
end=$(date +%s.%N)
echo "preserve took $(python3 -c "print(f'{$end - $start:.2f}')") s"
ls "$demo/sessions" | grep . && { echo "worktrees still there?" >&2; exit 1; } || echo "(every worktree is gone)"
git -C "$demo/web" for-each-ref refs/ao/preserved/
git -C "$demo/tools" for-each-ref refs/ao/preserved/
# --all: the demo's sessions belong to its own two repositories, not to the
# directory this script runs in.
git ao list --all

say "boot: git ao-restore"
start=$(date +%s.%N)
git ao-restore
end=$(date +%s.%N)
echo "restore took $(python3 -c "print(f'{$end - $start:.2f}')") s"
git ao list --all

say "check: every session is back exactly as it was"
status=0
check() {  # check DESCRIPTION COMMAND...: "ok" or "FAIL", and a failure sets the exit status
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; status=1; fi
}
for s in orchestrator worker-json worker-async worker-idle; do
  fingerprint "$demo/sessions/$s" > "$demo/$s.after"
  if cmp -s "$demo/$s.before" "$demo/$s.after"; then echo "ok   $s"
  else echo "DIFF $s"; diff "$demo/$s.before" "$demo/$s.after" | head -20; status=1; fi
done
# Ignored files are not in the preserve commit; they waited in the trash with
# the rest of the worktree, and the restore put the directory back whole.
check "ignored files came back from the trash" \
  grep -qx "debug output" "$demo/sessions/orchestrator/server.log"
check "ignored build output came back too" \
  grep -qx junk "$demo/sessions/worker-json/json/__pycache__/x.pyc"
check "every session is live again" \
  test "$(git ao list --all --state live --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["sessions"]))')" = 4
check "no preserve ref left behind" \
  test -z "$(git -C "$demo/web" for-each-ref refs/ao/preserved/; git -C "$demo/tools" for-each-ref refs/ao/preserved/)"
echo
echo "demo directory: $demo (AO_DATA_DIR=$AO_DATA_DIR); remove it with: rm -rf $demo"
exit $status
