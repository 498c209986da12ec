"""Problem (roofline): arithmetic intensity.

Oracles: FLOPs of the products from torch.utils.flop_counter.FlopCounterMode, GELU's from the element-wise
operations of PyTorch's own decomposition of it; bytes from the sizes of the tensors each op reads and
writes (meta tensors, measured by torch); the spec sheets in `assignment/given.py`; properties (intensity
grows with matmul size, the classification flips exactly at the accelerator intensity, the smallest
compute-bound batch is smallest); the lecture's numbers and ours from them; the PNG read back with matplotlib.

Tolerances: FLOPs and bytes are exact integers. Intensities, times and FLOP/s are one or two float64
divisions or products of exact values, compared to 1e-12 relative (a few roundings of ~1e-16); every
catalogued mistake is off by more than 1e-3. Where a figure is rounded (the lecture's "about 0.5", our
"about 1" for its "only slightly better"), the test checks the exact formula and that it rounds to the figure.
"""

import io
import math
import os
import stat
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assignment.given import HARDWARE, HardwareSpec, OpCost
from tests import oracles
from tests.checks import call_text, expect_close, expect_equal, expect_int
from tests.common.roofline import DTYPES, REL
from tests.documented import cases, expect_documented_error
from tests.scenarios import roofline as scenarios
from tests.strategies import distinct_sizes, every

pytestmark = pytest.mark.roofline

H100, BF16 = HARDWARE["H100 SXM"], torch.bfloat16
HINT_BYTES = "count every input read once and every output written once, in the dtype's size"

hardware = st.sampled_from(sorted(HARDWARE)).flatmap(
    lambda name: st.tuples(st.just(HARDWARE[name]), st.sampled_from(sorted(HARDWARE[name].peak_flops, key=str))))
costs = st.builds(OpCost, flops=st.integers(1, 10**15), bytes=st.integers(1, 10**13))


def expect_cost(got, kind: str, sizes: tuple, dtype: torch.dtype, name: str, args: tuple, hint: str) -> None:
    expected = oracles.oracle_cost(kind, sizes, dtype)
    what = call_text(name, *args)
    expect_equal(type(got).__name__, "OpCost", what=f"{what}: type", source="assignment.given.OpCost")
    expect_int(got.flops, expected["flops"], what=f"{what}.flops", source="FlopCounterMode / torch's decomposition",
               hint=hint)
    expect_int(got.bytes, expected["bytes"], what=f"{what}.bytes", source="sizes of the tensors read and written",
               hint=HINT_BYTES)


# -- cost models ---------------------------------------------------------------------------------------------

@given(n=st.integers(1, 10**7), dtype=st.sampled_from(DTYPES))
@every({"n": 4097}, dtype=DTYPES)
def test_relu_cost(impl, n, dtype):
    expect_cost(impl.roofline.relu_cost(n, dtype), "relu", (n,), dtype, "relu_cost", (n, dtype),
                "one FLOP per element")


@given(n=st.integers(1, 64), dtype=st.sampled_from(DTYPES), approximate=st.sampled_from(["none", "tanh"]))
@every({"n": 7}, dtype=DTYPES, approximate=("none", "tanh"))
def test_gelu_cost_counts_torchs_decomposition(impl, n, dtype, approximate):
    kind = "gelu_tanh" if approximate == "tanh" else "gelu"
    expect_cost(impl.roofline.gelu_cost(n, dtype, approximate), kind, (n,), dtype, "gelu_cost", (n, dtype, approximate),
                "one FLOP per element for each element-wise op of F.gelu's decomposition: 5 exact, 9 with tanh")


UNKNOWN_APPROXIMATIONS = st.one_of(st.sampled_from(["sigmoid", "erf", "exact", "Tanh", "NONE", ""]),
                                   st.text(max_size=8)).filter(lambda name: name not in ("none", "tanh"))


@given(n=st.integers(1, 64), dtype=st.sampled_from(DTYPES), unknown=UNKNOWN_APPROXIMATIONS,
       known=st.sampled_from(["none", "tanh"]))
def test_gelu_cost_rejects_unknown_approximation(impl, n, dtype, unknown, known):
    # its own evidence: beside the refused call, a known approximation returns an OpCost (not a raise-always)
    with pytest.raises(ValueError):
        impl.roofline.gelu_cost(n, dtype, unknown)
        pytest.fail(f"{call_text('gelu_cost', n, dtype, unknown)} should raise ValueError; it returned")
    got = impl.roofline.gelu_cost(n, dtype, known)
    assert isinstance(got, OpCost), f"{call_text('gelu_cost', n, dtype, known)} should return an OpCost, got {got!r}"


@given(n=st.integers(1, 10**7), dtype=st.sampled_from(DTYPES))
@every({"n": 4097}, dtype=DTYPES)
def test_dot_cost(impl, n, dtype):
    expect_cost(impl.roofline.dot_cost(n, dtype), "dot", (n,), dtype, "dot_cost", (n, dtype),
                "n multiplies and n adds: 2n")


@given(sizes=distinct_sizes(2, 1, 5000), dtype=st.sampled_from(DTYPES))
@every({"sizes": [37, 53]}, dtype=DTYPES)
def test_matvec_cost(impl, sizes, dtype):
    m, n = sizes
    expect_cost(impl.roofline.matvec_cost(m, n, dtype), "matvec", (m, n), dtype, "matvec_cost", (m, n, dtype),
                "2mn; the result has m values")


@given(sizes=distinct_sizes(3, 1, 5000), dtype=st.sampled_from(DTYPES))
@every({"sizes": [37, 53, 11]}, dtype=DTYPES)  # small ones first: the first failure shown is the smallest
@example(sizes=[2**20 + 1, 2**21 + 3, 2**22 + 5], dtype=BF16)  # FLOPs beyond 2^53, exact
def test_matmul_cost(impl, sizes, dtype):
    b, d, k = sizes
    expect_cost(impl.roofline.matmul_cost(b, d, k, dtype), "matmul", (b, d, k), dtype, "matmul_cost",
                (b, d, k, dtype), "2bdk (a multiply-add is 2 FLOPs)")


# -- intensities --------------------------------------------------------------------------------------------

@given(cost=costs)
def test_arithmetic_intensity_is_flops_per_byte(impl, cost):
    expect_close(impl.roofline.arithmetic_intensity(cost), cost.flops / cost.bytes, rel=REL,
                 what=call_text("arithmetic_intensity", cost), source="flops / bytes")


@pytest.mark.parametrize("name", sorted(HARDWARE))
def test_accelerator_intensity_from_the_spec_sheet(impl, name):
    hw = HARDWARE[name]
    for dtype, peak in hw.peak_flops.items():
        expect_close(impl.roofline.accelerator_intensity(hw, dtype), peak / hw.memory_bandwidth, rel=REL,
                     what=call_text("accelerator_intensity", name, dtype), source=f"{hw.source}: peak / bandwidth",
                     hint="peak FLOP/s in this dtype over bytes/s")


def test_lecture_numbers(impl):
    r = impl.roofline
    intensity = r.arithmetic_intensity
    # (what, got, exact, the figure, places it rounds to, whose figure: the lecture's, or ours from its N/3
    # and "only slightly better" than a dot)
    cases = [
        ("ReLU, bf16", intensity(r.relu_cost(2**20, BF16)), 0.25, 0.25, 2, "the lecture"),
        ("dot of 2^20, bf16", intensity(r.dot_cost(2**20, BF16)), 2 * 2**20 / (2 * (2 * 2**20 + 1)), 0.5, 2,
         "the lecture"),
        ("mat-vec 1024, bf16", intensity(r.matvec_cost(1024, 1024, BF16)), 2 * 1024**2 / (2 * (1024**2 + 2048)), 1, 0,
         "ours (the lecture: only slightly better than a dot)"),
        ("matmul 1024^3, bf16", intensity(r.matmul_cost(1024, 1024, 1024, BF16)), 1024 / 3, 341, 0,
         "ours (the lecture: about N/3)"),
        ("H100 ridge, bf16", r.accelerator_intensity(H100, BF16), 989.5e12 / 3.35e12, 295, 0, "the lecture"),
    ]
    for what, got, exact, figure, places, whose in cases:
        expect_close(got, exact, rel=REL, what=what, source=f"{whose}: about {figure}", hint=HINT_BYTES)
        assert round(got, places) == figure, f"{what}: {got!r} rounds to {round(got, places)!r}, not {figure!r}"


@given(sizes=distinct_sizes(3, 1, 3000), dtype=st.sampled_from(DTYPES))
@every({"sizes": [37, 53, 11]}, dtype=DTYPES)
def test_intensity_grows_with_matmul_size(impl, sizes, dtype):
    # the trend, on your own costs: each intensity is your matmul_cost's FLOPs over its bytes, and those FLOPs
    # the same multiple of b*d*k at every size (whatever a multiply-add counts for, it counts the same each time)
    b, d, k = sizes
    r = impl.roofline

    def intensity(shape):
        cost = r.matmul_cost(*shape, dtype)
        got = r.arithmetic_intensity(cost)
        expect_close(got, cost.flops / cost.bytes, rel=REL, what=call_text("arithmetic_intensity", cost),
                     source=f"the FLOPs over the bytes of your {call_text('matmul_cost', *shape, dtype)}")
        return got, cost.flops / math.prod(shape)

    small, per_mac = intensity((b, d, k))
    for bigger in ((2 * b, d, k), (b, 2 * d, k), (b, d, 2 * k), (2 * b, 2 * d, 2 * k)):
        larger, bigger_per_mac = intensity(bigger)
        assert larger > small, f"matmul intensity should grow from {(b, d, k)} ({small}) to {bigger} ({larger})"
        assert math.isclose(bigger_per_mac, per_mac, rel_tol=REL), (
            f"matmul_cost's FLOPs should be the same multiple of b*d*k at every size: {per_mac} per b*d*k at "
            f"{(b, d, k)}, {bigger_per_mac} at {bigger}")


# -- the roofline model ---------------------------------------------------------------------------------

@given(peak=st.integers(1, 1000), bandwidth=st.integers(1, 1000), scale=st.integers(1, 1000))
def test_classify_flips_exactly_at_the_accelerator_intensity(impl, peak, bandwidth, scale):
    hw = HardwareSpec("toy", {BF16: float(peak)}, float(bandwidth), 1e9, "a made-up chip")
    at = OpCost(flops=peak * scale, bytes=bandwidth * scale)  # intensity exactly peak / bandwidth
    cases = [(at, "compute-bound"), (OpCost(at.flops, at.bytes + 1), "memory-bound"),
             (OpCost(at.flops + 1, at.bytes), "compute-bound"),
             (OpCost(at.flops - 1 or 1, at.bytes + 1), "memory-bound")]
    for cost, expected in cases:
        expect_equal(impl.roofline.classify(cost, hw, BF16), expected,
                     what=call_text("classify", cost, f"toy chip {peak} FLOP/s, {bandwidth} B/s", BF16),
                     source="intensity >= accelerator intensity is compute-bound",
                     hint="compare flops/bytes with peak/bandwidth; at the ridge exactly it is compute-bound")


@given(sizes=distinct_sizes(3, 1, 5000), hw_dtype=hardware)
def test_classify_matmuls_on_real_hardware(impl, sizes, hw_dtype):
    (b, d, k), (hw, dtype) = sizes, hw_dtype
    cost = OpCost(2 * b * d * k, (b * d + d * k + b * k) * dtype.itemsize)  # as test_matmul_cost measures it
    got = impl.roofline.classify(cost, hw, dtype)
    expected = "compute-bound" if cost.flops / cost.bytes >= hw.peak(dtype) / hw.memory_bandwidth else "memory-bound"
    expect_equal(got, expected, what=call_text("classify", cost, hw.name, dtype),
                 source="the matmul's intensity against peak / bandwidth", hint="compare with the ridge of this dtype")


@given(cost=costs, hw_dtype=hardware)
def test_roofline_time_is_the_slower_of_compute_and_memory(impl, cost, hw_dtype):
    hw, dtype = hw_dtype
    got = impl.roofline.roofline_time(cost, hw, dtype)
    compute, memory = cost.flops / hw.peak(dtype), cost.bytes / hw.memory_bandwidth
    expect_close(got, max(compute, memory), rel=REL, what=call_text("roofline_time", cost, hw.name, dtype),
                 source="max(flops / peak, bytes / bandwidth)",
                 hint="compute and memory overlap: the slower one decides (not their sum)")


@given(intensity=st.floats(1e-3, 1e5), hw_dtype=hardware)
def test_attainable_flops_per_sec_is_the_roof(impl, intensity, hw_dtype):
    hw, dtype = hw_dtype
    got = impl.roofline.attainable_flops_per_sec(intensity, hw, dtype)
    expect_close(got, min(hw.peak(dtype), intensity * hw.memory_bandwidth), rel=REL,
                 what=call_text("attainable_flops_per_sec", intensity, hw.name, dtype),
                 source="min(peak, intensity x bandwidth)", hint="the lower of the two roofs")


@given(cost=costs, hw_dtype=hardware)
def test_attainable_rate_times_roofline_time_is_the_work(impl, cost, hw_dtype):
    hw, dtype = hw_dtype
    r = impl.roofline
    rate = r.attainable_flops_per_sec(r.arithmetic_intensity(cost), hw, dtype)
    expect_close(rate * r.roofline_time(cost, hw, dtype), float(cost.flops), rel=1e-9,
                 what=f"attainable_flops_per_sec x roofline_time for {cost} on {hw.name} in {dtype}",
                 source="the roofline model: FLOPs done = rate x time")


def _compute_bound(b: int, d: int, k: int, hw: HardwareSpec, dtype: torch.dtype) -> bool:
    flops, nbytes = 2 * b * d * k, (b * d + d * k + b * k) * dtype.itemsize
    return flops / nbytes >= hw.peak(dtype) / hw.memory_bandwidth


@given(sizes=distinct_sizes(2, 1, 2**16), hw_dtype=hardware)
def test_min_compute_bound_batch_is_the_smallest(impl, sizes, hw_dtype):
    (d, k), (hw, dtype) = sizes, hw_dtype
    ridge, limit = hw.peak(dtype) / hw.memory_bandwidth, 2 * d * k / (dtype.itemsize * (d + k))
    what = call_text("min_compute_bound_batch", d, k, hw.name, dtype)
    if limit <= ridge * (1 + 1e-9):  # no batch reaches the ridge (or only an astronomically large one)
        if limit < ridge:
            with pytest.raises(ValueError):
                impl.roofline.min_compute_bound_batch(d, k, hw, dtype)
        return
    got = impl.roofline.min_compute_bound_batch(d, k, hw, dtype)
    expect_equal(type(got), int, what=f"{what}: type", source="a batch size")
    assert got >= 1 and _compute_bound(got, d, k, hw, dtype), f"{what} = {got}: that matmul is still memory-bound"
    assert got == 1 or not _compute_bound(got - 1, d, k, hw, dtype), (
        f"{what} = {got}: a batch of {got - 1} is already compute-bound (want the smallest)")


def test_min_compute_bound_batch_lecture(impl):
    # with d and k huge the intensity of a bf16 matmul is about b: the batch must reach the ridge
    ridge = 989.5e12 / 3.35e12
    hint = ("the smallest b with 2*b*d*k / ((b*d + d*k + b*k) * bytes per element) >= peak / bandwidth; solve "
            "for b and round up")
    for d, k, expected, source in [
            (10**7, 10**7, math.ceil(ridge / (1 - 2 * ridge / 10**7)),
             "the ridge (989.5 TFLOP/s over 3.35 TB/s, about 295) solved for b: ceil(ridge / (1 - 2 ridge / d))"),
            (8192, 8192, 319, "the same at d = k = 8192: ceil(295.37 / (1 - 2 * 295.37 / 8192)) = 319")]:
        expect_int(impl.roofline.min_compute_bound_batch(d, k, H100, BF16), expected,
                   what=call_text("min_compute_bound_batch", d, k, "H100 SXM", BF16), source=source, hint=hint)


# -- the plot -----------------------------------------------------------------------------------------------

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_written_file(path: Path, limit: int = 16 * 2**20) -> bytes:
    """What the code under test wrote at `path`: a regular file, not a link it planted to make this process
    read something else (when grading, this process may read what the code under test may not)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        assert stat.S_ISREG(os.fstat(fd).st_mode), f"{path} is not a regular file"
        return file.read(limit)


@pytest.mark.parametrize(("name", "dtype", "extra", "demo"), [("H100 SXM", BF16, [(3, 7), (10**4, 1)], True),
                                                            ("A100", torch.float32, [(5 * 10**6, 9)], False)])
@settings(max_examples=1, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn_op=costs)
def test_plot_roofline_writes_a_png(impl, writable_dir, name, dtype, extra, demo, drawn_op):
    # drawing takes half a second: two cases (points far left and far right of the ridge), the first with the
    # lecture's points as the demo (tests/roofline_demo.py) computes them with the package under test, each with
    # one op drawn from the grading seed beside (so the points on the roof are no table's)
    hw = HARDWARE[name]
    points = {"ReLU": OpCost(2**20, 4 * 2**20), "matmul 1024^3": OpCost(2 * 1024**3, 6 * 1024**2)}
    if demo:
        from tests.roofline_demo import lecture_points

        points = lecture_points(impl.roofline, dtype)
    points.update({f"op {i}": OpCost(f, b) for i, (f, b) in enumerate(extra)})
    points["drawn op"] = drawn_op
    path = writable_dir / "roofline.png"
    path.unlink(missing_ok=True)
    drawn = impl.run(scenarios.plot_capturing_points, hw, points, str(path), dtype)
    assert path.exists(), f"plot_roofline(..., {str(path)!r}) wrote no file"
    peak, bandwidth = hw.peak(dtype), hw.memory_bandwidth
    for label, cost in points.items():  # on the roof: at (flops / bytes, min(peak, bandwidth x intensity))
        x = cost.flops / cost.bytes
        y = min(peak, bandwidth * x)
        assert any(math.isclose(px, x, rel_tol=1e-9) and math.isclose(py, y, rel_tol=1e-9) for px, py in drawn), (
            f"{label!r} ({cost}) should be drawn on the roof at intensity {x:.6g} FLOP/byte, attainable "
            f"min({peak:.4g}, {bandwidth:.4g} x {x:.6g}) = {y:.6g} FLOP/s: no point of the figure is there")
    data = read_written_file(path)
    assert data[:8] == PNG_MAGIC, "the file is not a PNG"
    import numpy
    from PIL import Image  # matplotlib's own PNG reader, without the rest of matplotlib in this process

    image = numpy.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=numpy.float64) / 255
    height, width = image.shape[:2]
    assert width >= 600 and height >= 400, f"a {width}x{height} image is too small to read"
    assert float(image.std()) > 0.01, "the image is blank"


def test_plot_roofline_names_the_missing_extra(impl, tmp_path):
    got = impl.run(scenarios.plot_without_matplotlib, H100, {"ReLU": OpCost(1, 4)}, str(tmp_path / "r.png"))
    assert "ImportError" in got["raised"], f"without matplotlib plot_roofline should raise ImportError, got {got}"
    assert "pip install -e '.[plot]'" in got["message"], f"the message should say how to install it: {got['message']!r}"


# -- differential: the same inputs through the reference -------------------------------------------------

@given(sizes=distinct_sizes(3, 1, 10**4), dtype=st.sampled_from(DTYPES), cost=costs, hw_dtype=hardware,
       intensity=st.floats(1e-3, 1e5), approximate=st.sampled_from(["none", "tanh"]))
def test_differential_roofline(impl, ref, sizes, dtype, cost, hw_dtype, intensity, approximate):
    (b, d, k), (hw, hw_dt) = sizes, hw_dtype
    for name, args in [("relu_cost", (b, dtype)), ("gelu_cost", (b, dtype, approximate)), ("dot_cost", (d, dtype)),
                       ("matvec_cost", (b, d, dtype)), ("matmul_cost", (b, d, k, dtype))]:
        expect_equal(getattr(impl.roofline, name)(*args), getattr(ref.roofline, name)(*args),
                     what=call_text(name, *args), source="reference")
    for name, args in [("arithmetic_intensity", (cost,)), ("accelerator_intensity", (hw, hw_dt)),
                       ("roofline_time", (cost, hw, hw_dt)), ("attainable_flops_per_sec", (intensity, hw, hw_dt))]:
        expect_close(getattr(impl.roofline, name)(*args), getattr(ref.roofline, name)(*args), rel=REL,
                     what=call_text(name, *args), source="reference")
    expect_equal(impl.roofline.classify(cost, hw, hw_dt), ref.roofline.classify(cost, hw, hw_dt),
                 what=call_text("classify", cost, hw.name, hw_dt), source="reference")
    try:
        expected = ref.roofline.min_compute_bound_batch(d, k, hw, hw_dt)
    except ValueError:
        with pytest.raises(ValueError):
            impl.roofline.min_compute_bound_batch(d, k, hw, hw_dt)
    else:
        expect_int(impl.roofline.min_compute_bound_batch(d, k, hw, hw_dt), expected,
                   what=call_text("min_compute_bound_batch", d, k, hw.name, hw_dt), source="reference")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("roofline"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "roofline", case)
