"""The run-time type checks: the stubs' annotations, applied where the tests call the code under test, in the test
process, never the student's own.

A test calls a function of the package under test (`impl.memory.tensor_bytes(...)`, in-process or through the
worker): `checked(package)` is the package the tests see, whose functions of the stubs' `__all__` check, in this
process, the arguments the test sends against the stub's annotations and then the value the code returned (decoded
from the worker, when isolated), jaxtyping's dimensions bound across both (`Float[Tensor, "batch d_model"]`), with
beartype. What the student wrote is never checked: a helper's annotations, a stub function's annotations changed,
the annotations of the methods of the student's classes; nor is anything inside the worker, where no annotation is
enforced at all. A scenario (`impl.run(...)`) is a test's own code calling the package: its checks are its own.

The annotations are the stubs' as shipped, copied into interface.py beside this file (`python -m
grader.harness.typecheck --write`; tests/meta/test_shape_checks.py fails when they differ from assignment/): the
student's copy of the stubs, which they edit, cannot be where they are read from. The dataclasses of
`assignment.given` (official: the grader uses its own copy) are checked as this process builds them, decoding a
worker's reply included (`install_given_checks`).

A value the code returned that its stub's annotation refuses fails the test with StubTypeError, whose first line
names the function and what was refused, the same for every example (grader/scoring.py shows it once per problem);
an argument the test sent that the stub refuses is the suite's own mistake (StubArgumentError: the grading code's
error, never the student's).
"""

import ast
import functools
import inspect
import sys
from pathlib import Path

INTERFACE = Path(__file__).with_name("interface.py")
GIVEN = "assignment.given"

# Added to a failed type check (the handout's Setup says the same).
TYPE_CHECK_HINT = ("hint: what a function returns is checked against its stub's annotation (a tensor's dtype and "
                   "dimensions too; a float is not an int, and an int is not a float unless the annotation says "
                   "int | float); your own annotations, and your helpers', are never checked")


class StubTypeError(TypeError):
    """The code under test returned a value its stub's annotation refuses."""


class StubArgumentError(TypeError):
    """A test sent an argument its stub's annotation refuses: the suite's mistake."""


def is_type_check_error(exc: BaseException) -> bool:
    """A failed run-time type check: the boundary's (StubTypeError), or jaxtyping's or beartype's (a dataclass of
    assignment.given built with a field of another type), raised here or, as `remote_type`, in the worker."""
    names = [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__]
    names.append(getattr(exc, "remote_type", None) or "")
    return isinstance(exc, StubTypeError) or any(name.startswith(("jaxtyping.", "beartype.")) for name in names)


def install_given_checks():
    """Check the annotations of `assignment.given`'s dataclasses whenever this process builds one (jaxtyping's
    import hook, with beartype), from its next import on. Returns the hook's handle (`.uninstall()`)."""
    import jaxtyping

    return jaxtyping.install_import_hook([GIVEN], "beartype.beartype")


# -- the stubs' interface -----------------------------------------------------------------------------------------

def stub_interface(source: str) -> tuple[str, dict[str, str]]:
    """A stub module's imports (its top-level import statements, as source) and the header of each function of its
    `__all__` ("def name(args) -> annotation: ..."): what the boundary checks."""
    tree = ast.parse(source)
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    public: list[str] = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)), [])
    headers = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in public:
            header = ast.FunctionDef(name=node.name, args=node.args, body=[ast.Expr(ast.Constant(...))],
                                     decorator_list=[], returns=node.returns, type_comment=None, lineno=0)
            headers[node.name] = ast.unparse(header)
    return "\n".join(imports), headers


def interface_source(root: Path) -> str:
    """interface.py's text, from the stubs in `root`/assignment."""
    from grader.registry import PROBLEMS

    imports, functions = {}, {}
    for problem in PROBLEMS:
        imports[problem.module], functions[problem.module] = stub_interface(
            (root / "assignment" / f"{problem.module}.py").read_text())
    return (f'"""The stubs\' annotations that the run-time type check applies (grader/harness/typecheck.py): each '
            f'problem\nmodule\'s imports and the header of each function of its `__all__`, copied from assignment/ '
            f'by\n`python -m grader.harness.typecheck --write`. Do not edit: tests/meta/test_shape_checks.py '
            f'compares them.\n"""\n# ruff: noqa: E501 (a header is one line, as written)\n\n'
            f'IMPORTS = {_literal(imports)}\n\nFUNCTIONS = {_literal(functions)}\n')


def _literal(value: dict) -> str:
    lines = ["{"]
    for key, item in value.items():
        if isinstance(item, dict):
            lines.append(f"    {key!r}: {{")
            lines += [f"        {name!r}: {header!r}," for name, header in item.items()]
            lines.append("    },")
        else:
            lines.append(f"    {key!r}: {item!r},")
    return "\n".join(lines + ["}"])


@functools.cache
def stub_functions(module: str) -> dict[str, object]:
    """name -> a function with the stub's signature and annotations (its body does nothing), for `module`'s
    functions of its `__all__`, from interface.py."""
    from grader.harness import interface

    namespace = {"__name__": f"stubs.{module}"}
    source = interface.IMPORTS.get(module, "") + "\n" + "\n".join(interface.FUNCTIONS.get(module, {}).values())
    exec(compile(source, str(INTERFACE), "exec"), namespace)  # noqa: S102 - the official interface, not a submission
    return {name: namespace[name] for name in interface.FUNCTIONS.get(module, {})}


# -- the boundary -------------------------------------------------------------------------------------------------

def checked(package):
    """The package under test as the tests see it: its modules' functions of the stubs check their calls."""
    return _CheckedPackage(package)


class _CheckedPackage:
    def __init__(self, package):
        self._package = package

    def __getattr__(self, name: str):
        value = getattr(self._package, name)
        if name in ("run", "close", "worker", "isolated", "writable", "name") or name.startswith("_"):
            return value
        return _CheckedModule(name, value)

    def __repr__(self) -> str:
        return repr(self._package)


class _CheckedModule:
    def __init__(self, module: str, value):
        self._module, self._value = module, value

    def __getattr__(self, name: str):
        value = getattr(self._value, name)
        stub = stub_functions(self._module).get(name)
        return value if stub is None else functools.partial(call, f"{self._module}.{name}", stub, value)


def call(name: str, stub, function, *args, **kwargs):
    """`function(*args, **kwargs)`, its arguments and then its value checked against `stub`'s annotations, in one
    jaxtyping memo (the dimensions the arguments bind are the value's)."""
    import jaxtyping

    signature = _signature(stub)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:  # the call itself is wrong: the function says so as it is called
        return function(*args, **kwargs)
    bound.apply_defaults()
    with jaxtyping.jaxtyped("context"):
        for parameter, value in bound.arguments.items():
            annotation, kind = signature.parameters[parameter].annotation, signature.parameters[parameter].kind
            each = value.values() if kind is VAR_KEYWORD else value if kind is VAR_POSITIONAL else [value]
            refused = next((item for item in each if not _fits(item, annotation)), _NONE)
            if refused is not _NONE:
                raise StubArgumentError(f"{name}: the test sent {parameter}={_short(refused)}, which its stub's "
                                        f"annotation `{_text(annotation)}` refuses (an error of the suite){_dims()}")
        value = function(*args, **kwargs)
        annotation = signature.return_annotation
        if not _fits(value, annotation):
            raise StubTypeError(f"{name} returned {_kind(value)} where its stub's annotation says "
                                f"`{_text(annotation)}`\n(it returned {_short(value)}{_dims(', with ')})")
    return value


_signature = functools.cache(inspect.signature)  # of a stub: read once, not at each of a grading's calls
VAR_POSITIONAL, VAR_KEYWORD = inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD  # *args, **kwargs
_NONE = object()


def _fits(value, annotation) -> bool:
    from beartype.door import is_bearable

    if annotation is inspect.Parameter.empty:
        return True
    return is_bearable(value, annotation)


def _kind(value) -> str:
    """What a value is, in a few words that do not depend on the example: "a float", "a float32 tensor of 2
    dimensions"."""
    import torch

    if isinstance(value, torch.Tensor):
        dims = f"{value.dim()} dimension" + "s" * (value.dim() != 1)
        return f"a {str(value.dtype).removeprefix('torch.')} tensor of {dims}"
    article = "an" if type(value).__name__[0] in "aeiouAEIOU" else "a"
    return f"{article} {type(value).__name__}"


def _short(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype})"
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _text(annotation) -> str:
    text = inspect.formatannotation(annotation)
    return text.replace("jaxtyping.", "").replace("torch.Tensor", "Tensor")


def _dims(lead: str = "; ") -> str:
    """The jaxtyping dimensions bound so far in this check ("batch=2, seq=3"), where there are any."""
    from jaxtyping._storage import get_shape_memo

    single, variadic, *_ = get_shape_memo()
    bound = [f"{k}={v}" for k, v in single.items()] + [f"*{k}={v[1]}" for k, v in variadic.items()]
    return f"{lead}the dimensions bound by the arguments: {', '.join(bound)}" if bound else ""


def main(argv: list[str] | None = None) -> int:
    from grader import OFFICIAL_ROOT

    text = interface_source(OFFICIAL_ROOT)
    if (sys.argv[1:] if argv is None else argv) == ["--write"]:
        INTERFACE.write_text(text)
        print(f"wrote {INTERFACE}")
        return 0
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
