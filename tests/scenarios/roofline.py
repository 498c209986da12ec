"""Oracles for the roofline problem (test process only), and the scenario that hides matplotlib.

FLOPs come from torch: `FlopCounterMode` for the products, and PyTorch's own decomposition of GELU into
element-wise operations for GELU. Bytes come from the sizes of the tensors an op reads and writes. All on
the meta device: shapes and dtypes, nothing allocated.
"""

import functools
import sys
import warnings

import torch
import torch.nn.functional as F
from torch._decomp import get_decompositions
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

META = torch.device("meta")


def _meta(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=META)


def _nbytes(tensors, dtype: torch.dtype) -> int:
    """Bytes of tensors of these shapes in `dtype` (a meta tensor of each, measured by torch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sum(_meta(*t.shape, dtype=dtype).nbytes for t in tensors)


def _counted_flops(fn, *inputs) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        fn(*inputs)
    return mode.get_total_flops()


class _Elements(TorchDispatchMode):
    """The elements that the ops run under it write: one FLOP each, for element-wise ops."""

    def __init__(self):
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.elements += sum(t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        return out


@functools.lru_cache(maxsize=256)
def _gelu_flops(n: int, approximate: str) -> int:
    """One FLOP per element per element-wise op in PyTorch's decomposition of aten.gelu, run on a meta tensor
    of n elements (what make_fx would trace of it: tests/meta/test_front_end.py compares the two; make_fx
    itself would import torch's compiler front end, grader/harness/front_end.py)."""
    gelu = get_decompositions([torch.ops.aten.gelu])[torch.ops.aten.gelu.default]
    x = _meta(n)
    with _Elements() as mode:
        gelu(x, approximate=approximate)
    return mode.elements


def oracle_cost(kind: str, sizes: tuple, dtype: torch.dtype) -> dict:
    """{"flops", "bytes"} of the op `kind` on `sizes`, measured with torch."""
    if kind in ("relu", "gelu", "gelu_tanh"):
        (n,) = sizes
        x = _meta(n)
        y = F.relu(x) if kind == "relu" else F.gelu(x)
        flops = n if kind == "relu" else _gelu_flops(n, "tanh" if kind == "gelu_tanh" else "none")
        return {"flops": flops, "bytes": _nbytes([x, y], dtype)}
    if kind == "dot":
        (n,) = sizes
        x, y = _meta(n), _meta(n)
        flops = _counted_flops(torch.mm, x.view(1, n), y.view(n, 1))
        return {"flops": flops, "bytes": _nbytes([x, y, torch.dot(x, y)], dtype)}
    if kind == "matvec":
        m, n = sizes
        a, x = _meta(m, n), _meta(n)
        flops = _counted_flops(torch.mm, a, x.view(n, 1))
        return {"flops": flops, "bytes": _nbytes([a, x, torch.mv(a, x)], dtype)}
    if kind == "matmul":
        b, d, k = sizes
        x, w = _meta(b, d), _meta(d, k)
        return {"flops": _counted_flops(torch.mm, x, w), "bytes": _nbytes([x, w, x @ w], dtype)}
    raise ValueError(kind)


def plot_without_matplotlib(pkg, hw, points: dict, path: str) -> dict:
    """Scenario: plot_roofline while matplotlib cannot be imported; what it raised."""
    hidden = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "matplotlib"}
    for name in hidden:
        sys.modules[name] = None  # an import of a module set to None raises ImportError
    sys.modules["matplotlib"] = None
    try:
        pkg.roofline.plot_roofline(hw, points, path)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # the test decides whether it is the right one
        return {"raised": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "matplotlib"]:
            del sys.modules[name]
        sys.modules.update(hidden)
    return {"raised": [], "message": ""}
