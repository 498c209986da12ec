"""Which exceptions are failed run-time type checks (jaxtyping with beartype): used by the worker, which cuts
their traceback, and by the report, which cuts their chain. In tests/seam/ because the worker sees only it."""


def is_type_check_error(exc: BaseException) -> bool:
    """A failed run-time type check: jaxtyping's TypeCheckError or a beartype violation, raised here or, as
    `remote_type`, in the grading worker."""
    names = [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__]
    names.append(getattr(exc, "remote_type", None) or "")
    return any(name.startswith(("jaxtyping.", "beartype.")) for name in names)
