"""The student release: `resource-grader release OUT` (or `make release`) writes the student repository.

What it holds, copied from the official tree (RELEASED, less WITHHELD):

    assignment/    the stubs and the given code
    tests/         every test module, strategies, scenarios; the differential tests stay and skip
                   with their message ("needs the reference solution ..."); the grader leaves them out
    grader/        `resource-grader grade` for self-checks (local tests, public inputs) and `doctor`; the
                   harness (grader/harness/), which the tests run through
    handout.md, conftest.py
    README.md, Makefile, .gitignore      the students' own (grader/staff/kit/)
    pyproject.toml the official one without the reference package and the staff's package data

What it never holds (WITHHELD), because it is or contains a solution, or needs one to run:

    reference/             the solutions
    tests/mistakes/        the catalogue of wrong solutions: many are one fix away from right
    tests/meta/            the suite's own tests: they import the reference and the mistakes
    tests/benchmarks/      imports the reference (mini_einops' overhead)
    grader/staff/          course staff's tools, as one folder: compare and its inputs (they run the reference
                           and the mistakes), bench (grades a copy of the reference), release, gradescope and
                           their kit (the secret's way in), and the sample submission (half of `flops` solved:
                           matmul_flops, linear_flops, approx_training_flops, mfu are the reference's)

`check(OUT)` proves it: no withheld path, no import of a withheld module, and no function whose body is
a function of `reference/` or `tests/mistakes/` (compared as ASTs, name and docstring aside). `build`
refuses to finish (and removes OUT) when the check finds anything.
"""

import ast
import shutil
import sys
from pathlib import Path
from typing import Any

from grader import OFFICIAL_ROOT
from grader.harness import boundary

KIT = Path(__file__).resolve().parent / "kit"
RELEASED, WITHHELD = boundary.RELEASED, boundary.WITHHELD
WITHHELD_MODULES = tuple(map(boundary.module_of, WITHHELD))
STUDENT_FILES = {"README.md": "student_README.md", "Makefile": "student.mk", ".gitignore": "student.gitignore"}
SOLVED = ("reference", "tests/mistakes")  # the folders whose functions must not appear in the release
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")

# The official pyproject.toml, edited: each (old, new) must match exactly once, so that a change of the
# official file that this does not know about stops the release instead of shipping something unchecked.
PYPROJECT_EDITS = (
    ('packages = ["assignment", "reference", "grader", "grader.batch", "grader.fingerprints", "grader.harness", '
     '"grader.staff"]', 'packages = ["assignment", "grader", "grader.batch", "grader.fingerprints", "grader.harness"]'),
    ('[tool.setuptools.package-data]\n"grader.staff" = ["samples/*/*.py", "kit/*"]\n\n', ''),
    ('exclude = ["^grader/staff/samples/"]  # submissions, not the grader (the release has none)\n', ''),
)


class ReleaseError(ValueError):
    """The release cannot be written (OUT is not empty, the official tree lacks something) or is unsafe."""


def build(out: Path, root: Path = OFFICIAL_ROOT) -> list[str]:
    """Write the student release of the official tree `root` into `out` (absent or an empty folder); the
    list of files written, relative to `out`."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} exists and is not an empty folder: choose a new path (nothing was written)")
    if not (root / "reference").is_dir():
        raise ReleaseError(f"{root} has no reference/: it is already a student release, not the official tree")
    out.mkdir(parents=True, exist_ok=True)
    try:
        for entry in RELEASED:
            source = root / entry
            if source.is_dir():
                shutil.copytree(source, out / entry, ignore=_ignore_withheld(root), dirs_exist_ok=True)
            else:
                shutil.copy2(source, out / entry)
        for name, template in STUDENT_FILES.items():
            shutil.copy2(KIT / template, out / name)
        (out / "pyproject.toml").write_text(release_pyproject((root / "pyproject.toml").read_text()))
        problems = check(out, root)
        if problems:
            raise ReleaseError("the release would give away solutions or would not work:\n  " + "\n  ".join(problems))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _ignore_withheld(root: Path):
    withheld = {(root / w).resolve() for w in WITHHELD}

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if (Path(folder) / n).resolve() in withheld} | JUNK(folder, names)

    return ignore


def release_pyproject(text: str) -> str:
    return edited(text, PYPROJECT_EDITS, ReleaseError, "the release", "release.py's PYPROJECT_EDITS")


def edited(text: str, edits, error: type[ValueError], what: str, where: str) -> str:
    """pyproject.toml's `text` with each (old, new) of `edits` made, each old found exactly once (else `error`)."""
    for old, new in edits:
        if text.count(old) != 1:
            raise error(f"pyproject.toml: expected exactly one {old!r} to edit for {what}; update "
                        f"grader/staff/{where} to the new pyproject.toml")
        text = text.replace(old, new)
    return text


# -- the check ----------------------------------------------------------------------------------------

def check(release: Path, root: Path = OFFICIAL_ROOT) -> list[str]:
    """Everything wrong with the release folder: withheld paths present, imports of withheld modules,
    functions of the reference or of the mistakes. Empty when it is safe to hand out."""
    problems = [f"{w}: withheld from the release, but present" for w in WITHHELD if (release / w).exists()]
    problems += [f"{w}: missing from the release" for w in (*RELEASED, *STUDENT_FILES, "pyproject.toml")
                 if not (release / w).exists()]
    if (release / "pyproject.toml").exists() and '"reference"' in (release / "pyproject.toml").read_text():
        problems.append("pyproject.toml: still names the reference package")
    solved: dict[str, str] = {}
    for folder in SOLVED:
        for path in sorted((root / folder).rglob("*.py")):
            for dump, name in function_bodies(path.read_text(), str(path)):
                solved.setdefault(dump, f"{path.relative_to(root)}:{name}")
    for path in sorted(release.rglob("*.py")):
        rel = path.relative_to(release)
        source = path.read_text(encoding="utf-8", errors="replace")
        allowed = boundary.RUN_WHERE_PRESENT.get(rel.as_posix(), ())
        problems += [f"{rel}: imports {m}" for m in withheld_imports(source, str(path))
                     if not any(m == a or m.startswith(a + ".") for a in allowed)]
        problems += [f"{rel}:{name}: the same function as {solved[dump]}"
                     for dump, name in function_bodies(source, str(path)) if dump in solved]
    return problems


def withheld_imports(source: str, filename: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found += [n for n in names if any(n == m or n.startswith(m + ".") for m in WITHHELD_MODULES)]
    return sorted(set(found))


def function_bodies(source: str, filename: str = "<source>") -> list[tuple[str, str]]:
    """(normalised AST dump, qualified-ish name) of every function and method in `source` that carries
    code. Normalised: the name and the docstring are left out (a renamed or re-documented copy is still a
    copy); arguments, annotations, decorators and the body are compared exactly."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body[1:] if _is_docstring(node.body[0]) else node.body
        if is_trivial(body):
            continue
        fields: dict[str, Any] = {"type_params": getattr(node, "type_params", [])}  # Python 3.12's, where it is
        copy = type(node)(name="_", args=node.args, body=body, decorator_list=node.decorator_list,
                          returns=node.returns, **fields)
        found.append((ast.dump(copy, annotate_fields=False), f"{node.name} (line {node.lineno})"))
    return found


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def is_trivial(body: list[ast.stmt]) -> bool:
    """Whether a function body computes nothing, so that sharing it gives nothing away.

    The exemption, and why it is principled: a solution is a computation. A body of one statement that
    only raises NotImplementedError (every stub), passes, returns a constant, a name or an attribute, or
    makes one call whose arguments are all names, constants or attributes (a delegation: `return
    self.inner(x)`, `return matmul_flops(tokens, d_in, d_out)`) has no operator, no branch, no loop and no
    literal structure of its own: the stub and the reference may legitimately share it, and it tells a
    student nothing the signature and docstring do not. Anything larger is compared.
    """
    if not body:
        return True
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Raise):
        raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    if isinstance(statement, ast.Return | ast.Expr):
        value = statement.value
        if value is None or _is_leaf(value):
            return True
        if isinstance(value, ast.Call):
            arguments = [*value.args, *(k.value for k in value.keywords)]
            return _is_leaf(value.func) and all(_is_leaf(a) for a in arguments)
    return False


def _is_leaf(node: ast.expr) -> bool:
    """A constant, a name, or a dotted attribute of a name (`self.inner`, `torch.float32`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Constant | ast.Name)


# -- the command --------------------------------------------------------------------------------------

def add_parser(commands) -> None:
    r = commands.add_parser("release", help="course staff: write the student repository into OUT")
    r.add_argument("out", type=Path, help="a new folder (or an empty one)")


def run(options) -> int:
    try:
        files = build(options.out)
    except ReleaseError as exc:
        print(f"resource-grader release: {exc}", file=sys.stderr)
        return 2
    print(f"student release written to {options.out}: {len(files)} files; no reference, no mistakes, no "
          "function of either (checked). Next: cd there, `make venv`, `pytest` (every graded test fails on the "
          "stubs); tests/meta/test_release.py checks the rest.")
    return 0
