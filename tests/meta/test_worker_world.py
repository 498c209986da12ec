"""What the grading worker holds of the suite is what the scenarios need, and nothing the test process alone runs.

The worker imports every module of tests/scenarios/ before any student code (grader/harness/worker.py), so the
code under test can reach every name in them (`sys.modules["tests.scenarios.flops"]`). A scenario, a top-level
function whose first parameter is `pkg`, runs there beside the code under test; so does everything it reaches.
A function that only the test process calls is an oracle, or a piece of one: the expected answer, free to any
student who calls it from the worker. Those live in tests/oracles.py, outside the worker's tree
(grader/harness/boundary.py: WORKER).

The check is static, read from the AST: from every scenario, follow the names it uses, within its module and
across the scenario modules (`from tests.scenarios import memory`, `from tests.scenarios.escapes import
record_ops`, `from . import flops`, `memory.build_stack`), and every top-level function, class and (lower-case)
variable of tests/scenarios must be reached. Constants (UPPER_CASE) are data, not code that computes an answer,
and may stay for the staff tools (grader/fingerprints/inputs.py reads `memory.OPTIMIZERS`).

The scenario modules' docstrings say so too: they may speak of the oracles, but present nothing of their own as
one, and name an oracle with its home, tests/oracles.py.
"""

import ast
import re
from pathlib import Path

import pytest

from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

PACKAGE = "tests.scenarios"
SCENARIOS = ROOT / "tests" / "scenarios"
ORACLES = ROOT / "tests" / "oracles.py"
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def module_name(path: Path) -> str:
    return PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"


def parse_scenarios() -> dict[str, ast.Module]:
    """Every module of tests/scenarios, by its dotted name."""
    return {module_name(path): ast.parse(path.read_text(), str(path)) for path in sorted(SCENARIOS.glob("*.py"))}


def definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    """A module's top-level functions, classes and assigned names, each with the statement that defines it."""
    found = {}
    for node in tree.body:
        if isinstance(node, DEFINITIONS):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found[name.id] = node
    return found


def is_scenario(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    positional = node.args.posonlyargs + node.args.args
    return bool(positional) and positional[0].arg == "pkg"


def imported_from_scenarios(tree: ast.Module, modules: set[str]) -> dict[str, tuple[str, str | None]]:
    """What each name a module imports stands for among the scenario modules: (module, None) for a module,
    (module, name) for one of its names. Imports anywhere in the module count (a function's own import too)."""
    aliases: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    aliases[alias.asname] = (alias.name, None)
                elif alias.name in modules:  # `import tests.scenarios.flops` binds `tests`: `tests.scenarios.flops.x`
                    aliases[alias.name.split(".")[0]] = (alias.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            source = PACKAGE if node.level else (node.module or "")
            if node.level and node.module:
                source = f"{PACKAGE}.{node.module}"
            if node.level > 1 or source not in modules:
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                aliases[alias.asname or alias.name] = (submodule, None) if submodule in modules else \
                    (source, alias.name)
    return aliases


def dotted(node: ast.expr) -> str | None:
    """`a.b.c` as a string, for a chain of attributes on a name; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def reached_definitions() -> tuple[dict[str, dict[str, ast.stmt]], set[tuple[str, str]]]:
    """Each scenario module's definitions, and the (module, name) pairs that some scenario reaches."""
    trees = parse_scenarios()
    modules = set(trees)
    defined = {module: definitions(tree) for module, tree in trees.items()}
    aliases = {module: imported_from_scenarios(tree, modules) for module, tree in trees.items()}

    def names_used(module: str, node: ast.AST):
        """The (module, name) pairs of the scenario modules that the code of `node` uses."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                if sub.id in defined[module]:
                    yield module, sub.id
                target = aliases[module].get(sub.id)
                if target and target[1] is not None:
                    yield target
            elif isinstance(sub, ast.Attribute) and (chain := dotted(sub.value)):
                head, _, rest = chain.partition(".")
                target = aliases[module].get(head)
                if target and target[1] is None:
                    owner = ".".join(filter(None, [target[0], rest]))
                    if owner in modules:
                        yield owner, sub.attr

    roots = [(module, name) for module, names in defined.items() for name, node in names.items() if is_scenario(node)]
    # What runs when a module is imported, beside its definitions, is reached as well.
    todo = list(roots)
    for module, tree in trees.items():
        for node in tree.body:
            if not isinstance(node, (*DEFINITIONS, ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
                todo += names_used(module, node)
    reached: set[tuple[str, str]] = set()
    while todo:
        module, name = todo.pop()
        if (module, name) in reached or name not in defined.get(module, {}):
            continue
        reached.add((module, name))
        todo += names_used(module, defined[module][name])
    return defined, reached


def test_the_reachability_sees_scenarios_and_their_helpers():
    """The check would be empty if it found no scenario, or lost the way across modules."""
    defined, reached = reached_definitions()
    assert ("tests.scenarios.flops", "count") in reached
    assert ("tests.scenarios.flops", "_mlp") in reached  # through the _WORKLOADS table
    assert ("tests.scenarios.flops", "_decoded") in reached  # a recorded run replayed
    assert ("tests.scenarios.escapes", "record_ops") in reached  # a default argument of precision's scenario
    assert ("tests.scenarios.memory", "build_stack") in reached
    assert len(reached) > 50, sorted(reached)


def test_every_function_of_the_scenarios_is_reached_by_a_scenario():
    defined, reached = reached_definitions()
    unreached = [f"{module}.{name}" for module, names in sorted(defined.items()) for name in sorted(names)
                 if (module, name) not in reached and not name.isupper()]
    assert not unreached, (
        "no scenario reaches these, so only the test process runs them: they are oracles (or parts of one) that the "
        "code under test could call from the worker for the expected answer. Move them to tests/oracles.py: "
        + ", ".join(unreached))


# A docstring that presents what it documents as an oracle, or as run by the test process alone.
PRESENTED_AS_AN_ORACLE = re.compile(r"^\s*(the\s+)?oracles?\b|^\s*in the test process\b|test process only", re.I)


def docstrings(module: str, tree: ast.Module):
    """(where, text) of the module's docstring and of each of its top-level functions' and classes'."""
    if text := ast.get_docstring(tree):
        yield module, text
    for node in tree.body:
        if isinstance(node, DEFINITIONS) and (text := ast.get_docstring(node)):
            yield f"{module}.{node.name}", text


def test_no_scenario_module_names_an_oracle_in_its_docstrings():
    oracles = {node.name for node in ast.parse(ORACLES.read_text()).body if isinstance(node, DEFINITIONS)}
    offenders = []
    for module, tree in parse_scenarios().items():
        own = set(definitions(tree))
        for where, text in docstrings(module, tree):
            if PRESENTED_AS_AN_ORACLE.search(text):
                offenders.append(f"{where} is documented as an oracle, or as run in the test process only")
            named = sorted(set(re.findall(r"`(\w+)`", text)) & oracles - own)
            if named and "tests/oracles.py" not in text:
                offenders.append(f"{where} names {', '.join(named)} without its home, tests/oracles.py")
    assert not offenders, "an oracle is in tests/oracles.py, and a docstring of tests/scenarios says so: " \
        + "; ".join(offenders)
