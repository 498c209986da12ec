"""Which code may import which (issue 23), read from the code's AST:

1. the suite's test modules are run by pytest, never imported. What the staff tools share with a problem's
   tests lives in tests/common/, which both import. Meta-tests, which inspect the suite itself, are the one
   exception;
2. `tests` may import `grader`; the grader imports the suite only where it runs it (the worker's scenarios,
   pytest's plugin), in the fingerprints and in the course staff's tools (the catalogue, strategies,
   tests/common, scenarios).
"""

import ast
from pathlib import Path

import pytest

from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

CHECKED = ["grader", "tests", "assignment", "reference", "conftest.py", "setup.py"]


def python_files() -> list[Path]:
    files = []
    for entry in CHECKED:
        path = ROOT / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path] * path.exists()
    return [f for f in files if "meta" not in f.relative_to(ROOT).parts[:2]]


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def test_nothing_outside_the_meta_tests_imports_a_test_module():
    offenders = []
    for path in python_files():
        for line, module in imported_modules(ast.parse(path.read_text(), str(path))):
            if module.rsplit(".", 1)[-1].startswith("test_"):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "a test module is run by pytest, never imported; move what is shared to tests/common/: " \
        + "; ".join(offenders)


# The grader imports the suite only where it runs it: the worker runs the scenarios; pytest's plugin finds the
# suite it serves; the fingerprints and the staff tools (a TA's --mutant among them) read the catalogue,
# the strategies, what the tests share (tests/common) and the scenarios. Everything else of the grader stands
# without tests/.
GRADER_READS_OF_THE_SUITE = {
    "grader/harness/worker.py": ("tests", "tests.scenarios"),
    "grader/harness/plugin.py": ("tests",),
    "grader/harness/feedback.py": ("tests",),  # where the tree under test is
}
STAFF_READS_OF_THE_SUITE = ("tests", "tests.mistakes", "tests.strategies", "tests.common", "tests.scenarios")


def dynamically_imported(tree: ast.AST) -> list[tuple[int, str]]:
    """importlib.import_module("...") with a constant name (an f-string: its constant start)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            name = node.args[0] if node.args else None
            if isinstance(name, ast.JoinedStr) and name.values and isinstance(name.values[0], ast.Constant):
                name = name.values[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.append((node.lineno, name.value.rstrip(".")))
    return found


def test_the_grader_imports_from_tests_only_what_it_runs():
    from grader.harness import boundary

    readers = [p for p in boundary.STAFF if p.startswith("grader/")] + ["grader/fingerprints"]
    offenders = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("grader/staff/samples/"):
            continue  # submissions, not the grader
        allowed = GRADER_READS_OF_THE_SUITE.get(rel, ())
        if any(rel == s or rel.startswith(s + "/") for s in readers):
            allowed = STAFF_READS_OF_THE_SUITE
        tree = ast.parse(path.read_text(), str(path))
        for line, module in imported_modules(tree) + dynamically_imported(tree):
            if module.partition(".")[0] != "tests":
                continue
            if not any(module == a or (a != "tests" and module.startswith(a + ".")) for a in allowed):
                offenders.append(f"{rel}:{line} imports {module}")
    assert not offenders, ("the grader imports the suite only where it runs it (GRADER_READS_OF_THE_SUITE, "
                           "STAFF_READS_OF_THE_SUITE): " + "; ".join(offenders))


def test_released_modules_import_withheld_ones_only_inside_functions():
    """boundary.RUN_WHERE_PRESENT: a released module that runs a withheld one (the catalogue, for the fingerprints)
    imports it where it is called, never at its top: the student release, which lacks it, imports the module all
    the same."""
    from grader.harness import boundary

    offenders = []
    for rel, modules in boundary.RUN_WHERE_PRESENT.items():
        tree = ast.parse((ROOT / rel).read_text(), rel)
        inside = {id(node) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for node in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import) and id(node) not in inside:
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                offenders += [f"{rel}:{node.lineno} imports {n} at its top" for n in names
                              if any(n == m or n.startswith(m + ".") for m in modules)]
    assert not offenders, offenders


# -- the grader's floors (issue 43; the class's, issue 54) ----------------------------------------------------

# Lowest first: a module imports modules of its own floor or of floors below, never above. A path names a module
# or a package (everything in it); the first that matches counts. docs/contributing.md's paragraph on the floors is
# rendered from it (`floors_paragraph`; `python -m tests.meta.test_layering --write` rewrites it).
FLOORS = [
    ("the ground", "the rubric, messages, plain data, the seed",
     ["grader/__init__.py", "grader/registry.py", "grader/grading_budget.py", "grader/messages.py",
      "grader/matches.py", "grader/seed.py", "grader/kept.py", "grader/sources.py", "grader/profiles.py"]),
    ("the trust boundary", "the sandbox, the grading worker and all it may reach", ["grader/harness"]),
    ("grading", "one submission: its job and settings, its run, score and evidence, its outcome",
     ["grader/job.py", "grader/runner.py", "grader/submission.py", "grader/scoring.py", "grader/outcome.py",
      "grader/normalised.py", "grader/reach.py", "grader/copycheck.py", "grader/similarity.py", "grader/analysis.py",
      "grader/fingerprints", "grader/grading.py"]),
    ("the class", "a batch of submissions on an engine, the task a worker runs, the records it keeps, the copies "
     "between students, the class report", ["grader/batch"]),
    ("the commands", "what a grader types", ["grader/cli.py", "grader/gradescope.py", "grader/__main__.py"]),
    ("course staff's tools", "withheld from the student release as a unit", ["grader/staff"]),
]
# The one place a grader module is imported by a computed name: the registry of staff commands, cli.STAFF_COMMANDS. The
# other computed imports load the code under test, its scenarios, or torch's own modules, never the grader's.
COMPUTED_IMPORTS = {"grader/cli.py": "the staff commands of cli.STAFF_COMMANDS",
                    "grader/harness/worker.py": "the package under test and its scenarios",
                    "grader/harness/box.py": "the analysis it boxes (grader/analysis.py)",
                    "grader/harness/local.py": "the package under test", "grader/harness/guard.py": "torch's modules",
                    "grader/harness/front_end.py": "torch's compiler front end"}


def floor_of(path: str) -> int:
    for index, (_, _, members) in enumerate(FLOORS):
        if any(path == m or path.startswith(m + "/") for m in members):
            return index
    raise AssertionError(f"{path} is on no floor: add it to FLOORS")


def grader_modules() -> dict[str, str]:
    """Module name -> its path, for every module of the grader (the staff's sample submissions are not code)."""
    found = {}
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith("grader/staff/samples/"):
            found[rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")] = rel
    return found


def grader_imports() -> dict[str, set[str]]:
    """Path -> the grader modules it imports: `from package import module` imports the module (not the package)."""
    modules = grader_modules()
    found = {}
    for rel in modules.values():
        names = set()
        for node in ast.walk(ast.parse((ROOT / rel).read_text(), rel)):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                submodules = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
                names |= submodules | ({node.module} if len(submodules) < len(node.names) else set())
        found[rel] = {modules[n] for n in names if n in modules and modules[n] != rel}
    return found


def test_every_grader_module_imports_only_its_floor_and_below():
    offenders = [f"{rel} ({FLOORS[floor_of(rel)][0]}) imports {target} ({FLOORS[floor_of(target)][0]})"
                 for rel, targets in grader_imports().items() for target in sorted(targets)
                 if floor_of(target) > floor_of(rel)]
    assert not offenders, offenders


def test_no_import_cycle_between_grader_modules():
    """Imports anywhere in a module, at its top or in a function: a cycle is a cycle either way."""
    graph, cycles = grader_imports(), []
    for start in graph:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for target in graph[node]:
                if target == start:
                    cycles.append(" -> ".join(path + [start]))
                elif target not in path and target > start:  # each cycle once, from its smallest module
                    stack.append((target, path + [target]))
    assert not cycles, cycles


def test_modules_are_imported_by_computed_name_only_where_listed():
    offenders = []
    for rel in grader_modules().values():
        tree = ast.parse((ROOT / rel).read_text(), rel)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
                 getattr(n.func, "attr", getattr(n.func, "id", "")) in ("import_module", "__import__")]
        if calls and rel not in COMPUTED_IMPORTS:
            offenders.append(f"{rel}:{calls[0].lineno}")
    assert not offenders, f"imports by a computed name outside COMPUTED_IMPORTS: {offenders}"


def test_every_grader_package_is_installed():
    """A package of the grader missing from pyproject.toml's list is missing from a wheel: `pip install .` would
    install a grader that cannot import itself (tests/meta/test_install.py finds it too, in minutes)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in (ROOT / "grader").rglob("__init__.py")
                if "samples" not in p.parts and "official" not in p.parts}
    assert packages <= listed, f"not in pyproject.toml's [tool.setuptools] packages: {sorted(packages - listed)}"


# -- docs/contributing.md's paragraph on the floors, rendered from FLOORS ----------------------------------------

CONTRIBUTING = ROOT / "docs" / "contributing.md"
FLOORS_SECTION = "## The floors\n\n"


def floors_paragraph() -> str:
    """The paragraph of docs/contributing.md that names the floors, lowest first, with their members."""
    def shown(member: str) -> str:
        name = member.removeprefix("grader/")
        return f"`{name}/`" if (ROOT / member).is_dir() else f"`{name}`"

    floors = "; ".join(f"{name} ({what}: {', '.join(map(shown, members))})" for name, what, members in FLOORS)
    return ("The grader's modules (in `grader/`) stand on floors, each importing only its own and those below, "
            f"lowest first: {floors}. `tests/meta/test_layering.py` holds the table (`FLOORS`, from which this "
            "paragraph is written: `python -m tests.meta.test_layering --write`) and refuses an import that climbs, "
            "a cycle between grader modules, and a module imported by a computed name outside the places it lists "
            "(`COMPUTED_IMPORTS`); released modules that run the catalogue where it is there are named in "
            "`grader/harness/boundary.py` `RUN_WHERE_PRESENT`.")


def with_floors_paragraph(text: str) -> str:
    start = text.index(FLOORS_SECTION) + len(FLOORS_SECTION)
    end = text.find("\n\n", start)
    return text[:start] + floors_paragraph() + (text[end:] if end >= 0 else "\n")


def test_the_contributing_page_names_the_floors_of_the_table():
    text = CONTRIBUTING.read_text()
    assert FLOORS_SECTION in text, f"{CONTRIBUTING} has no section '## The floors'"
    assert with_floors_paragraph(text) == text, (
        "docs/contributing.md's paragraph on the floors is not FLOORS': `python -m tests.meta.test_layering --write` "
        "rewrites it")


def test_every_floor_member_exists():
    missing = [member for _, _, members in FLOORS for member in members if not (ROOT / member).exists()]
    assert not missing, f"FLOORS names what is not there: {missing}"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        CONTRIBUTING.write_text(with_floors_paragraph(CONTRIBUTING.read_text()))
        print(f"{CONTRIBUTING.relative_to(ROOT)}: the floors' paragraph rewritten")
    else:
        print(floors_paragraph())
