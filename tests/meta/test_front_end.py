"""The stand-in for torch's compiler front end (grader/harness/front_end.py): eager code computes the same with it
as with the real one, which it never imports; whatever needs more of the front end loads the real one in place.
And the GELU oracle that replaced make_fx (which imports the front end) counts what make_fx traced."""

import json
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from tests.meta.suite import ROOT
from tests.oracles import _gelu_flops

pytestmark = pytest.mark.meta

# What the oracles and the scenarios ask of torch that reaches the front end: optimizers (their constructor, step
# and zero_grad), a scaler's step under autocast, both checkpoints, checkpoint_sequential, FlopCounterMode
# through a backward, assert_close.
EAGER = """
import json, sys
import torch
from torch import nn
if sys.argv[1] == "stand-in":
    from grader.harness import front_end
    front_end.install()
torch.manual_seed(0)
out = {}
model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 3))
for name, make in [("AdamW", lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.1)),
                   ("Adam", lambda p: torch.optim.Adam(p, lr=0.1, fused=True)),
                   ("SGD", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
                   ("Adagrad", lambda p: torch.optim.Adagrad(p))]:
    optimizer = make(model.parameters())
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(5, 4)).pow(2).sum().backward()
        optimizer.step()
    out[name] = [p.sum().item() for p in model.parameters()]
scaler, optimizer = torch.amp.GradScaler("cpu"), torch.optim.SGD(model.parameters(), lr=0.1)
with torch.autocast("cpu", dtype=torch.bfloat16):
    loss = model(torch.randn(5, 4)).float().pow(2).sum()
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
out["scaler"] = [p.sum().item() for p in model.parameters()]
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
x = torch.randn(5, 4, requires_grad=True)
for reentrant in (False, True):
    checkpoint(model, x, use_reentrant=reentrant).sum().backward()
    out[f"checkpoint {reentrant}"], x.grad = x.grad.sum().item(), None
checkpoint_sequential(model, 2, x, use_reentrant=False).sum().backward()
out["checkpoint_sequential"] = x.grad.sum().item()
from torch.utils.flop_counter import FlopCounterMode
meta = nn.Sequential(nn.Linear(4, 4, device="meta"), nn.GELU(), nn.Linear(4, 3, device="meta"))
with FlopCounterMode(display=False) as mode:
    meta(torch.empty(8, 4, device="meta", requires_grad=True)).sum().backward()
out["flops"] = mode.get_total_flops()
torch.testing.assert_close(torch.ones(3), torch.ones(3))
out["front end"] = type(sys.modules.get("torch._dynamo")).__name__
print(json.dumps(out))
"""


def run(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_eager_code_computes_the_same_with_the_stand_in_which_never_loads_the_front_end():
    real, stand_in = run(EAGER, "real"), run(EAGER, "stand-in")
    assert real.pop("front end") == "module"
    assert stand_in.pop("front end") == "StandIn", "eager code loaded the real front end"
    assert stand_in == real  # the same seeds, the same ops: exactly equal


# After the stand-in: a function torch disabled before, a submodule, a name of the front end, torch.compile,
# and what torch registered at import (torch.nn.attention.bias) as the real front end has it.
LATER = """
import json, sys
import torch
if sys.argv[1] == "stand-in":
    from grader.harness import front_end
    front_end.install()
import torch.nn.attention.bias as bias
torch.manual_seed(0)
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.AdamW(model.parameters())
model(torch.ones(1, 2)).sum().backward()
optimizer.step()
before = type(sys.modules["torch._dynamo"]).__name__
import torch._dynamo.utils
from torch._dynamo import trace_rules
optimizer.step()
compiled = torch.compile(lambda x: x * 2, backend="eager")
print(json.dumps({"before": before, "after": type(sys.modules["torch._dynamo"]).__name__,
                  "same": torch._dynamo is sys.modules["torch._dynamo"], "compiled": compiled(torch.ones(2)).tolist(),
                  "rule": type(trace_rules.lookup(bias.can_use_flash_attention)).__name__,
                  "weights": model.weight.sum().item()}))
"""


def test_what_needs_more_loads_the_real_front_end_in_place():
    real, stand_in = run(LATER, "real"), run(LATER, "stand-in")
    assert stand_in.pop("before") == "StandIn" and real.pop("before") == "module"
    assert stand_in == real
    assert stand_in["after"] == "module" and stand_in["same"]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("n", [1, 2, 7, 4097, 10**6 + 3])
def test_the_gelu_oracle_counts_what_make_fx_traces(n, approximate):
    from torch._decomp import get_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(lambda t: F.gelu(t, approximate=approximate),
                    decomposition_table=get_decompositions([torch.ops.aten.gelu]))(torch.zeros(n))
    traced = sum(node.meta["val"].numel() for node in graph.graph.nodes if node.op == "call_function")
    assert _gelu_flops(n, approximate) == traced
