"""Which exceptions are failed run-time type checks (jaxtyping with beartype): used by the worker, which cuts
their traceback, and by the report, which cuts their chain and adds the hint.
"""

# Added to a run-time type check's failure (jaxtyping with beartype; see the handout's Setup).
TYPE_CHECK_HINT = ("hint: every annotation in your module is checked whenever one of its functions is called, by "
                   "the tests or by your own code (scalars too: a float is not an int, and an int is not a float "
                   "unless the annotation says int | float); keep the stubs' annotations and pass what they say")


def is_type_check_error(exc: BaseException) -> bool:
    """A failed run-time type check: jaxtyping's TypeCheckError or a beartype violation, raised here or, as
    `remote_type`, in the grading worker."""
    names = [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__]
    names.append(getattr(exc, "remote_type", None) or "")
    return any(name.startswith(("jaxtyping.", "beartype.")) for name in names)
