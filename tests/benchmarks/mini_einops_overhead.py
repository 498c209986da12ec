"""Per-call CPU time of the reference mini_einops against einops and plain torch, on small tensors (one torch
thread; CPU seconds of this process, so that the machine's other work does not enter the figures).

    python -m tests.benchmarks.mini_einops_overhead [--repeats N]

Warm: the same call again and again (every cache hit). Cold: each call with a pattern not seen before
(a fresh axis name), so the pattern is parsed and planned again — the cost the caches save. On tensors
this small the time is almost all Python overhead, which is what is compared. The issue's target: the
reference's warm overhead within 3x of einops'.
"""

import argparse
import itertools
import timeit

import einops
import torch

from reference import mini_einops
from tests.benchmarks import cpu_timer, load_line

x4 = torch.randn(2, 3, 4, 6)
x3 = torch.randn(2, 3, 8)
q, k = torch.randn(2, 5, 8), torch.randn(2, 7, 8)

# name, the einops / mini_einops call (library, pattern) and the plain-torch equivalent
CASES = [
    ("rearrange transpose", lambda m, p: m.rearrange(x4, p), "b c h w -> b h w c",
     lambda: x4.permute(0, 2, 3, 1)),
    ("rearrange split heads", lambda m, p: m.rearrange(x3, p, h=2), "b s (h d) -> b h s d",
     lambda: x3.view(2, 3, 2, 4).transpose(1, 2)),
    ("reduce max-pool", lambda m, p: m.reduce(x4, p, "max"), "b c (h 2) (w 2) -> b c h w",
     lambda: x4.view(2, 3, 2, 2, 3, 2).amax(dim=(3, 5))),
    ("repeat upsample", lambda m, p: m.repeat(x3, p), "b s d -> b (s 2) d",
     lambda: x3.repeat_interleave(2, dim=1)),
    ("einsum scores", lambda m, p: m.einsum(q, k, p), "b i d, b j d -> b i j",
     lambda: torch.bmm(q, k.transpose(1, 2))),
]


def per_call_us(fn, repeats: int) -> float:
    """Best of 5 CPU timings of `repeats` calls, in microseconds per call."""
    return min(timeit.repeat(fn, number=repeats, repeat=5, timer=cpu_timer)) / repeats * 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2000)
    options = parser.parse_args(argv)
    torch.set_num_threads(1)
    fresh = itertools.count()

    def cold(library, call, pattern):
        first = pattern.split()[0].strip(",")

        def run():
            call(library, pattern.replace(first, f"{first}{next(fresh)}"))
        return run

    print(load_line())
    print(f"{'case':<24}{'torch':>9}{'einops warm':>13}{'mini warm':>11}{'ratio':>7}"
          f"{'einops cold':>13}{'mini cold':>11}   (us of CPU per call)")
    for name, call, pattern, plain in CASES:
        torch_us = per_call_us(plain, options.repeats)
        libraries = (einops, mini_einops)
        warm = [per_call_us(lambda lib=lib, c=call, p=pattern: c(lib, p), options.repeats) for lib in libraries]
        cold_us = [per_call_us(cold(lib, call, pattern), max(options.repeats // 10, 50)) for lib in libraries]
        print(f"{name:<24}{torch_us:>9.1f}{warm[0]:>13.1f}{warm[1]:>11.1f}{warm[1] / warm[0]:>6.2f}x"
              f"{cold_us[0]:>13.1f}{cold_us[1]:>11.1f}")


if __name__ == "__main__":
    main()
