"""Problem (adamw): the optimizer and its bytes.

Oracles:
- `torch.optim.AdamW` (its default implementation on the CPU) on hypothesis-generated trajectories: 1-3
  parameters (scalars among them) in 1-2 param groups with their own hyperparameters, 1-4 steps, each
  parameter with or without a gradient at each step, gradients at their own scale; in two parts each,
  without and with weight decay, so that a slip in the decay costs only the parts with it. The optimizer
  under test runs in a scenario (beside the code under test); torch's runs the same seeded trajectory in
  the test process.
- Any Adam's first step: every coordinate with a gradient moves against it (whatever the formula's details):
  the evidence that the tests below test an optimizer that steps.
- Your own AdamW, for what is not the update's formula (a slip in the formula costs the tests above, not
  these): step(closure) steps exactly as the closure called first and step() after, calls it once and
  returns its loss; an optimizer built with other hyperparameters (groups' and defaults) and given the
  spec's in its param groups before every step, the learning rate changed between steps as a scheduler
  does, steps exactly as one built with the spec's; a parameter that never has a gradient is left
  exactly alone. Bit for bit: the same code on the same numbers.
- For bfloat16 parameters with float32 state: torch.optim.AdamW on a float32 copy that is rounded to
  bfloat16 after every step (what "fp32 moments, bf16 parameters, no master copy" means).
- `optimizer_state_bytes`: the bytes of every tensor in the state of torch's AdamW and SGD with momentum,
  measured in the test process; for the AdamW under test, the precision-policy table of
  assignment/given.py (`POLICIES`, `OPTIMIZER_STATE_TENSORS`) and the state tensors it returns.

Tolerances: float64 trajectories to 1e-10 relative (1e-12 absolute): the update is a few dozen float64
operations per step, each rounding at 1e-16, over at most four steps, so any correct order of operations
is far inside it, while the closest catalogued mistake (decay after the update instead of before) is off
by about lr * weight_decay * (the step), at least 1e-8 here whenever weight_decay > 0. float32 to 1e-5
relative (1e-6 absolute): float32 rounds at 6e-8. bfloat16 parameters with float32 moments to 1e-2
relative (1e-3 absolute), two bf16 steps (2^-8 relative each) for a final rounding that tips the other
way, the float32 moments to 1e-5. bfloat16 parameters with bfloat16 moments, where every op rounds to bf16:
2e-2 relative and 4 bf16 ulps (2^-6) of lr per step absolute, the moments 2e-2 relative and 2^-6 of their
size (a textbook order of operations, checked on 300 trajectories, stays inside; torch's order is exact).
Moments' absolute tolerances are relative to their largest entry. Step counts and bytes are exact.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from assignment.given import OPTIMIZER_STATE_TENSORS, POLICIES
from tests import audit, oracles
from tests.audit_run import own_run, run_without
from tests.checks import expect_int
from tests.documented import cases, expect_documented_error
from tests.scenarios import adamw as scenarios
from tests.strategies.adamw import adamw_trajectories

pytestmark = pytest.mark.adamw

TOLERANCES = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6), "bfloat16": (1e-2, 1e-3)}
HINT = ("PyTorch's order: decay p by (1 - lr*weight_decay) first, then the moments, bias corrections "
        "1 - beta^t, eps added outside the square root")


# AdamW's forms that other texts use, and what each changes: a trajectory that is one of them is named in the hint
FORMS = {
    "eps before the bias correction": "your eps is added to sqrt(v) before the bias correction (lr * sqrt(1 - "
                                      "beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)): add it to sqrt(v_hat), "
                                      "after the correction, as torch does",
    "eps inside the square root": "your eps is inside the square root: add it outside, to sqrt(v_hat)",
    "decay after the update": "your weight decay comes after the update: decay p by (1 - lr*weight_decay) first",
    "no bias correction": "the bias corrections are missing: m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)",
    "L2 in the gradient": "your weight decay is added to the gradient (L2, Adam's): AdamW decays the parameter "
                          "itself, apart from the moments",
}


def emulated_form(spec: dict, form: str) -> list[torch.Tensor]:
    """The spec's trajectory (a plain one: no closure, no schedule) under one of FORMS, in the parameters' dtype."""
    params, grads, _ = scenarios.make_problem(spec)
    group_of = {i: g for g in spec["groups"] for i in g["params"]}
    values = [p.detach().clone() for p in params]
    moments: dict[int, tuple] = {}
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            if g is None:
                continue
            group = group_of[i]
            lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            m, v, t = moments.get(i, (torch.zeros_like(g), torch.zeros_like(g), 0))
            p, t = values[i], t + 1
            if form == "L2 in the gradient":
                g = g + decay * p
            elif form != "decay after the update":
                p = p * (1 - lr * decay)
            m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
            c1, c2 = (1.0, 1.0) if form == "no bias correction" else (1 - beta1**t, 1 - beta2**t)
            if form == "eps before the bias correction":
                p = p - lr * c2**0.5 / c1 * m / (v.sqrt() + eps)
            elif form == "eps inside the square root":
                p = p - lr / c1 * m / (v / c2 + eps).sqrt()
            else:
                p = p - lr / c1 * m / ((v / c2).sqrt() + eps)
            if form == "decay after the update":
                p = p - lr * decay * p
            values[i], moments[i] = p, (m, v, t)
    return values


def formula_hint(got: dict, spec: dict, rtol: float, atol: float) -> str:
    """What the update's formula gets wrong, where the trajectory is one of FORMS; else the general hint."""
    if spec["dtype"] not in ("float64", "float32") or spec.get("state_dtype") or "lrs" in spec or spec.get("closure"):
        return HINT
    for form, hint in FORMS.items():
        emulated = emulated_form(spec, form)
        if all(torch.allclose(g, e, rtol=rtol, atol=atol) for g, e in zip(got["params"], emulated, strict=True)):
            expected = oracles.torch_trajectory(spec)["params"]
            if not all(torch.allclose(e, x, rtol=rtol, atol=atol) for e, x in zip(emulated, expected, strict=True)):
                return hint  # the form differs from torch's here, and yours is it
    return HINT


PARTS = pytest.mark.parametrize("part", ["parameters", "state"])  # what a step leaves: a share each


def expect_trajectory(got: dict, expected: dict, spec: dict, *, source: str, hint: str = HINT,
                      tolerances: tuple[float, float] | None = None, state_tolerances=None, where: str = "",
                      equal_nan: bool = False, part: str | None = None) -> None:
    """`where` names the spec among several in one falsifying example ("specs[1] of ...: "); `equal_nan`: a NaN
    matches a NaN (the audit compares your code with itself, whatever its values); `part`: the parameters (and the
    closures' losses) alone, or the state alone; None, both."""
    rtol, atol = tolerances or TOLERANCES[spec["dtype"]]
    s_rtol, s_atol = state_tolerances or (rtol, atol)
    what = f"{where}AdamW on the trajectory {spec}"
    if part != "state":
        _expect_parameters(got, expected, spec, source, hint, rtol, atol, what, equal_nan)
    if part != "parameters":
        _expect_state(got, expected, source, s_rtol, s_atol, what, equal_nan)


def _expect_parameters(got, expected, spec, source, hint, rtol, atol, what, equal_nan) -> None:
    for i, (g, e) in enumerate(zip(got["params"], expected["params"], strict=True)):
        assert g.dtype == e.dtype and g.shape == e.shape, (
            f"{what}: parameter {i} should stay {e.dtype} {tuple(e.shape)}, got {g.dtype} {tuple(g.shape)}")
        torch.testing.assert_close(g, e, rtol=rtol, atol=atol, equal_nan=equal_nan, msg=lambda m, i=i: (
            f"{what}: parameter {i} after {spec['steps']} steps differs from {source}\n{m}\n  hint: "
            f"{formula_hint(got, spec, rtol, atol) if hint is HINT else hint}"))
    for g, e in zip(got["losses"], expected["losses"], strict=True):
        same_nan = equal_nan and type(g) is float and math.isnan(g) and math.isnan(e)
        assert type(g) is float and (math.isclose(g, e, rel_tol=rtol, abs_tol=atol) or same_nan), (
            f"{what}: step(closure) should return the closure's loss {e!r}, got {g!r}")


def _expect_state(got, expected, source, s_rtol, s_atol, what, equal_nan) -> None:
    for i, (g, e) in enumerate(zip(got["state"], expected["state"], strict=True)):
        if not e:
            assert not g, f"{what}: parameter {i} never had a gradient: it must get no state, got {sorted(g)}"
            continue
        assert g, f"{what}: parameter {i} had a gradient but has no state"
        missing = [key for key in ("step", "exp_avg", "exp_avg_sq") if key in e and key not in g]
        assert not missing, (f"{what}: the state of parameter {i} has the keys {g['keys']}, not {missing}\n"
                             f"  hint: keep state['step'] (a Python int), state['exp_avg'] and state['exp_avg_sq'], "
                             f"as the docstring names them")
        if "step" in e:  # your own AdamW compared with itself keeps whatever keys it keeps
            expect_int(g["step"], e["step"], what=f"{what}: state['step'] of parameter {i}", source=source,
                       hint="count the steps in which this parameter had a gradient (a Python int)")
        for key in [key for key in ("exp_avg", "exp_avg_sq") if key in e]:
            assert g[key].dtype == e[key].dtype, f"{what}: state[{key!r}] of parameter {i} is {g[key].dtype}, " \
                                                 f"expected {e[key].dtype}"
            scale = max(1.0, e[key].abs().max().item()) if e[key].numel() else 1.0  # atol relative to the moment's size
            torch.testing.assert_close(g[key], e[key], rtol=s_rtol, atol=s_atol * scale, equal_nan=equal_nan,
                                       msg=lambda m, i=i, key=key: (
                f"{what}: state[{key!r}] of parameter {i} differs from {source}\n{m}"))


# -- the update, against torch.optim.AdamW ----------------------------------------------------------------

DECAY = pytest.mark.parametrize("decay", [False, True], ids=["no-weight-decay", "weight-decay"])  # a share each


def expect_float64_trajectories(impl, specs: list, part: str) -> None:
    got = impl.run(scenarios.run_many, specs)
    for j, (g, spec) in enumerate(zip(got, specs, strict=True)):
        expect_trajectory(g, oracles.torch_trajectory(spec), spec, source="torch.optim.AdamW",
                          where=f"specs[{j}] of the falsifying example: ", part=part)


# Three trajectories per example: the ci profile's 40 examples check 120 for each test.
@PARTS
@given(specs=st.lists(adamw_trajectories("float64", weight_decay=False), min_size=3, max_size=3))
def test_adamw_matches_torch_float64_without_weight_decay(impl, part, specs):
    expect_float64_trajectories(impl, specs, part)


@PARTS
@given(specs=st.lists(adamw_trajectories("float64", weight_decay=True), min_size=3, max_size=3))
def test_adamw_matches_torch_float64_with_weight_decay(impl, part, specs):
    expect_float64_trajectories(impl, specs, part)


@PARTS
@DECAY
@given(data=st.data())
def test_adamw_matches_torch_float32(impl, decay, part, data):
    spec = data.draw(adamw_trajectories("float32", weight_decay=decay), label="spec")
    got = impl.run(scenarios.run, spec)
    expect_trajectory(got, oracles.torch_trajectory(spec), spec, source="torch.optim.AdamW", part=part)


@PARTS
@DECAY
@given(data=st.data())
def test_adamw_bf16_params_default_state_like_torch(impl, decay, part, data):
    spec = data.draw(adamw_trajectories("bfloat16", weight_decay=decay), label="spec")
    # state_dtype=None: the moments in the parameter's dtype, as torch keeps them.
    # Every op rounds to bf16 here, so a different (correct) order of operations moves each step by a few bf16
    # ulps of the update: the absolute tolerance is 4 ulps (2^-6) of lr per step, the state's 2^-6 of its size.
    got = impl.run(scenarios.run, dict(spec, state_dtype=None))
    max_lr = max(g["lr"] for g in spec["groups"])
    expect_trajectory(got, oracles.torch_trajectory(spec), spec, source="torch.optim.AdamW on bf16 parameters",
                      hint=HINT + "; with state_dtype=None the moments are in the parameter's dtype",
                      tolerances=(2e-2, 2**-6 * max_lr * spec["steps"] + 1e-3), state_tolerances=(2e-2, 2**-6),
                      part=part)


@PARTS
@DECAY
@given(data=st.data())
def test_adamw_bf16_params_fp32_state(impl, decay, part, data):
    spec = dict(data.draw(adamw_trajectories("bfloat16", weight_decay=decay), label="spec"), state_dtype="float32")
    got = impl.run(scenarios.run, spec)
    expected = oracles.emulated_fp32_state_trajectory(spec)
    expect_trajectory(got, expected, spec, source="torch.optim.AdamW on a float32 copy rounded to bf16 every step",
                      hint="moments in float32; compute the update in float32 and round it into the bf16 "
                           "parameter once per step", state_tolerances=(1e-5, 1e-7), part=part)


# -- what is not the formula, against your own AdamW: bit for bit -------------------------------------------

def expect_the_same_steps(got: dict, expected: dict, spec: dict, *, source: str, hint: str) -> None:
    expect_trajectory(got, expected, spec, source=source, hint=hint, tolerances=(0, 0), state_tolerances=(0, 0),
                      equal_nan=True)


@given(spec=adamw_trajectories("float32"))
def test_adamw_closure(impl, spec):
    closure, called_first = impl.run(scenarios.run_many, [dict(spec, closure=True),
                                                          dict(spec, closure="called_first")])
    assert closure["calls"] == [1] * spec["steps"], (
        f"AdamW on {spec}: step(closure) should call the closure once per step; it was called "
        f"{closure['calls']} times in the {spec['steps']} steps")
    expect_the_same_steps(closure, called_first, spec,
                          source="your own AdamW when the closure is called first and step() after it",
                          hint="call the closure first, with gradients enabled (torch.enable_grad()), then step, "
                               "and return its loss")


# Hyperparameters no generated group has: an optimizer built with them and given the spec's before each step
# steps as one built with the spec's only if it reads them from the groups then.
BUILT_WITH = {"defaults": {"lr": 0.7, "betas": (0.3, 0.6), "eps": 0.2, "weight_decay": 0.05},
              "group": {"lr": 0.4, "betas": (0.2, 0.7), "eps": 0.3, "weight_decay": 0.15}}


@given(spec=adamw_trajectories("float64"), data=st.data())
def test_adamw_reads_hyperparameters_from_the_groups_each_step(impl, spec, data):
    lrs = data.draw(st.lists(st.sampled_from([0.0, 1e-3, 0.05, 0.2]), min_size=spec["steps"],
                             max_size=spec["steps"]), label="lrs")
    spec = dict(spec, lrs=lrs)
    built = {"defaults": BUILT_WITH["defaults"], "groups": [BUILT_WITH["group"]] * len(spec["groups"])}
    as_given, set_later = impl.run(scenarios.run_many, [spec, dict(spec, built_with=built)])
    expect_the_same_steps(set_later, as_given, spec,
                          source=f"your own AdamW built with the spec's hyperparameters (this one was built with "
                                 f"{built} and given the spec's in param_groups before each step)",
                          hint="read lr, betas, eps and weight_decay from the param group at every step, not from "
                               "defaults or from what the constructor was given")


@given(spec=adamw_trajectories("float64"))
def test_adamw_leaves_parameters_without_gradients_alone(impl, spec):
    spec = dict(spec, has_grad=[[False] + row[1:] for row in spec["has_grad"]],
                groups=[dict(g, weight_decay=0.3) for g in spec["groups"]])
    got = impl.run(scenarios.run, spec)
    initial = scenarios.make_problem(spec)[0][0].detach()
    assert torch.equal(got["params"][0], initial) and not got["state"][0], (
        f"AdamW on {spec}: parameter 0 never has a gradient, so it must not change (no weight decay either) and "
        f"get no state; got {got['params'][0]} (was {initial}), state keys {sorted(got['state'][0])}")


@given(spec=adamw_trajectories("float64", weight_decay=False))
def test_adamw_steps_each_parameter_against_its_gradient(impl, spec):
    # What any Adam's first step does, whatever its formula's details (where eps goes, the bias corrections, a
    # decay before or after): every coordinate with a gradient moves against it. The evidence that the plumbing
    # tests (closure, groups, parameters without gradients, invalid hyperparameters, the audit), which compare
    # your AdamW with itself, test an optimizer that steps: a slip in the formula costs the trajectories alone.
    spec = dict(spec, steps=1, has_grad=[[True] * len(spec["shapes"])])
    got = impl.run(scenarios.run, spec)
    initial, [grads], _ = scenarios.make_problem(spec)
    for i, (p, p0, g) in enumerate(zip(got["params"], initial, grads, strict=True)):
        moved = torch.sign(p.double() - p0.detach().double())
        wrong = (moved != -torch.sign(g.double())) & (g != 0)
        assert not wrong.any(), (
            f"AdamW on {spec}: after one step, parameter {i} moved {moved.tolist()} where its gradient's signs are "
            f"{torch.sign(g).tolist()}\n  hint: step each parameter against m / (sqrt(v) + eps), m and v the moments "
            f"of its gradient (the first step moves it by about lr against the gradient's sign)")


@given(spec=adamw_trajectories("float32"))
def test_adamw_is_a_torch_optimizer_with_param_groups(impl, spec):
    got = impl.run(scenarios.describe, spec)
    assert got["is_optimizer"], "AdamW must subclass torch.optim.Optimizer"
    defaults = {"lr": 0.01, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1, "state_dtype": torch.float32}
    assert got["defaults"] == defaults, f"AdamW(...).defaults should hold {defaults}, got {got['defaults']}"
    for group, given_group in zip(got["groups"], spec["groups"], strict=True):
        expected = dict(defaults, **{k: v for k, v in given_group.items() if k != "params"})
        assert {k: group.get(k) for k in expected} == expected, (
            f"a param group's own hyperparameters override the defaults: expected {expected}, got {group}")
    sizes = [[math.prod(spec["shapes"][i]) for i in g["params"]] for g in spec["groups"]]
    assert got["sizes"] == sizes, f"param groups hold parameters of sizes {sizes}, got {got['sizes']}"


@pytest.mark.parametrize("hyperparameters", [{"lr": -1.0}, {"betas": (1.0, 0.999)}, {"betas": (0.9, -0.1)},
                                             {"eps": -1e-8}, {"weight_decay": -0.1}])
def test_adamw_rejects_invalid_hyperparameters(impl, hyperparameters):
    got = impl.run(scenarios.construction_error, hyperparameters)
    assert got == "ValueError", f"AdamW(params, **{hyperparameters}) should raise ValueError, raised {got}"


# -- bytes ------------------------------------------------------------------------------------------------

def byte_specs(dtype: str):
    return adamw_trajectories(dtype).map(lambda s: dict(s, has_grad=[[True] * len(s["shapes"])] * s["steps"]))


@pytest.mark.parametrize("kind", ["torch_adamw", "torch_sgd_momentum"])
@given(spec=st.sampled_from(["float32", "bfloat16", "float64"]).flatmap(byte_specs), steps=st.integers(0, 2))
def test_optimizer_state_bytes_of_torch_optimizers(impl, kind, spec, steps):
    got = impl.run(scenarios.state_bytes, spec, kind, None, steps, oracles.torch_state(spec, kind, steps))
    expected = oracles.measured_state_bytes(spec, kind, steps)
    expect_int(got["bytes"], expected, what=f"optimizer_state_bytes(<{kind} after {steps} steps on {spec['shapes']} "
               f"{spec['dtype']}>)", source="numel * element_size of every tensor in its state",
               hint="every tensor in every state dict, in its own dtype (torch's AdamW: two moments and a 4-byte "
                    "step tensor per parameter)")


@pytest.mark.parametrize("policy", ["fp32", "bf16"])
@given(spec=byte_specs("float32"))
def test_optimizer_state_bytes_follow_the_policy_table(impl, policy, spec):
    p = POLICIES[policy]
    spec = dict(spec, dtype=str(p.param_dtype).removeprefix("torch."))
    got = impl.run(scenarios.state_bytes, spec, "ours", str(p.state_dtype).removeprefix("torch."), 1)
    n = sum(math.prod(s) for s in spec["shapes"])
    state_per_param = OPTIMIZER_STATE_TENSORS["adamw"] * p.state_dtype.itemsize
    measured = sum(t.numel() * t.element_size() for s in got["state"] for t in s.values())
    what = f"AdamW(state_dtype={p.state_dtype}) on {n} {p.param_dtype} parameters"
    expect_int(measured, n * state_per_param, what=f"{what}: bytes of the state tensors", source=f"policy {policy!r}",
               hint="two moments per parameter, in state_dtype")
    expect_int(got["bytes"], n * state_per_param, what=f"optimizer_state_bytes({what})", source=f"policy {policy!r}",
               hint="numel * element_size of every tensor in the state; a Python int step counts 0")
    total = sum(t.numel() * t.element_size() for t in got["params"] + got["grads"]) + got["bytes"]
    per_param = p.param_dtype.itemsize + p.grad_dtype.itemsize + state_per_param
    expect_int(total, n * per_param, what=f"{what}: parameters + gradients + state",
               source=f"policy {policy!r}: {per_param} bytes per parameter")


def test_lecture_bf16_params_fp32_moments_is_12_bytes_per_param(impl):
    spec = {"seed": 0, "shapes": [[10, 20], [20]], "groups": [{"params": [0, 1], "lr": 1e-2, "betas": (0.9, 0.999),
            "eps": 1e-8, "weight_decay": 0.01}], "steps": 1, "has_grad": [[True, True]], "grad_scale": [1.0, 1.0],
            "dtype": "bfloat16"}
    ours = impl.run(scenarios.state_bytes, spec, "ours", "float32", 1)
    expect_int(ours["bytes"], 220 * 8, what="optimizer_state_bytes(AdamW(state_dtype=float32) on 220 bf16 params)",
               source="the lecture: 4 + 4 bytes of moments per parameter")
    theirs = impl.run(scenarios.state_bytes, spec, "torch_adamw", None, 1, oracles.torch_state(spec, "torch_adamw", 1))
    expect_int(theirs["bytes"], 220 * 4 + 2 * 4, what="optimizer_state_bytes(torch AdamW on 220 bf16 params)",
               source="torch keeps the moments in bf16 (2 + 2 bytes), plus a float32 step tensor per parameter")


def test_optimizer_state_bytes_is_zero_before_the_first_step(impl):
    spec = {"seed": 1, "shapes": [[3, 4]], "groups": [{"params": [0], "lr": 1e-2, "betas": (0.9, 0.999),
            "eps": 1e-8, "weight_decay": 0.0}], "steps": 1, "has_grad": [[True]], "grad_scale": [1.0],
            "dtype": "float32"}
    for kind in ("ours", "torch_adamw"):
        got = impl.run(scenarios.state_bytes, spec, kind, None, 0, oracles.torch_state(spec, kind, 0))
        expect_int(got["bytes"], 0, what=f"optimizer_state_bytes({kind} before any step)", source="no state yet",
                   hint="state is created at a parameter's first step")


# -- audit ------------------------------------------------------------------------------------------------

FORBIDDEN_ATTRIBUTES = ("_fused_adam_", "_fused_adamw_", "_single_tensor_adamw", "_multi_tensor_adamw",
                        "_single_tensor_adam", "_multi_tensor_adam")  # torch's kernels, wherever they are reached


def torch_adam_mentions(package: str) -> list[str]:
    """Static part of the audit: uses of torch's Adam/AdamW (attributes, imports) in the module."""
    return audit.reaching(package, "adamw", ("torch.optim.Adam", "torch.optim.AdamW", "torch.optim.adam",
                                             "torch.optim.adamw", "torch.optim._functional"), FORBIDDEN_ATTRIBUTES)


@given(specs=st.lists(adamw_trajectories("float64"), min_size=2, max_size=2))
def test_audit_adamw_does_not_use_torch_adam(impl, specs):
    # Fails only where torch's Adam is reached: your AdamW with it usable, then unusable, the same.
    mentions = torch_adam_mentions(impl.name)
    assert not mentions, f"{impl.name}/adamw.py uses torch's Adam/AdamW (the oracle):\n" + "\n".join(mentions)
    usable = own_run(lambda: impl.run(scenarios.run_many, specs))
    if usable is None:  # it raises with the oracle usable: a wrong answer, the other tests' business
        return
    got = run_without(impl, scenarios.run_without_oracle, specs, what=f"AdamW on the trajectories {specs}",
                      oracle="torch's Adam and AdamW", hint="write the update yourself; do not call torch's Adam")
    for j, (g, u, spec) in enumerate(zip(got, usable, specs, strict=True)):  # the same code on the same inputs:
        # bit for bit, hence no tolerance
        expect_trajectory(g, u, spec, source="your own AdamW with torch's Adam and AdamW usable: it reaches them",
                          tolerances=(0, 0), state_tolerances=(0, 0), equal_nan=True,
                          where=f"specs[{j}] of the falsifying example: ")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("adamw"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "adamw", case)
