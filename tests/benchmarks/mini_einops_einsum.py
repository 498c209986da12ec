"""Time and memory of the reference einsum against einops.einsum (which hands the call to torch.einsum).

    python -m tests.benchmarks.mini_einops_einsum [--module reference.mini_einops] [--threads 1] [--skip-large]

For each case: the best per-call CPU time of each library (best of 5 rounds, each round long enough to time;
CPU seconds of this process with one torch thread, so that the machine's other work does not enter the figure),
their ratio (the issue's target: the reference within 1.5x of einops), and two memory figures per library,
both counted in bytes of tensor storage allocated during one call:

- "largest": the largest single allocation (the biggest intermediate or the output);
- "peak": the most bytes allocated by the call and alive at one time, the output included.

"bound" is the bytes of the inputs plus the output: the issue's target is that no intermediate is larger
(largest <= bound).

How memory is measured: a `TorchDispatchMode` sees every aten operation that the call runs, including
those inside torch.einsum (a composite operation: the mode sees the permutes, views and bmm it is made
of). Each tensor an operation returns is looked up by its storage: a storage not seen before (and not an
input's) is a new allocation of `untyped_storage().nbytes()` bytes; it stays live until the last tensor
returned on it is garbage (a `weakref.finalize` on each). Views share their base's storage and count
nothing. Neither tracemalloc (torch's allocator is not Python's) nor the process' RSS (allocator caching,
page granularity, other threads) resolves a megabyte-sized intermediate reliably; this does, exactly, for
what goes through the dispatcher, which on CPU is every tensor a Python-level call creates. Scratch
buffers a kernel allocates inside itself (none for these cases) would not be seen.

`--module` benchmarks another implementation with the same API (e.g. an older copy of the reference on
PYTHONPATH), for before/after figures.
"""

import argparse
import importlib
import timeit
import weakref

import einops
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from tests.benchmarks import cpu_timer, load_line

# name, pattern, input shapes
CASES = [
    ("small scores", "b i d, b j d -> b i j", [(2, 5, 8), (2, 7, 8)]),
    ("medium scores", "b i d, b j d -> b i j", [(4, 256, 64), (4, 256, 64)]),
    ("large scores", "b i d, b j d -> b i j", [(32, 512, 128), (32, 512, 128)]),
    ("medium matmul, output transposed", "i d, d j -> j i", [(512, 256), (256, 512)]),
    ("medium ellipsis batch", "... i d, ... j d -> ... i j", [(2, 2, 256, 64), (2, 256, 64)]),
    ("medium length-1 broadcast", "b i d, b j d -> b i j", [(1, 256, 64), (4, 256, 64)]),
    ("medium chain of three", "a b, b c, c d -> a d", [(256, 256), (256, 256), (256, 256)]),
    ("medium outer product", "b i, b j -> b i j", [(16, 256), (16, 256)]),
    ("medium single operand sum", "b i d -> b d", [(64, 256, 64)]),
    ("medium trace", "b i i -> b", [(64, 256, 256)]),
    ("medium summed-first axis", "b i k, b j d -> b i j", [(4, 256, 32), (4, 256, 64)]),
]
LARGE = ("large scores",)


class AllocationTracker(TorchDispatchMode):
    """Counts the tensor storage allocated by the aten operations run under it (see the module docstring)."""

    def __init__(self, inputs):
        super().__init__()
        self.external = {t.untyped_storage().data_ptr() for t in inputs}
        self.live: dict[int, list[int]] = {}  # storage pointer -> [bytes, live tensors on it]
        self.current = self.peak = self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor):
                self._returned(tensor)
        return out

    def _returned(self, tensor: torch.Tensor) -> None:
        key = tensor.untyped_storage().data_ptr()
        if key in self.external:
            return
        if key not in self.live:
            nbytes = tensor.untyped_storage().nbytes()
            self.live[key] = [nbytes, 0]
            self.current += nbytes
            self.peak = max(self.peak, self.current)
            self.largest = max(self.largest, nbytes)
        self.live[key][1] += 1
        weakref.finalize(tensor, self._released, key)

    def _released(self, key: int) -> None:
        entry = self.live[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self.live[key]


def measure_memory(library, tensors, pattern) -> tuple[int, int, int]:
    """(largest allocation, peak live bytes, output bytes) of one call."""
    tracker = AllocationTracker(tensors)
    with tracker:
        out = library.einsum(*tensors, pattern)
    return tracker.largest, tracker.peak, out.numel() * out.element_size()


def per_call_seconds(fn) -> float:
    """Best of 5 rounds, in CPU seconds; each round runs enough calls to take about 0.1 s (one call if it is
    longer)."""
    timer = timeit.Timer(fn, timer=cpu_timer)
    number, elapsed = 1, timer.timeit(number=1)
    while elapsed < 0.1 and number < 10**6:
        number *= 10
        elapsed = timer.timeit(number=number)
    rounds = 5 if elapsed < 2 else 2
    return min([elapsed] + timer.repeat(number=number, repeat=rounds - 1)) / number


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.2f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", default="reference.mini_einops", help="the implementation to compare")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: a shared machine; with more, a call's CPU time is every "
                             "thread's, spinning waits included)")
    parser.add_argument("--skip-large", action="store_true", help="leave out the large case")
    parser.add_argument("--case", action="append", help="only cases whose name contains this (repeatable)")
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    mini = importlib.import_module(options.module)
    generator = torch.Generator().manual_seed(0)

    print(f"{options.module} against einops {einops.__version__} (torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s)); memory in MiB of tensor storage per call")
    print(load_line())
    print(f"{'case':<34}{'einops':>12}{'mini':>13}{'ratio':>10}  |{'largest e/m':>14}{'peak e/m':>15}"
          f"{'bound':>8}{'largest/bound':>15}")
    for name, pattern, shapes in CASES:
        if (options.skip_large and name in LARGE) or (options.case and not any(c in name for c in options.case)):
            continue
        tensors = [torch.randn(shape, generator=generator) for shape in shapes]
        expected, got = einops.einsum(*tensors, pattern), mini.einsum(*tensors, pattern)
        tol = 1e-4  # a check that the figures are for the right answer, not the tests' tolerance
        torch.testing.assert_close(got, expected, rtol=tol, atol=tol * max(1.0, float(expected.abs().max())))
        seconds = [per_call_seconds(lambda lib=lib, ts=tensors, p=pattern: lib.einsum(*ts, p))
                   for lib in (einops, mini)]
        memory = [measure_memory(lib, tensors, pattern) for lib in (einops, mini)]
        bound = sum(t.numel() * t.element_size() for t in tensors) + memory[0][2]
        print(f"{name:<34}{_time(seconds[0]):>12}{_time(seconds[1]):>13}{seconds[1] / seconds[0]:>9.2f}x  |"
              f"{_mib(memory[0][0]) + '/' + _mib(memory[1][0]):>14}{_mib(memory[0][1]) + '/' + _mib(memory[1][1]):>15}"
              f"{_mib(bound):>8}{memory[1][0] / bound:>14.2f}x")


if __name__ == "__main__":
    main()
