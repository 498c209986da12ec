"""The run-time type checks (jaxtyping with beartype): installed on the package under test in-process (the
plugin) and in the worker, and which exceptions are their failures (the worker cuts their traceback, the report
their chain, and adds the hint).
"""

import ast

# Added to a run-time type check's failure (jaxtyping with beartype; see the handout's Setup).
TYPE_CHECK_HINT = ("hint: every annotation of your module's functions, methods and classes is checked whenever "
                   "one of them is called, by the tests or by your own code (scalars too: a float is not an int, "
                   "and an int is not a float unless the annotation says int | float); keep the stubs' annotations "
                   "and pass what they say")


def is_type_check_error(exc: BaseException) -> bool:
    """A failed run-time type check: jaxtyping's TypeCheckError or a beartype violation, raised here or, as
    `remote_type`, in the grading worker."""
    names = [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__]
    names.append(getattr(exc, "remote_type", None) or "")
    return any(name.startswith(("jaxtyping.", "beartype.")) for name in names)


def install_shape_checks(packages: list[str]):
    """Check the annotations of every module-level function, method and class of `packages` at run time, from
    their next import on: jaxtyping's import hook, with beartype. A function defined inside another function is
    left as it is, annotations and all: checked, it would be decorated anew each time the outer function runs
    and defines it again, about 250 microseconds of beartype's code generation per definition, charged to the
    code under test's CPU time. (jaxtyping is pinned; its loader looks its transformer up by name.) Returns the
    hook's handle (`.uninstall()`)."""
    import jaxtyping
    import jaxtyping._import_hook as hook

    if not getattr(hook.JaxtypingTransformer, "module_level_only", False):
        class ModuleLevelOnly(hook.JaxtypingTransformer):
            module_level_only = True

            def visit_FunctionDef(self, node):
                if any(isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) for parent in self._parents):
                    return node
                return super().visit_FunctionDef(node)

            visit_AsyncFunctionDef = visit_FunctionDef

        hook.JaxtypingTransformer = ModuleLevelOnly
    return jaxtyping.install_import_hook(packages, "beartype.beartype")
