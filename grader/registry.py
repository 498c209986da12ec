"""The one list of graded problems: id, title, points and module; and inside each problem, its behaviours.

The handout's section headings and weight tables, the pytest markers, the grader's rubric and the release all
read this list; meta-tests check that they agree (tests/meta/test_consistency.py).

Points go to behaviours, not to pytest items. A behaviour is one test function (all its parametrizations and
generated examples) or a few small ones, with an explicit weight; every graded test function of a problem
belongs to exactly one behaviour of it, and a problem's behaviours add up to its points. Inside a behaviour the
points are split equally among its test functions, and a function's share equally among its pytest items
(grader/scoring.py). GPU tests belong to no behaviour: they are worth nothing.
"""

import math
from dataclasses import dataclass, field


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

    @property
    def behaviours(self) -> "tuple[Behaviour, ...]":
        return BEHAVIOURS[self.id]


@dataclass(frozen=True)
class Behaviour:
    """What a student's code must do, worth `points`: `name` (the Gradescope test's name), `checks` (what the
    tests check, for the handout), `tests` (the names of the test functions in the problem's test file).

    Gates: tests that a table of the public inputs' answers, or nonsense, can pass earn their share only beside
    evidence that the code computes the answers, and only the evidence declared here (nothing a worker reports
    decides it). Evidence is named by *selectors* of generated tests of the same problem: "test_x" (every
    pytest item of test_x) or "test_x[part]" (the items of its parametrization `part`, a region of its inputs;
    "test_x[part*]" those whose id starts with `part`). A selector has passed when its items ran and all passed.
    An item waits for the selectors of the first key of `fixed` that selects it, else for `requires`, and earns
    its share when it passes and what it waits for has passed; nothing is paid in proportion.

    `requires`: the evidence every test of a behaviour that checks only a property (a bound, a trend, "raises on
    bad input", "does not call the oracle"), which nonsense can pass, waits for: the generated tests that pin the
    exact values of the functions its tests call, drawn from the same region of inputs as its own (one selector,
    or a tuple). None where the test carries its own evidence: on generated inputs, it checks in its own calls that
    the work its row claims was done (gradient_accumulation's hooks see a forward, the loss and a backward on each
    micro-batch; an input-validation test calls with what the docstring refuses and, beside it, what it accepts,
    which must return a value of the right kind; an NVFP4 property sees an encoding of x on the e2m1 and e4m3 grids;
    checkpoint's gradient rows see fn run again in backward), which no table, constant, no-op or raise-always leaves.
    An audit ("computed without the oracle", "uses einops") carries its own: on generated inputs it checks the
    property only on the calls it saw answered right (against the independent answer of the function's own test)
    and pays only where it saw at least three distinct right answers (both answers of a bool), so it waits for
    nothing, and a function wrong on some inputs still earns its audit (tests/audit_run.py `evidenced`). AdamW's
    audit instead waits for its optimizer's steps against the gradient (ADAM_STEPS): a slip in the update's formula
    makes every trajectory wrong, and an audit of right trajectories would cost it.

    `fixed`: tests (or items: item selectors) of fixed inputs (the lecture's numbers, worked examples, fixed
    invalid calls), which a table of answers could pass, each with the generated tests of the same function,
    from the same region of inputs, that it waits for."""

    name: str
    checks: str
    points: float
    tests: tuple[str, ...]
    requires: tuple[str, ...] = ()
    fixed: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def gate(self, function: str, item: str = "") -> tuple[str, ...]:
        """The selectors the pytest item `function[item]` of this behaviour waits for (() for none)."""
        return next((waits for key, waits in self.fixed.items() if selects(key, function, item)), self.requires)


def selector(text: str) -> tuple[str, str | None]:
    """A selector's test function and part ("test_x[a*]" -> ("test_x", "a*"); "test_x" -> ("test_x", None))."""
    function, bracket, part = text.partition("[")
    if bracket and not part.endswith("]"):
        raise ValueError(f"a selector is test_x or test_x[part]: {text!r}")
    return function, part[:-1] if bracket else None


def selects(text: str, function: str, item: str = "") -> bool:
    """Whether the selector `text` selects the pytest item `function[item]` (`item`: its parametrization id)."""
    wanted, part = selector(text)
    if wanted != function or part is None:
        return wanted == function
    return item.startswith(part[:-1]) if part.endswith("*") else item == part


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

# Behaviours of fixed inputs alone that wait for nothing: the function's whole domain is a short list of names,
# every one tested (six float formats; the accelerators of assignment/given.py and a few device names), so a
# table of answers is a solution there, not nonsense.
WHOLE_DOMAIN_TESTED = frozenset({("precision", "float_format"), ("benchmarking", "device names")})

BY_ID: dict[str, Problem] = {p.id: p for p in PROBLEMS}
BY_MODULE: dict[str, Problem] = {p.module: p for p in PROBLEMS}
PROBLEM_MODULES = frozenset(p.module for p in PROBLEMS)

def B(name: str, checks: str, points: float, tests: tuple[str, ...], requires: str | tuple[str, ...] = (),
      fixed: dict[str, str | tuple[str, ...]] | None = None) -> Behaviour:
    """A Behaviour as the tables below write it: a single selector as a string."""
    selectors = (requires,) if isinstance(requires, str) else requires
    waits = {key: (waits,) if isinstance(waits, str) else tuple(waits) for key, waits in (fixed or {}).items()}
    return Behaviour(name, checks, points, tests, tuple(s for s in selectors if s), waits)


# Each problem's behaviours: (name, what the tests check, points, test functions). The core of each problem
# carries most of its points; input validation, lecture examples and tests that check only a property (an
# ordering, a monotone trend: nonsense can pass them) carry little. The handout shows these tables.
TENSOR_OPS = ("slice", "narrow", "select", "diagonal", "unfold", "transpose", "t", "permute", "unsqueeze", "squeeze",
              "expand", "view", "reshape", "flatten", "contiguous", "index")  # tests/strategies/tensors.py's ops
# mini_einops' classic calls: (operation, the part of its generated tests that draws such calls, that part)
MINI_EINOPS_PARTS = (
    *((kind, part, f"test_{kind}_matches_einops[{part}]") for kind in ("rearrange", "reduce")
      for part in ("named-axes-only", "with-an-ellipsis", "with-unit-axes")),
    ("repeat", "any", "test_repeat_matches_einops"),
    *(("einsum", part, f"test_einsum_matches_einops[{part}]")
      for part in ("1-input", "2-inputs", "reordered-output")))  # the lecture has no 3-input einsum in order
# tensors' single ops whose inputs fall into two regions, an item each of test_single_ops_match_torch (the op's
# name, and the part named here), so that a fixed call (an edge case, a docstring's example) waits for its own
# region's item alone: slices with bounds from 0 to the size or None, or bounds negative or past the end (which
# Python's rules wrap and clamp); reshapes that view, or copy; transposes of tensors with elements, or of empty ones
# (which address nothing); permutations that are their own inverse, or not; flattens of contiguous tensors, or
# not; advanced indexing with indices, or none
SPLIT_OP_PARTS = {"slice": "slice-beyond-the-ends", "reshape": "reshape-copies", "transpose": "transpose-empty",
                  "permute": "permute-cycles", "flatten": "flatten-non-contiguous", "index": "index-nothing"}


BF16_NORMAL = "test_round_to_bf16_matches_torch_cast[normal]"  # precision's evidence, by region
IEEE_SMALL = ("test_quantize_small_formats_against_brute_force[e4m3_ieee]",
              "test_quantize_small_formats_against_brute_force[fp8_e5m2]")  # small formats with inf, like torch's
ADAM_STEPS = "test_adamw_steps_each_parameter_against_its_gradient"  # any Adam steps: the plumbing's evidence
SEQUENTIAL = "test_checkpoint_sequential_matches_plain_backward"  # checkpoint_sequential computes (segments given)
BEHAVIOURS: dict[str, tuple[Behaviour, ...]] = {
    "tensors": (
        B("view_result: single ops", "the layout (shape, strides, offset) or copy after one op, against torch, in "
          "one part per op (two, by region, for slice, reshape, transpose, permute, flatten and index) and one of "
          "dimensions counted from the end", 1.5, ("test_single_ops_match_torch",)),
        B("view_result: edge cases", "fixed calls at each op's edges (negative offsets and indices, zero-size "
          "and size-1 dimensions, 0-d tensors, no ops), against torch", 0.5, ("test_edge_cases_match_torch",),
          fixed={**{f"test_edge_cases_match_torch[{part} *]": f"test_single_ops_match_torch[{part}]"
                    for part in (*TENSOR_OPS, *SPLIT_OP_PARTS.values())},
                 "test_edge_cases_match_torch[no-ops *]": "test_single_ops_match_torch[no-ops]"}),
        B("view_result: chains of ops", "the layout or copy after generated chains of ops of one family each "
          "(indexing, dimensions, shape) and of any ops, against torch", 2.5, ("test_op_chains_match_torch",)),
        B("view_result: writes land where the layout says", "a write through the result of a chain (of each "
          "family, and of any ops) lands at the element of the original storage that your layout addresses", 1,
          ("test_a_write_through_the_result_lands_where_its_layout_says",)),
        B("strides, offsets, contiguity", "contiguous_strides, element_offset (against data_ptr) and "
          "is_contiguous on generated layouts (is_contiguous in three parts: empty, with a unit stride, without)", 1,
          ("test_contiguous_strides_match_torch", "test_element_offset_matches_data_ptr",
           "test_is_contiguous_matches_torch")),
        B("can_view", "whether view() succeeds, and the strides it gives, against torch (new shapes with a -1, and "
          "without)", 1,
          ("test_can_view_matches_torch",)),
        B("nbytes and storage_nbytes", "the bytes a tensor addresses and the bytes its storage keeps alive",
          0.75, ("test_nbytes_matches_torch", "test_storage_nbytes_matches_torch")),
        B("the docstrings' examples", "the worked examples of the docstrings; a view that cannot be one raises "
          "ValueError (fixed calls)", 0.5, ("test_docstring_examples", "test_documented_errors_are_raised"),
          fixed={**{f"test_docstring_examples[{name} *]": test for name, test in (
                     ("contiguous_strides", "test_contiguous_strides_match_torch"),
                     ("element_offset", "test_element_offset_matches_data_ptr"),
                     ("is_contiguous", "test_is_contiguous_matches_torch[unit-stride]"),
                     ("can_view", "test_can_view_matches_torch[without-minus-one]"),
                     ("nbytes", "test_nbytes_matches_torch"), ("storage_nbytes", "test_storage_nbytes_matches_torch"))},
                 **{f"test_docstring_examples[view_result {ops} *]": tuple(
                     f"test_single_ops_match_torch[{part}]" for part in parts.split()) for ops, parts in (
                     ("slice", "slice"), ("t reshape", "t reshape-copies"), ("t view", "t view"),
                     ("unsqueeze expand", "unsqueeze expand"))},
                 "test_documented_errors_are_raised[view_result:*]": ("test_single_ops_match_torch[view]",
                                                                      "test_single_ops_match_torch[slice]",
                                                                      "test_single_ops_match_torch[t]")}),
        B("audit: layouts without tensors", "every function answers the same with every torch tensor op made "
          "unusable, and names none of torch's layout methods, on the calls it answers right; paid beside three "
          "distinct right answers of each (both answers of a bool)",
          0.5, ("test_audit_layouts_are_computed_without_tensors",)),
        B("differential: all functions", "every function against the reference on more generated chains",
          0.75, ("test_differential_tensors",)),
    ),
    "einops_practice": (
        B("matmul, attention scores, sum_hidden", "each against its torch expression", 1,
          ("test_matmul_is_the_matrix_product", "test_attention_scores_match_q_kt_over_sqrt_d",
           "test_sum_hidden_sums_the_last_dimension")),
        B("heads: split, merge, per-head linear", "against view/transpose/reshape and a loop over heads", 1,
          ("test_split_heads_matches_view_and_transpose", "test_merge_heads_matches_transpose_and_reshape",
           "test_per_head_linear_applies_each_heads_matrix")),
        B("images: patchify, unpatchify, pool2d", "row-by-row patches, their inverse, torch's pooling", 1.25,
          ("test_patchify_cuts_row_by_row_patches", "test_unpatchify_inverts_patchify",
           "test_pool2d_matches_torch_pooling")),
        B("pairwise distances, repeat_kv", "against explicit differences and repeat_interleave", 0.75,
          ("test_pairwise_sq_distances_match_differences", "test_repeat_kv_matches_repeat_interleave")),
        B("multi-head attention", "against torch's scaled_dot_product_attention", 1,
          ("test_multihead_attention_matches_sdpa",)),
        B("two-layer backward", "the hand-written gradients against autograd", 1,
          ("test_two_layer_backward_matches_autograd",)),
        B("audit: every function uses einops", "each function calls einops (no plain torch reshapes), on the "
          "calls it answers right; paid beside three distinct right answers of each", 0.5,
          ("test_audit_every_function_uses_einops",)),
        B("differential: all functions", "every function against the reference on more inputs", 0.5,
          ("test_differential_all_functions",)),
    ),
    "mini_einops": (
        B("rearrange", "generated rearrange patterns and shapes, against einops, in three parts: named axes only, "
          "with an ellipsis, with unit axes", 3.5,
          ("test_rearrange_matches_einops",)),
        B("reduce", "generated reduce patterns, shapes and reductions, against einops, in three parts: named axes "
          "only, with an ellipsis, with unit axes", 2.5,
          ("test_reduce_matches_einops",)),
        B("repeat", "generated repeat patterns, shapes and lengths, against einops", 1.5,
          ("test_repeat_matches_einops",)),
        B("einsum", "generated einsum patterns against einops, in four parts: one, two and three tensors with the "
          "output axes in the order they come in the inputs, and outputs in another order", 2.5,
          ("test_einsum_matches_einops",)),
        B("classic calls", "the lecture's examples (its matmul einsum, `...` batching) and einops' "
          "documented calls, against einops", 1.25, ("test_classic_calls_match_einops",),
          fixed={f"test_classic_calls_match_einops[{kind} {part}*]": evidence
                 for kind, part, evidence in MINI_EINOPS_PARTS}),
        B("near misses raise like einops", "generated patterns one mistake away from valid (rearrange, reduce, "
          "repeat, einsum) raise EinopsError where einops raises, and the valid calls they were made from do not",
          1, ("test_near_misses_raise_like_einops", "test_einsum_near_misses_raise_like_einops")),
        B("error messages", "rejected calls raise EinopsError naming the pattern and the shapes: generated near "
          "misses and fixed calls; the errors the docstrings promise, on fixed calls", 0.75,
          ("test_errors_name_the_pattern_and_the_shapes",
           "test_rejected_calls_raise_einops_error_naming_pattern_and_shapes", "test_documented_errors_are_raised"),
          fixed={**{f"test_rejected_calls_raise_einops_error_naming_pattern_and_shapes[{kind}:*]":
                    f"test_errors_name_the_pattern_and_the_shapes[{kind}]"
                    for kind in ("rearrange", "reduce", "repeat", "einsum")},
                 **{f"test_documented_errors_are_raised[{kind}:*]": f"test_near_misses_raise_like_einops[{kind}]"
                    for kind in ("rearrange", "reduce", "repeat")},
                 "test_documented_errors_are_raised[einsum:*]": "test_einsum_near_misses_raise_like_einops"}),
        B("any pattern: raise or match like einops", "many generated calls, valid or not, behave as einops", 0.75,
          ("test_generated_patterns_raise_or_match_like_einops",)),
        B("a list of tensors", "stacked on a new first axis as einops does; one that cannot stack raises "
          "EinopsError", 0.5, ("test_list_inputs_are_stacked_like_einops",
                                "test_list_inputs_that_do_not_stack_raise_einops_error"),
          fixed={f"test_list_inputs_that_do_not_stack_raise_einops_error[{kind}]":
                 f"test_list_inputs_are_stacked_like_einops[{kind}]" for kind in ("rearrange", "reduce", "repeat")}),
        B("each pattern is parsed once", "a pattern used again is not parsed again", 0.5,
          ("test_each_pattern_is_parsed_once",)),
        B("audit: does not use einops", "your functions name no einops and run none of it, on generated calls "
          "they answer right; paid beside three distinct right answers of each", 0.5,
          ("test_audit_does_not_use_einops",)),
        B("differential: generated patterns", "generated calls against the reference", 0.75,
          ("test_differential_generated_patterns",)),
    ),
    "flops": (
        B("FlopCounter: MLPs", "your FlopCounter against FlopCounterMode on generated MLPs, forward and "
          "backward, in two parts: without bias (mm) and with (addmm)", 1,
          ("test_counter_matches_flopcountermode_on_mlps",)),
        B("FlopCounter: matmul programs", "against FlopCounterMode on generated programs of the matmul family "
          "(mm, addmm, bmm, baddbmm, einsum, a 4-d matmul), forward and backward; by_op's keys, the ops' names", 1.5,
          ("test_counter_matches_flopcountermode_on_matmul_programs",
           "test_counter_names_each_op_without_its_overload")),
        B("FlopCounter: attention", "against FlopCounterMode on math attention and on fused SDPA kernels", 2,
          ("test_counter_matches_flopcountermode_on_math_attention",
           "test_counter_matches_flopcountermode_on_fused_attention")),
        B("FlopCounter: transformers", "against FlopCounterMode on whole transformer steps", 1.25,
          ("test_counter_matches_flopcountermode_on_transformers",)),
        B("FlopCounter: starts from zero", "a counter entered a second time counts what a fresh one counts (MLPs "
          "without bias)", 0.25, ("test_counter_starts_from_zero_each_time_it_is_entered",),
          requires="test_counter_matches_flopcountermode_on_mlps[without-bias]"),
        B("audit: FlopCounter without FlopCounterMode", "your counter does not name the oracle, and counts the "
          "same with it made unusable where it counts right; paid beside three distinct right totals", 0.5,
          ("test_audit_counter_does_not_use_flopcountermode",)),
        B("differential: FlopCounter", "your counter against the reference's on more programs", 0.75,
          ("test_differential_counter",)),
        B("matmul_flops and linear_flops", "against FlopCounterMode", 1,
          ("test_matmul_flops_matches_flopcountermode", "test_linear_flops_matches_flopcountermode")),
        B("transformer forward FLOPs", "transformer_forward_flops against FlopCounterMode on generated configs",
          1, ("test_transformer_forward_flops_matches_flopcountermode",)),
        B("attention FLOPs", "attention_score_flops against the counted bmms, attention_flops_fraction against "
          "the measured share", 1,
          ("test_attention_score_flops_matches_the_bmm_count", "test_attention_flops_fraction_matches_measured_share")),
        B("training-step FLOPs", "training_step_flops and mlp_training_flops against a measured forward and "
          "backward", 1.5,
          ("test_training_step_flops_matches_forward_and_backward",
           "test_mlp_training_flops_matches_forward_and_backward")),
        B("transformer_param_count", "against the module's parameters", 0.5,
          ("test_transformer_param_count_matches_the_module",)),
        B("6ND, training days, MFU", "approx_training_flops, training_days (our ~144 days for the lecture's "
          "70B-on-15T-tokens question) and mfu", 1,
          ("test_approx_training_flops_is_six_n_d", "test_training_days_lecture_example",
           "test_training_days_scales_as_compute_over_throughput", "test_mfu_is_achieved_over_peak"),
          fixed={"test_training_days_lecture_example": ("test_training_days_scales_as_compute_over_throughput",)}),
        B("attention share grows with the context", "the share grows with seq; the exact step outgrows 6ND, at "
          "every context the same multiple of the measured forward", 0.25,
          ("test_attention_share_grows_with_context_and_six_n_d_falls_behind",),
          # the share's trend nonsense satisfies (seq / (seq + 1)): it waits for the share's exact values; the step
          # carries its own evidence (a fixed multiple of the torch model's forward, which 6 seq^2 is not)
          requires="test_attention_flops_fraction_matches_measured_share"),
        B("differential: counting functions", "the counting functions against the reference", 0.5,
          ("test_differential_counting_functions",)),
    ),
    "memory": (
        B("tensor_bytes", "against torch, without allocating, a worked example (4 × 8 float32: 128 bytes)", 0.5,
          ("test_tensor_bytes_matches_torch", "test_tensor_bytes_allocates_nothing",
           "test_tensor_bytes_lecture_example"),
          fixed={"test_tensor_bytes_lecture_example": "test_tensor_bytes_matches_torch"}),
        B("parameter count and bytes", "parameter_count and parameter_bytes against torch modules", 0.5,
          ("test_parameter_count_and_bytes_match_torch",)),
        B("bytes_per_param: real optimizer state", "against the bytes of a real optimizer's state per policy, in "
          "four parts (SGD, SGD with momentum, Adagrad, AdamW)", 0.75,
          ("test_bytes_per_param_matches_real_optimizer_state",)),
        B("bytes_per_param: AdamW's totals, unknown names", "16, 12 (the lecture's 2 + 2 + 4 + 4) and 16 bytes "
          "per parameter for AdamW under fp32, bf16 and bf16_master; unknown policies or optimizers raise", 0.25,
          ("test_bytes_per_param_lecture_adamw", "test_bytes_per_param_rejects_unknown_names",
           "test_documented_errors_are_raised"),
          requires="test_bytes_per_param_matches_real_optimizer_state[adamw-state]"),
        B("model_state_bytes", "against a real training step, and n times bytes_per_param", 0.5,
          ("test_model_state_bytes_matches_a_real_training_step", "test_model_state_bytes_is_n_times_bytes_per_param")),
        B("max_trainable_params", "the largest model that fits; our worked example (8 H100s: 53,333,333,333)", 0.25,
          ("test_max_trainable_params_is_the_largest_that_fits", "test_max_trainable_params_lecture_example"),
          fixed={"test_max_trainable_params_lecture_example": ("test_max_trainable_params_is_the_largest_that_fits",)}),
        B("SavedActivations: the autograd graph", "the saved bytes against the tensors autograd keeps, on "
          "generated stacks of Linear layers on 2-d inputs, alone and with ReLUs, other activations or LayerNorms "
          "between them, and stacks with views (slices, 3-d inputs): a part each", 3.25,
          ("test_saved_activations_matches_the_autograd_graph",)),
        # its own evidence: saved-tensor hooks on inside the `with` block (a meter that hooks nothing leaves the
        # gradients right too); hooks that hand back what was saved and count nothing earn it, and only it
        B("SavedActivations: backward gets what was saved", "with your meter's saved-tensor hooks on, the "
          "gradients of generated stacks equal a plain backward's", 0.25,
          ("test_saved_activations_hands_back_what_was_saved",)),
        B("SavedActivations: from zero, a worked MLP", "a meter entered a second time counts what a fresh one "
          "counts; our worked MLP (B = 64, D = 1024, L = 16, bf16)",
          0.75, ("test_saved_activations_starts_from_zero_each_time_it_is_entered",
                "test_saved_activations_lecture_mlp"),
          requires="test_saved_activations_matches_the_autograd_graph[linear]",
          fixed={"test_saved_activations_lecture_mlp":
                 "test_saved_activations_matches_the_autograd_graph[relu]"}),
        B("mlp_activation_bytes", "against the measurement and our worked example (2,097,152 bytes)", 0.5,
          ("test_mlp_activation_bytes_matches_the_measurement", "test_mlp_activation_bytes_lecture_example"),
          fixed={"test_mlp_activation_bytes_lecture_example": ("test_mlp_activation_bytes_matches_the_measurement",)}),
        B("differential: all functions", "counting functions and measurements against the reference", 0.5,
          ("test_differential_counting_functions", "test_differential_measurements")),
    ),
    "precision": (
        B("float_format", "the fields of every torch float format against torch.finfo, the e2m1 table, the "
          "fp8 ranges", 1.5,
          ("test_float_format_matches_finfo", "test_float_format_fp4_e2m1_hand_table",
           "test_lecture_facts_ranges_of_fp8")),
        B("round_to_bf16: bit for bit", "generated fp32 bit patterns (ties, subnormals, inf, NaN) against "
          "torch's cast, in three parts: normal numbers, subnormals and zeros, inf, NaN and overflow", 2,
          ("test_round_to_bf16_matches_torch_cast",)),
        B("round_to_bf16: shape and worked examples", "the shape is kept; hand-checked bit patterns (ties to even, "
          "the largest float32, -0, subnormal ties, NaN)", 0.25,
          ("test_round_to_bf16_keeps_the_shape", "test_round_to_bf16_worked_examples"),
          fixed={f"test_round_to_bf16_worked_examples[{kind}]": f"test_round_to_bf16_matches_torch_cast[{kind}]"
                 for kind in ("normal", "subnormal-or-zero", "inf,-NaN-or-overflow")}),
        B("audit: round_to_bf16 with integer operations", "the same answer with no 16-bit float made or read, on "
          "the values it rounds right; paid beside three distinct values it rounded right", 0.5,
          ("test_audit_round_to_bf16_uses_integer_operations",)),
        B("quantize: torch's formats", "quantize to every torch float format against torch's cast", 1.5,
          ("test_quantize_matches_torch_cast",), requires=IEEE_SMALL,
          fixed={f"test_quantize_matches_torch_cast[{name}]": f"test_quantize_small_formats_against_brute_force[{name}]"
                 for name in ("fp8_e4m3fn", "fp8_e5m2")}),
        B("quantize: small formats", "formats torch lacks (fp4, fp6, ...) against a brute-force nearest value",
          1.5, ("test_quantize_small_formats_against_brute_force",)),
        B("quantize: 1e-8 in fp16 and bf16", "our example of the lecture's point on range: 1e-8, and generated "
          "values below half of fp16's smallest subnormal, underflow in fp16, not in bf16 (against torch's casts)",
          0.25, ("test_lecture_fact_1e8_underflows_in_fp16_not_in_bf16",)),
        B("nvfp4_quantize", "the e2m1 grid values, the e4m3 block scales, the nearest values; also at the bottom "
          "of its range", 1.5,
          ("test_nvfp4_quantize_grid_scales_and_nearest_values", "test_nvfp4_quantizes_the_bottom_of_its_range"),
          fixed={"test_nvfp4_quantizes_the_bottom_of_its_range":
                  ("test_nvfp4_quantize_grid_scales_and_nearest_values",)}),
        B("nvfp4_dequantize", "values times block scale times tensor scale", 0.25,
          ("test_nvfp4_dequantize_multiplies_the_scales",)),
        # the two NVFP4 properties carry their own evidence: quantize's result must be an encoding of x (values on
        # the e2m1 grid, an e4m3 scale per block), which the input itself, a constant or a raise is not
        B("nvfp4: representable input is exact", "an encoding of generated values on the grid (e2m1 values, e4m3 "
          "block scales) whose round trip changes nothing", 0.5, ("test_nvfp4_is_exact_for_representable_input",)),
        B("nvfp4: error bound per block", "a bound only: an encoding of x (e2m1 values, e4m3 block scales) whose "
          "round trip is within 17/96 of each block's amax", 0.25, ("test_nvfp4_error_bound_per_block",)),
        B("differential: nvfp4", "quantize and dequantize against the reference", 0.5, ("test_differential_nvfp4",)),
        B("mixed precision: bf16", "bf16 matmuls, fp32 master parameters: the step against torch", 1,
          ("test_mixed_precision_bf16_matmuls_low_params_fp32",)),
        B("mixed precision: fp16 with a loss scaler", "the fp16 step with a loss scaler against torch", 0.75,
          ("test_mixed_precision_fp16_with_scaler",)),
        B("mixed precision: the scaler rescues gradients", "gradients that underflow in fp16 survive scaling",
          0.5, ("test_mixed_precision_scaler_rescues_underflowing_fp16_gradients",)),
        B("mixed precision: overflow", "an overflowing step is skipped and the scale backs off", 0.75,
          ("test_mixed_precision_overflow_skips_the_step_and_backs_off",)),
        B("input validation", "on generated calls, unknown formats, other dtypes, shapes that do not block, "
          "non-finite or tiny input raise ValueError, and a valid call beside each returns a value of the right "
          "kind that follows its input, as any rounding does (two formats, two FloatFormats; float32 of the "
          "input's shape, bf16 values, values of the format, nonzero with its sign for a normal input; an "
          "NVFP4Tensor keeping the signs and the largest value; a dequantization keeping the zeros)",
          0.5, ("test_float_format_rejects_unknown_formats", "test_round_to_bf16_rejects_other_dtypes",
                "test_quantize_rejects_other_dtypes", "test_nvfp4_rejects_shapes_that_do_not_block",
                "test_nvfp4_rejects_input_out_of_range", "test_nvfp4_dequantize_rejects_shapes_that_do_not_match",
                "test_documented_errors_are_raised"),
          # the docstrings' fixed calls pass for a table of them: they wait for the generated test of their
          # function, which a table, a constant or a function that always raises does not pass
          fixed={"test_documented_errors_are_raised[float_format:*]": "test_float_format_rejects_unknown_formats",
                 "test_documented_errors_are_raised[round_to_bf16:*]": "test_round_to_bf16_rejects_other_dtypes",
                 "test_documented_errors_are_raised[quantize:*]": "test_quantize_rejects_other_dtypes",
                 "test_documented_errors_are_raised[nvfp4_quantize:*]": (
                     "test_nvfp4_rejects_shapes_that_do_not_block", "test_nvfp4_rejects_input_out_of_range"),
                 "test_documented_errors_are_raised[nvfp4_dequantize:*]":
                 "test_nvfp4_dequantize_rejects_shapes_that_do_not_match"}),
    ),
    "adamw": (
        B("AdamW: float64 trajectories", "several steps on float64 parameters against torch.optim.AdamW, "
          "without weight decay", 1.5, ("test_adamw_matches_torch_float64_without_weight_decay",)),
        B("AdamW: float64 weight decay", "the same with weight decay in every group", 1.25,
          ("test_adamw_matches_torch_float64_with_weight_decay",)),
        B("AdamW: float32 trajectories", "against torch.optim.AdamW on float32 parameters, in two parts: without "
          "and with weight decay", 1, ("test_adamw_matches_torch_float32",)),
        B("AdamW: bf16 parameters, default state", "bf16 parameters, state in their dtype, against torch, in two "
          "parts", 1, ("test_adamw_bf16_params_default_state_like_torch",)),
        B("AdamW: bf16 parameters, fp32 state", "bf16 parameters with fp32 moments, against an fp32 run, in two "
          "parts", 1, ("test_adamw_bf16_params_fp32_state",)),
        B("AdamW: hyperparameters from the groups", "built with other hyperparameters and given these in "
          "param_groups before each step (lr changed between steps), it steps as when built with these",
          0.5, ("test_adamw_reads_hyperparameters_from_the_groups_each_step",), requires=ADAM_STEPS),
        B("AdamW: closure", "step(closure) calls the closure once, returns its loss and steps as when the closure "
          "is called first", 0.25, ("test_adamw_closure",), requires=ADAM_STEPS),
        B("AdamW: parameters without gradients", "are left alone (no weight decay either), with no state", 0.25,
          ("test_adamw_leaves_parameters_without_gradients_alone",), requires=ADAM_STEPS),
        B("AdamW: a torch optimizer", "a torch.optim.Optimizer with param groups, whose first step moves every "
          "parameter against its gradient", 0.25,
          ("test_adamw_steps_each_parameter_against_its_gradient", "test_adamw_is_a_torch_optimizer_with_param_groups"),
          fixed={"test_adamw_is_a_torch_optimizer_with_param_groups": ADAM_STEPS}),
        B("AdamW: invalid hyperparameters", "negative lr, betas outside [0, 1), ... raise ValueError; zeros are "
          "allowed", 0.25, ("test_adamw_rejects_invalid_hyperparameters", "test_documented_errors_are_raised"),
          requires=ADAM_STEPS),
        B("optimizer_state_bytes", "the state bytes of torch's optimizers and of yours, per policy", 1,
          ("test_optimizer_state_bytes_of_torch_optimizers", "test_optimizer_state_bytes_follow_the_policy_table")),
        B("optimizer_state_bytes: fp32 moments, before the first step", "8 bytes of fp32 moments per bf16 "
          "parameter (the lecture's 4 + 4), torch's own in bf16; zero before a step",
          0.25, ("test_lecture_bf16_params_fp32_moments_is_12_bytes_per_param",
                 "test_optimizer_state_bytes_is_zero_before_the_first_step"),
          fixed={"test_lecture_bf16_params_fp32_moments_is_12_bytes_per_param": (
                     "test_optimizer_state_bytes_follow_the_policy_table[bf16]",
                     "test_optimizer_state_bytes_of_torch_optimizers[torch_adamw]"),
                 "test_optimizer_state_bytes_is_zero_before_the_first_step": (
                     "test_optimizer_state_bytes_follow_the_policy_table[fp32]",
                     "test_optimizer_state_bytes_of_torch_optimizers[torch_adamw]")}),
        B("audit: AdamW without torch's Adam", "the same trajectories with torch's Adam made unusable", 0.5,
          ("test_audit_adamw_does_not_use_torch_adam",), requires=ADAM_STEPS),
    ),
    "roofline": (
        B("elementwise costs", "relu_cost; gelu_cost as torch decomposes it; generated unknown approximations "
          "raise, and a known one beside returns an OpCost", 1,
          ("test_relu_cost", "test_gelu_cost_counts_torchs_decomposition",
           "test_gelu_cost_rejects_unknown_approximation")),
        B("dot, matvec and matmul costs", "FLOPs and bytes of each", 1.25,
          ("test_dot_cost", "test_matvec_cost", "test_matmul_cost")),
        B("arithmetic and accelerator intensity", "FLOPs per byte of an op and of a chip", 0.5,
          ("test_arithmetic_intensity_is_flops_per_byte", "test_accelerator_intensity_from_the_spec_sheet"),
          fixed={"test_accelerator_intensity_from_the_spec_sheet": ("test_arithmetic_intensity_is_flops_per_byte",)}),
        B("the lecture's numbers", "the lecture's intensities (ReLU 0.25, dot 0.5, the H100's ~295) and ours "
          "from them (a mat-vec, a 1024³ matmul)", 0.5, ("test_lecture_numbers",),
          requires=("test_relu_cost", "test_dot_cost", "test_matvec_cost", "test_matmul_cost",
                    "test_arithmetic_intensity_is_flops_per_byte")),
        B("intensity grows with matmul size", "on generated sizes, a bigger matmul has a higher intensity, each "
          "your matmul_cost's FLOPs over its bytes, the FLOPs the same multiple of b·d·k at every size", 0.25,
          ("test_intensity_grows_with_matmul_size",)),
        B("classify", "compute- or memory-bound, flipping exactly at the ridge; matmuls on real chips", 0.75,
          ("test_classify_flips_exactly_at_the_accelerator_intensity", "test_classify_matmuls_on_real_hardware")),
        B("roofline_time", "the slower of compute and memory", 0.75,
          ("test_roofline_time_is_the_slower_of_compute_and_memory",)),
        B("attainable_flops_per_sec", "the roof; rate times time is the work", 0.5,
          ("test_attainable_flops_per_sec_is_the_roof", "test_attainable_rate_times_roofline_time_is_the_work")),
        B("min_compute_bound_batch", "the smallest compute-bound batch (or ValueError); our worked example (319 "
          "for 8192 × 8192 on an H100)", 1,
          ("test_min_compute_bound_batch_is_the_smallest", "test_min_compute_bound_batch_lecture",
           "test_documented_errors_are_raised"),
          fixed={"test_min_compute_bound_batch_lecture": ("test_min_compute_bound_batch_is_the_smallest",),
                 "test_documented_errors_are_raised[gelu_cost:*]": ("test_gelu_cost_rejects_unknown_approximation",),
                 "test_documented_errors_are_raised": ("test_min_compute_bound_batch_is_the_smallest",)}),
        B("plot_roofline", "writes a PNG (one with the demo's points, drawn with your package), each point, one "
          "generated among them, drawn on the roof at its intensity; names the missing extra", 0.25,
          ("test_plot_roofline_writes_a_png", "test_plot_roofline_names_the_missing_extra"),
          fixed={"test_plot_roofline_names_the_missing_extra": ("test_plot_roofline_writes_a_png",)}),
        B("differential: all functions", "every function against the reference", 0.25,
          ("test_differential_roofline",)),
    ),
    "gradient_accumulation": (
        B("one micro-batch's activations at a time", "on generated even splits, a forward, the loss and a backward "
          "on each micro-batch in turn, and the peak of saved activations (measured) that of a plain backward on "
          "one micro-batch, falling as it shrinks: what sets accumulation apart from one full-batch backward", 1.5,
          ("test_saved_activations_peak_falls_with_the_micro_batch",)),
        B("the full-batch gradient, float64", "accumulated gradients, and the loss returned, against one "
          "full-batch backward, on even splits (every micro-batch the same size): a part each", 1.5,
          ("test_accumulated_gradient_is_the_full_batch_gradient_float64",)),
        B("the full-batch gradient, float32", "the same in float32", 0.25,
          ("test_accumulated_gradient_is_the_full_batch_gradient_float32",)),
        B("uneven splits", "generated uneven splits of a batch (the last micro-batch smaller, or the only one), "
          "for MSE and cross-entropy", 0.75, ("test_uneven_splits_give_the_full_batch_gradient",)),
        B("train_step", "one accumulated step is a full-batch SGD step: the parameters, and the losses returned, a "
          "part each", 0.5,
          ("test_train_step_is_a_full_batch_sgd_step",)),
        B("no gradient left, invalid sizes", "train_step steps after a backward through the loss and leaves no "
          ".grad behind; zero or negative micro-batch sizes raise ValueError, and a valid one backpropagates the "
          "loss (generated calls)", 0.25,
          ("test_train_step_leaves_no_gradient_behind", "test_invalid_micro_batch_size_raises_value_error",
           "test_documented_errors_are_raised"),
          # the docstring's fixed calls (an empty batch among them) pass for a function that always raises, or a
          # table: they wait for the generated invalid sizes, which neither passes and no slip elsewhere fails
          fixed={"test_documented_errors_are_raised": "test_invalid_micro_batch_size_raises_value_error"}),
        B("differential: accumulate_gradients", "against the reference", 0.25, ("test_accumulate_matches_reference",)),
    ),
    "activation_checkpointing": (
        B("checkpoint: saves only its inputs", "only the inputs are saved for backward; fn runs twice (forward, "
          "recompute): what sets checkpoint apart from calling fn; half each", 1.75,
          ("test_checkpoint_keeps_only_its_inputs_and_runs_fn_twice",)),
        # checkpoint's gradient rows carry their own evidence: fn ran again during backward (a plain call of fn,
        # which gives the same gradients, does not), so they wait for no other row
        B("checkpoint: gradients", "the gradients of a checkpointed module, or function of tensors, equal a plain "
          "backward, with fn rerun in backward", 0.5, ("test_checkpoint_matches_plain_backward",)),
        B("checkpoint: non-tensor arguments", "passed through to fn (a list, a float, None, a bool); the gradients "
          "still equal a plain backward, with fn rerun in backward", 0.25,
          ("test_checkpoint_passes_non_tensor_arguments_through",)),
        B("checkpoint: dropout replayed", "the recomputation (fn rerun in backward) replays the RNG, like "
          "torch.utils.checkpoint", 0.5, ("test_checkpoint_replays_dropout_like_torch_utils_checkpoint",)),
        B("checkpoint: parameters' gradients", "parameters get gradients when no input requires grad, with fn rerun "
          "in backward", 0.25, ("test_checkpoint_gives_parameters_gradients_when_no_input_requires_grad",)),
        B("audit: checkpoint without torch.utils.checkpoint", "the same gradients and recomputations with the "
          "oracle unusable; paid beside three of its runs seen right", 0.5,
          ("test_audit_checkpoint_does_not_use_torch_utils_checkpoint",)),
        B("checkpoint_sequential: segments recomputed", "keeps segment inputs only, recomputes each segment once; "
          "in two parts: segments given, and the default", 0.75,
          ("test_checkpoint_sequential_keeps_segment_inputs_and_recomputes_each_segment",)),
        B("checkpoint_sequential: gradients", "equal a plain backward", 0.25,
          ("test_checkpoint_sequential_matches_plain_backward",)),
        B("segments", "default ceil(sqrt(L)), sizes like tensor_split, invalid counts raise", 0.25,
          ("test_default_segments_is_ceil_sqrt", "test_segment_sizes_like_tensor_split",
           "test_invalid_segments_raise_value_error", "test_documented_errors_are_raised"),
          fixed={"test_invalid_segments_raise_value_error": (
                     "test_segment_sizes_like_tensor_split", SEQUENTIAL),
                 "test_documented_errors_are_raised[segment_sizes:*]": ("test_segment_sizes_like_tensor_split",),
                 "test_documented_errors_are_raised[checkpoint_sequential:*]": (SEQUENTIAL,),
                 "test_documented_errors_are_raised[recompute_flops:*]": (
                     "test_recompute_flops_rejects_unknown_strategies",)}),
        B("checkpoint_memory", "against measured bytes; O(L) falls to O(sqrt L)", 0.25,
          ("test_checkpoint_memory_matches_measured_bytes", "test_checkpoint_memory_falls_from_linear_to_square_root"),
          fixed={"test_checkpoint_memory_falls_from_linear_to_square_root":
                  ("test_checkpoint_memory_matches_measured_bytes",)}),
        B("recompute_flops", "against the counted forward calls; generated unknown strategies raise, and a known one "
          "beside returns an int", 0.25,
          ("test_recompute_flops_matches_counted_forward_calls", "test_recompute_flops_rejects_unknown_strategies")),
        B("differential: all functions", "the analytic models and checkpoint_sequential against the reference",
          0.5, ("test_analytic_models_match_reference", "test_checkpoint_sequential_matches_reference")),
    ),
    "benchmarking": (
        B("summarize", "against statistics, one part per field (the times, mean, median, std); the worked "
          "examples; the reference", 0.5,
          ("test_summarize_matches_statistics", "test_summarize_worked_examples", "test_summarize_matches_reference"),
          fixed={"test_summarize_worked_examples": ("test_summarize_matches_statistics",)}),
        B("benchmark: the order of calls", "warm-ups, then each trial between two syncs and clock reads", 0.5,
          ("test_benchmark_calls_in_order",)),
        B("benchmark: times each trial's work", "each time is the work of one trial, on a fake clock; the "
          "statistics those of the times", 0.75, ("test_benchmark_times_the_work_of_each_trial",)),
        B("benchmark: the default sync", "torch.cuda.synchronize before every clock read on CUDA, no sync on the "
          "CPU (fn timed all the same)", 0.5,
          ("test_benchmark_default_sync_on_cuda_is_cuda_synchronize",
           "test_benchmark_default_sync_on_cpu_does_nothing")),
        B("measure_matmul", "FLOPs, bytes, time and utilisation on a fake clock", 0.5,
          ("test_measure_matmul_with_a_fake_clock",)),
        B("measure_bandwidth", "bytes, time and bandwidth on a fake clock", 0.5,
          ("test_measure_bandwidth_with_a_fake_clock",)),
        B("utilisation", "MFU against the peak of the dtype used, and none without a spec sheet (the CPU), on "
          "generated measurements of a matmul and of ReLU", 0.25,
          ("test_utilisation_is_against_the_peak_of_the_dtype_used_and_none_on_the_cpu",)),
        B("device names", "hardware_for_name and device_spec", 0.25,
          ("test_hardware_for_name", "test_device_spec_of_a_cuda_device_goes_by_its_name",
           "test_device_spec_of_the_cpu_is_none")),
        B("input validation", "no times, negative warm-ups or fewer than one trial raise ValueError, and a valid "
          "call beside each returns a Timing (generated: summarize's of the times given, its mean and median "
          "between them; benchmark's after calling fn once per warm-up and trial, the clock read before and after "
          "a call of fn)", 0.25,
          ("test_summarize_rejects_no_times", "test_benchmark_rejects_bad_counts",
           "test_documented_errors_are_raised"),
          # the docstring's fixed calls pass for a table of them: they wait for the generated test of their function
          fixed={"test_documented_errors_are_raised[summarize:*]": "test_summarize_rejects_no_times",
                 "test_documented_errors_are_raised[benchmark:*]": "test_benchmark_rejects_bad_counts"}),
    ),
}
del B, TENSOR_OPS, BF16_NORMAL, IEEE_SMALL, ADAM_STEPS, MINI_EINOPS_PARTS
del SEQUENTIAL

for _problem in PROBLEMS:
    _weights = [b.points for b in _problem.behaviours]
    assert all(w > 0 and float(4 * w).is_integer() for w in _weights), f"{_problem.id}: weights are quarter points"
    assert math.fsum(_weights) == _problem.points, f"{_problem.id}: behaviours add up to {math.fsum(_weights)}"
    assert len({b.name for b in _problem.behaviours}) == len(_weights), f"{_problem.id}: two behaviours, one name"
    _owner = {test: b for b in _problem.behaviours for test in b.tests}
    for _b in _problem.behaviours:
        for _key in _b.fixed:
            assert selector(_key)[0] in _b.tests, f"{_problem.id}: {_b.name}: `fixed` names {_key!r}, not its test"
        for _text in (*_b.requires, *(w for waits in _b.fixed.values() for w in waits)):
            _function = selector(_text)[0]
            _evidence = _owner.get(_function)
            assert _evidence is not None and not _evidence.name.startswith("differential") and not _evidence.requires \
                and not any(selector(k)[0] == _function for k in _evidence.fixed), (
                    f"{_problem.id}: {_b.name} waits for {_text!r}: no such ungated, local test")

# Markers that are not problems. `gpu`: needs a Hopper GPU, worth no points by default.
EXTRA_MARKERS = {
    "gpu": "needs a Hopper GPU (H100/H200); skipped elsewhere and worth no points",
    "differential": "compares against reference/; skipped in the student release",
    "meta": "tests of the test suite itself (TAs and CI)",
    "slow": "a meta-test of the slow tier, which grades as users' machines do (the hostile corpus in both sandbox "
            "modes, the Gradescope image, a Dask cluster): `make slow` and CI run it, `make test` does not",
}

# The profiler's switches: the record of every op that the dispatch-mode audits of tensors and precision
# read (tests/scenarios/escapes.py), which the code under test must not turn off or restart while they read it.
PROFILER_SWITCHES = tuple(f"torch._C._autograd.{name}" for name in (
    "_disable_profiler_legacy", "_enable_profiler_legacy", "_disable_profiler", "_enable_profiler",
    "_prepare_profiler", "_enable_record_function"))
# torch's other FLOP counter: the profiler computes 2*m*k*n for the matmul family in C++ when asked
# (`with_flops=True`), kineto's and the legacy one alike. The functions that turn either on are taken out of the
# flops world (grader/harness/absent.py `disable_functions`, TAKEN_OUT): no profiler runs there.
PROFILER_FLOPS = tuple(f"torch._C._autograd.{name}" for name in (
    "_enable_profiler", "_prepare_profiler", "_enable_profiler_legacy"))

# The scenarios that read that record: the only requests in which the switches can blind an audit (each turns the
# record on as it starts, whatever was switched before), so the only ones in which the guard's tripwire watches
# them (grader/harness/guard.py). tests/meta/test_guard.py checks that every scenario reading the record is here.
RECORD_AUDITS = ("tests.scenarios.tensors:without_tensor_ops", "tests.scenarios.precision:watched_round_to_bf16")

# What each problem is graded against and its code may not run: modules (every file of a package) and
# compiled kernels, by dotted name. Absent from that problem's grading worker (grader/harness/absent.py): a module
# is a stub there and its files are hidden (grader/harness/sandbox.py), a kernel of torch's namespace is replaced; the
# oracle runs in the test process only (tests/oracles.py). The profiler's switches (tensors, precision) are
# part of torch, which the code needs: the worker's guard (grader/harness/guard.py) fails a request that reaches
# them, as evidence in the code's own process, and refuses to open or compile any oracle's source.
ORACLES: dict[str, tuple[str, ...]] = {
    "tensors": PROFILER_SWITCHES,
    "precision": PROFILER_SWITCHES,
    "mini_einops": ("einops",),
    "flops": ("torch.utils.flop_counter", *PROFILER_FLOPS),
    "adamw": ("torch.optim.adam", "torch.optim.adamw", "torch._fused_adamw_", "torch._fused_adam_"),
    "activation_checkpointing": ("torch.utils.checkpoint",),
}

# The compiled functions of torch's extension among a problem's oracles that its world must not hold at all:
# replaced in every namespace (grader/harness/absent.py `disable_functions`). The profiler's switches of tensors
# and precision are not among them: their audits need the profiler, which the guard watches instead.
TAKEN_OUT: dict[str, tuple[str, ...]] = {"flops": PROFILER_FLOPS}

# Problems graded in one world: their workers are forked from one fork server (grader/harness/forkserver.py),
# whose torch has the oracles of all of them absent, so each is graded with all three absent (the handout says
# so). Their oracles are parts of torch, which a worker with one of them a stub must import anew (about 1.2 s of
# CPU, and 0.7 s more for sympy in two of them: measured in 2026-12 on torch 2.13); no solution of one of them needs
# another's. Every other problem with an oracle module (mini_einops: einops, which other problems' code may use)
# gets a worker of its own; the problems whose oracles have no module share another server.
SHARED_WORLD = ("flops", "adamw", "activation_checkpointing")

# Modules that torch imports lazily, the first time it needs them, and that a problem's scenarios reach: its worker
# (or its fork server, once, just before it forks the first of them) imports them ahead, before the guard, where
# they cost a third as much as under the guard's tripwire. torch.fx.experimental.symbolic_shapes, with sympy (about
# 0.7 s of CPU): the first op on a meta tensor that requires grad (flops' workloads), the first backward given its
# gradients (a checkpoint's). torch's compiler front end, which the first optimizer built would import (1.2 s more;
# both measured in 2026-12 on torch 2.13), is a stand-in in every worker (grader/harness/front_end.py).
IMPORTED_AHEAD: dict[str, tuple[str, ...]] = {
    "flops": ("torch.fx.experimental.symbolic_shapes",),
    "activation_checkpointing": ("torch.fx.experimental.symbolic_shapes",),
}


def graded_with(problem: str | None) -> tuple[str, ...]:
    """The problems whose oracles are absent from the worker of `problem`, forked or not: those of its world."""
    return SHARED_WORLD if problem in SHARED_WORLD else (problem,) if problem else ()

assert sum(p.points for p in PROBLEMS) == 100


def awaited(problem: str, selectors: tuple[str, ...], mark: str = "'") -> str:
    """What gated tests of `problem` wait for, in words: "'a' passes", "'a' (x) and 'b' pass" (`named`)."""
    listed, count = named(problem, selectors, mark)
    return listed + (" passes" if count == 1 else " pass")


def named(problem: str, selectors: tuple[str, ...], mark: str = "'") -> tuple[str, int]:
    """Selectors of `problem` in words, and how many phrases that is: a behaviour all of whose tests they select
    by its name; the parts of a behaviour of one test by its name and its parts ("'a' (parts x, y)"); other
    tests by their names ("`test_x[y]`")."""
    owner = {test: b for b in BY_ID[problem].behaviours for test in b.tests}
    picked: dict[str, list[tuple[str, str | None]]] = {}
    for text in dict.fromkeys(selectors):
        function, part = selector(text)
        picked.setdefault(owner[function].name if function in owner else function, []).append((function, part))
    phrases = []
    for name, chosen in picked.items():
        behaviour = next((b for b in BY_ID[problem].behaviours if b.name == name), None)
        if behaviour and {f for f, part in chosen if part is None} == set(behaviour.tests):
            phrases.append(f"{mark}{name}{mark}")
        elif behaviour and len(behaviour.tests) == 1 and all(part for _, part in chosen):
            listed_parts = ", ".join((part or "").replace("*", "...") for _, part in chosen)
            phrases.append(f"{mark}{name}{mark} (part{'s' * (len(chosen) > 1)} {listed_parts})")
        else:
            by_function: dict[str, list[str | None]] = {}
            for function, part in chosen:
                by_function.setdefault(function, []).append(part)
            for function, parts in by_function.items():
                named_parts = [part.replace("*", "...") for part in parts if part]
                phrases.append(f"`{function}`" + (f" (part{'s' * (len(named_parts) > 1)} {', '.join(named_parts)})"
                                                  if named_parts and None not in parts else ""))
    listed = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return listed, len(phrases)


def weight_table(problem: Problem) -> str:
    """The problem's weight table, as the handout shows it (a meta-test compares the two)."""
    rows = ["| behaviour | what it checks | tests | points |", "| --- | --- | --- | ---: |"]
    for b in problem.behaviours:
        tests = ", ".join(f"`{t}`" for t in b.tests)
        checks = b.checks
        if b.requires:
            checks += f"; earned only when {awaited(problem.id, b.requires, '*')}"
        if b.fixed:
            waits = tuple(w for waits in b.fixed.values() for w in waits)
            listed, count = named(problem.id, waits, "*")
            checks += f"; fixed inputs earned beside {listed}" + (", each its own function's" if count > 1 else "")
        rows.append(f"| {b.name} | {checks} | {tests} | {b.points:g} |")
    rows.append(f"| **total** | | | **{problem.points}** |")
    return "\n".join(rows)
