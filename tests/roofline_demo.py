"""Draw the roofline of the lecture's example operations for one GPU, with your code or the reference.

    python -m tests.roofline_demo --gpu "H100 SXM" --out roofline.png
    python -m tests.roofline_demo --gpu A100 --dtype float32 --impl reference --out a100.png

GPUs: the names in `assignment/given.py`'s HARDWARE. By default it imports your `assignment/roofline.py`,
so the plot shows what your cost models and `plot_roofline` compute.
"""

import argparse
import importlib
import importlib.util
import sys

import torch

from assignment.given import HARDWARE


def lecture_points(roofline, dtype: torch.dtype) -> dict:
    """The lecture's examples: element-wise ops, a dot product, a matrix-vector product, and matmuls from
    a small batch (memory-bound) to a square 1024 one (compute-bound on most GPUs in bf16)."""
    n = 1024 * 1024
    return {
        "ReLU (1M)": roofline.relu_cost(n, dtype),
        "GELU (1M)": roofline.gelu_cost(n, dtype),
        "dot (1M)": roofline.dot_cost(n, dtype),
        "mat-vec 1024": roofline.matvec_cost(1024, 1024, dtype),
        "matmul 16x4096x4096": roofline.matmul_cost(16, 4096, 4096, dtype),
        "matmul 1024^3": roofline.matmul_cost(1024, 1024, 1024, dtype),
        "matmul 8192^3": roofline.matmul_cost(8192, 8192, 8192, dtype),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", default="H100 SXM", choices=sorted(HARDWARE), help="default: H100 SXM")
    parser.add_argument("--dtype", default="bfloat16", help="a dtype the GPU lists a peak for (default bfloat16)")
    parser.add_argument("--out", default="roofline.png", help="the PNG to write (default roofline.png)")
    # The student release has no reference/: offering it there would end in an ImportError.
    impls = [name for name in ("assignment", "reference") if importlib.util.find_spec(name) is not None]
    parser.add_argument("--impl", default="assignment", choices=impls,
                        help="whose roofline module draws it (default: assignment, your code)")
    options = parser.parse_args(argv)
    roofline = importlib.import_module(f"{options.impl}.roofline")
    hw, dtype = HARDWARE[options.gpu], getattr(torch, options.dtype)
    points = lecture_points(roofline, dtype)
    roofline.plot_roofline(hw, points, options.out, dtype)
    ridge = roofline.accelerator_intensity(hw, dtype)
    print(f"{hw.name}, {options.dtype}: ridge at {ridge:.1f} FLOP/byte; wrote {options.out}")
    for label, cost in points.items():
        print(f"  {label:<22} {roofline.arithmetic_intensity(cost):>10.2f} FLOP/byte  "
              f"{roofline.classify(cost, hw, dtype)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
