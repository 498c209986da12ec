"""The oracle runs: what a test compares the code under test with, computed in the test process only.

Each function runs an oracle (torch's FLOP counter, torch's AdamW, torch.utils.checkpoint) on the same
seeded workload that a scenario (tests/scenarios/) runs beside the code under test. This module is not in
the worker's tree (grader/harness/boundary.py: WORKER) and nothing the worker imports refers to it: the worker
has no oracle in it (grader/harness/absent.py), so no scenario can be made to run one for the code under test.
"""

import torch
from torch import nn

from tests.scenarios import activation_checkpointing, adamw, flops


def oracle_count(spec: dict) -> dict:
    """What FlopCounterMode counts for the workload: {"total": int, "by_op": {"aten.mm": int, ...}}."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        flops.run_workload(spec)
    by_op = {str(op): n for op, n in mode.get_flop_counts().get("Global", {}).items() if n}
    return {"total": mode.get_total_flops(), "by_op": by_op}


def torch_trajectory(spec: dict) -> dict:
    """torch.optim.AdamW (default implementation on the CPU) on the spec's trajectory."""
    return adamw.trajectory(torch.optim.AdamW, spec)


def emulated_fp32_state_trajectory(spec: dict) -> dict:
    """For bfloat16 parameters with float32 state: torch.optim.AdamW on a float32 copy of each parameter,
    which is rounded to bfloat16 after every step (that rounded value is what the next step starts from) and
    fed the bfloat16 gradient."""
    params, grads, _ = adamw.make_problem(spec)
    wide = [nn.Parameter(p.detach().float()) for p in params]
    optimizer = torch.optim.AdamW(adamw.groups(spec, wide))
    for grads_of_step in grads:
        for w, g in zip(wide, grads_of_step, strict=True):
            w.grad = None if g is None else g.float()
        optimizer.step()
        with torch.no_grad():
            for p, w in zip(params, wide, strict=True):
                p.copy_(w)  # round to bfloat16
                w.copy_(p)
    states = []
    for w in wide:
        state = optimizer.state.get(w, {})
        states.append({} if not state else {"step": int(state["step"]), "exp_avg": state["exp_avg"].clone(),
                                            "exp_avg_sq": state["exp_avg_sq"].clone()})
    return {"params": [p.detach().clone() for p in params], "state": states, "losses": []}


TORCH_OPTIMIZERS = {"torch_adamw": lambda params: torch.optim.AdamW(params, lr=1e-2),
                    "torch_sgd_momentum": lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9)}


def torch_state(spec: dict, kind: str, steps: int = 1) -> list | None:
    """The state of torch's optimizer `kind` ("torch_adamw", "torch_sgd_momentum") after `steps` steps with
    the spec's first gradients: per parameter, its state's tensors ({} before its first step). None for
    "ours" (the optimizer under test, which the scenario builds). The scenario `adamw.state_bytes` hands it
    to the code under test in a stand-in optimizer (`adamw.Replayed`)."""
    if kind == "ours":
        return None
    params, grads, _ = adamw.make_problem(spec)
    optimizer = TORCH_OPTIMIZERS[kind](params)
    for _ in range(steps):
        for p, g in zip(params, grads[0], strict=True):
            p.grad = None if g is None else g.clone()
        optimizer.step()
    return [{k: v.detach().clone() for k, v in optimizer.state.get(p, {}).items() if isinstance(v, torch.Tensor)}
            for p in params]


def measured_state_bytes(spec: dict, kind: str, steps: int = 1) -> int:
    """The bytes of every tensor in the state of torch's optimizer `kind` after `steps` steps."""
    return sum(v.numel() * v.element_size() for state in torch_state(spec, kind, steps) for v in state.values())


def torch_checkpoint(spec: dict) -> dict:
    """The checkpointed block through torch.utils.checkpoint (non-reentrant, RNG state preserved). Saved
    bytes are not comparable (it packs through hooks of its own)."""
    import torch.utils.checkpoint as tc

    return activation_checkpointing.block_run(
        lambda fn, *args: tc.checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=True), spec)
