"""What the grader reads from a problem module's source without running it: whether it is the untouched stub
(`not_started`), whether it compiles (`compile_errors`). Parsed under AST_LOCK."""

import ast
import threading

# CPython 3.11's ast.parse keeps its recursion depth in state the threads share: two at once (batch's
# gradings) can fail with SystemError "AST constructor recursion depth mismatch"
AST_LOCK = threading.Lock()


def not_started(source: bytes | str) -> bool:
    """Whether every function and method of a problem module only raises NotImplementedError (after its
    docstring and, in a class, a `super().__init__(...)`): the untouched stub, or one with nothing written
    yet. Read from the source (it is parsed, never run)."""
    try:
        with AST_LOCK:
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # nesting too deep to parse: not the stub
        return False
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return bool(functions) and all(_only_raises_not_implemented(f.body) for f in functions)


def _only_raises_not_implemented(body: list[ast.stmt]) -> bool:
    *before, last = body
    if not (isinstance(last, ast.Raise) and last.exc is not None):
        return False
    raised = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
    if not (isinstance(raised, ast.Name) and raised.id == "NotImplementedError"):
        return False
    for i, statement in enumerate(before):
        value = statement.value if isinstance(statement, ast.Expr) else None
        docstring = i == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str)
        super_call = (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                      and isinstance(value.func.value, ast.Call) and isinstance(value.func.value.func, ast.Name)
                      and value.func.value.func.id == "super")
        if not (docstring or super_call):
            return False
    return True


def compile_errors(modules: dict[str, bytes]) -> dict[str, str]:
    """The problem modules ({module: source}) that do not compile, each with one line naming the file, the line and
    the error. The source is compiled, never run."""
    found = {}
    for module, source in modules.items():
        try:
            with AST_LOCK:
                compile(source, f"{module}.py", "exec", dont_inherit=True)
        except SyntaxError as exc:
            found[module] = f"{module}.py, line {exc.lineno}: {type(exc).__name__}: {exc.msg}"
        except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, nesting too deep to parse
            found[module] = f"{module}.py: {type(exc).__name__}: {exc}"
    return found
