"""Project rules checked on every tracked file."""

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EM_DASH = "\u2014".encode()


def test_no_em_dash_in_any_tracked_text_file():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                         check=True).stdout
    offenders = []
    for rel in filter(None, out.split(b"\0")):
        path = ROOT / rel.decode()
        if path.is_file() and EM_DASH in path.read_bytes():
            offenders.append(rel.decode())
    assert offenders == []


def _modules():
    for path in sorted((ROOT / "git_ao").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_only_the_store_touches_sqlite():
    offenders = [rel for rel, tree in _modules()
                 if not rel.startswith("git_ao/store/") and "sqlite3" in set(_imports(tree))]
    assert offenders == []


def test_nothing_below_the_cli_prints():
    # print(), click's output, rich and the standard streams belong to git_ao/cli.
    offenders = []
    for rel, tree in _modules():
        if rel.startswith("git_ao/cli/"):
            continue
        if {"rich", "click"} & {m.split(".")[0] for m in _imports(tree)}:
            offenders.append(f"{rel}: imports click or rich")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "print":
                offenders.append(f"{rel}:{node.lineno}: print()")
            if isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr") \
                    and isinstance(node.value, ast.Name) and node.value.id == "sys":
                offenders.append(f"{rel}:{node.lineno}: sys.{node.attr}")
    assert offenders == []


def test_only_git_process_starts_git():
    # Every git process starts in git_ao/git/process.py, as an argument list; the
    # quick paths' one, for its exit status alone, in git_ao/quickgit.py.
    offenders = []
    for rel, tree in _modules():
        if rel in ("git_ao/git/process.py", "git_ao/quickgit.py"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                    and node.elts[0].value == "git":
                offenders.append(f"{rel}:{node.lineno}: an argument list starting with 'git'")
    assert offenders == []


def test_at_most_ten_modules_at_the_top_of_the_package():
    top = sorted(p.name for p in (ROOT / "git_ao").glob("*.py"))
    assert len(top) <= 10, top


def test_no_decision_reads_a_message():
    # What a step said is for people; what code decides on is a status, an enum or
    # a field (an Outcome's `names_state`, a Skip value), never a word in the text
    # (`in`, startswith). Comparing a whole message with one said before (a refusal
    # said once) and reading a library's exception (click's) are not decisions.
    offenders = []
    for rel, tree in _modules():
        tests = [n.test for n in ast.walk(tree) if isinstance(n, (ast.If, ast.IfExp, ast.While))]
        tests += [c for n in ast.walk(tree) if isinstance(n, ast.comprehension) for c in n.ifs]
        for t in tests:
            for node in ast.walk(t):
                words = None
                if isinstance(node, ast.Compare) and any(
                        isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                    words = node.comparators
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("startswith", "endswith"):
                    words = [node.func.value]
                for w in words or []:
                    if isinstance(w, ast.Attribute) and w.attr == "message" and not (
                            isinstance(w.value, ast.Name) and w.value.id == "exc"):
                        offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []
