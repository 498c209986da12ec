"""The one list of graded problems: id, title, points and module.

The handout's section headings, the pytest markers, the grader's rubric and the release all read this
list; a meta-test checks that they agree.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    id: str
    title: str
    points: int

    @property
    def module(self) -> str:
        """The module name in `assignment/` and `reference/` (the same as the id)."""
        return self.id

    @property
    def test_file(self) -> str:
        return f"tests/test_{self.id}.py"


PROBLEMS: tuple[Problem, ...] = (
    Problem("tensors", "How a tensor lives in memory", 10),
    Problem("einops_practice", "einsum, reduce, rearrange", 7),
    Problem("mini_einops", "The three operations from scratch", 16),
    Problem("flops", "Counting compute", 14),
    Problem("memory", "Counting bytes", 8),
    Problem("precision", "Number formats and mixed precision", 14),
    Problem("adamw", "The optimizer and its bytes", 9),
    Problem("roofline", "Arithmetic intensity", 7),
    Problem("gradient_accumulation", "Gradient accumulation", 5),
    Problem("activation_checkpointing", "Activation checkpointing", 6),
    Problem("benchmarking", "Benchmarking", 4),
)

BY_ID: dict[str, Problem] = {p.id: p for p in PROBLEMS}
PROBLEM_MODULES = frozenset(p.module for p in PROBLEMS)

# Markers that are not problems. `gpu`: needs a Hopper GPU, worth no points by default.
EXTRA_MARKERS = {
    "gpu": "needs a Hopper GPU (H100/H200); skipped elsewhere and worth no points",
    "differential": "compares against reference/; skipped in the student release",
    "meta": "tests of the test suite itself (TAs and CI)",
}

# What each problem is graded against and its code may not run: modules (every file of a package) and
# compiled kernels, by dotted name. The worker's guard (tests/seam/guard.py) fails a call into the code under
# test that runs one of them, however it was reached, and refuses to open or compile their source.
ORACLES: dict[str, tuple[str, ...]] = {
    "mini_einops": ("einops",),
    "flops": ("torch.utils.flop_counter",),
    "adamw": ("torch.optim.adam", "torch.optim.adamw", "torch._fused_adamw_", "torch._fused_adam_"),
    "activation_checkpointing": ("torch.utils.checkpoint",),
}

assert sum(p.points for p in PROBLEMS) == 100
