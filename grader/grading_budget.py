"""How many examples each generated test runs when it grades (the `grade` profile, which the grader runs under
a secret grading seed): a budget per test instead of one number for all, calibrated from mutation data, and
the reason beside each budget.

    python -m tests.meta.mutation --every-test --profile calibrate --grading-seed N --json cat-N.json   # N = 1, 2, 3
    python -m tests.meta.mutation --every-test --profile calibrate --grading-seed 1 --automatic --sample 400 ...
    python -m tests.meta.mutation --differential ...   # each of the above again, for the differential tests
    python -m tests.meta.calibrate cat-1.json cat-2.json cat-3.json auto.json --costs report.jsonl [--python]

The data (tests/meta/calibrate.py): every catalogued mistake (tests/mistakes/: 229 that return, 2026-12-07, after
issue 51's tests of one thing) under grading seeds 1, 2 and 3, and 400 automatic mutants of the reference
(tests/mistakes/automatic.py: one operator, comparison or constant changed; 345 of them caught) under seed 1; for
each, every test that failed and the example at which it first failed (counted from 1, its explicit examples and
the examples hypothesis rejected included). The differential
tests, which compare with the reference and so cannot see a mistake swapped into it, have data of their own:
the same catalogue and 400 automatic mutants (sample seed 0) run with `--differential`, where the mistake is in
the package under test and the reference they compare with is untouched.

A test listed here runs its own budget:
- at most FLOOR (the one number of before) where the data allows fewer: twice the latest example at which the
  test caught any mistake or mutant, and at least MINIMUM (MINIMUM too for a test that caught nothing in the
  data). So every catch recorded stays a catch, not only one per mistake: a mistake two tests catch today, both
  still catch;
- over FLOOR, up to 60, where a rare input is what catches (one op of several, then its rare case), from the
  catalogue under seeds 1, 2 and 3 with 60 examples a test.
A test not listed runs FLOOR (it caught only late, or is newer than the data). Where a mistake is caught
only by a rare input, or late under some seed (a packed dtype among ~30; for is_contiguous an empty layout, one
spaced evenly but not by 1, and rows with gaps between them; for einsum output axes in another order than the
inputs', for reduce a mean or a max over several axes and an ellipsis reduced away, for single view ops each
op's rare case: tests/strategies PINNED), the test pins that input as an explicit example: it runs under every
seed. einsum, reduce and the single view ops ran 60 examples an item for their rare inputs, and mini_einops'
generated patterns 250; pinned, their latest catch of the catalogue (seeds 1-3) is example 9, 9, 12 and 40, and
every automatic mutant caught before (215 of mini_einops, 177 of tensors, seed 1) is still caught by some test.

What the budgets keep is checked on data they were not calibrated on: the catalogue under grading seed 11
(tests/meta/test_mistakes.py), and another sample of automatic mutants under seed 11, each caught within the
budgets wherever FLOOR examples catch it (the `floor` profile: tests/meta/test_automatic_mutants.py); the
differential tests' budgets, on the catalogue and 200 other automatic mutants (sample seed 1) under seed 11,
floor against grade (by hand: the same catches).
"""

FLOOR = 25  # twice the 12 examples within which 97% of the catalogue's catches came, and more than `dev`'s 20
MINIMUM = 10  # the `mutation` profile's examples, within which every catalogued mistake is caught

BUDGET: dict[str, tuple[int, str]] = {  # the latest catch: the mistake or mutant, and its example
    "test_accumulate_matches_reference": (10, "gradient_accumulation:unweighted_mean_loss caught at example 5"),
    "test_accumulated_gradient_is_the_full_batch_gradient_float32":
        (20, "gradient_accumulation:stale_grads caught at example 10"),
    "test_accumulated_gradient_is_the_full_batch_gradient_float64":
        (10, "gradient_accumulation:stale_grads caught at example 3"),
    "test_adamw_bf16_params_fp32_state": (20, "adamw:ignores_state_dtype caught at example 10"),
    "test_adamw_closure": (10, "adamw:auto-34-L57 caught at example 4"),
    "test_adamw_is_a_torch_optimizer_with_param_groups": (10, "adamw:ignores_state_dtype caught at example 1"),
    "test_adamw_leaves_parameters_without_gradients_alone": (10, "adamw:auto-27-L40 caught at example 3"),
    "test_adamw_matches_torch_float32": (10, "adamw:hyperparameters_from_defaults caught at example 5"),
    "test_adamw_matches_torch_float64_with_weight_decay": (10, "adamw:l2_coupled caught at example 3"),
    "test_adamw_matches_torch_float64_without_weight_decay": (10, "adamw:eps_inside_sqrt caught at example 3"),
    "test_adamw_reads_hyperparameters_from_the_groups_each_step": (10, "adamw:auto-30-L53 caught at example 4"),
    "test_adamw_steps_each_parameter_against_its_gradient": (10, "adamw:auto-29-L53 caught at example 2"),
    "test_approx_training_flops_is_six_n_d": (10, "flops:two_nd caught at example 1"),
    "test_arithmetic_intensity_is_flops_per_byte": (10, "roofline:intensity_inverted caught at example 2"),
    "test_attainable_flops_per_sec_is_the_roof": (10, "roofline:attainable_max caught at example 1"),
    "test_attainable_rate_times_roofline_time_is_the_work": (10, "roofline:intensity_inverted caught at example 2"),
    "test_attention_flops_fraction_matches_measured_share": (10, "flops:auto-7-L91 caught at example 4"),
    "test_attention_score_flops_matches_the_bmm_count": (10, "flops:attention_one_layer caught at example 2"),
    "test_attention_scores_match_q_kt_over_sqrt_d": (10, "einops_practice:auto-9-L19 caught at example 3"),
    "test_attention_share_grows_with_context_and_six_n_d_falls_behind": (10, "flops:auto-41-L112 caught at example 5"),
    "test_audit_adamw_does_not_use_torch_adam": (10, "adamw:delegates_to_torch caught at example 1"),
    "test_audit_checkpoint_does_not_use_torch_utils_checkpoint":
        (10, "activation_checkpointing:delegates_to_torch caught at example 1"),
    "test_audit_counter_does_not_use_flopcountermode": (10, "caught nothing in the data"),
    "test_audit_does_not_use_einops": (10, "mini_einops:delegates_to_einops caught at example 1"),
    "test_audit_every_function_uses_einops": (10, "einops_practice:merge_heads_without_einops caught at example 1"),
    "test_audit_layouts_are_computed_without_tensors": (20, "tensors:auto-71-L96 caught at example 10"),
    "test_audit_round_to_bf16_uses_integer_operations": (10, "precision:bf16_by_cast caught at example 1"),
    "test_benchmark_calls_in_order": (10, "benchmarking:one_clock_for_all_trials caught at example 4"),
    "test_benchmark_default_sync_on_cpu_does_nothing":
        (10, "benchmarking:default_sync_always_cuda caught at example 1"),
    "test_benchmark_default_sync_on_cuda_is_cuda_synchronize":
        (10, "benchmarking:no_sync_before_start caught at example 1"),
    "test_benchmark_times_the_work_of_each_trial": (10, "benchmarking:median_upper_middle caught at example 5"),
    "test_bytes_per_param_matches_real_optimizer_state": (10, "memory:master_ignored caught at example 5"),
    "test_can_view_matches_torch": (60, "tensors:view_only_if_contiguous caught at example 33"),
    "test_checkpoint_gives_parameters_gradients_when_no_input_requires_grad":
        (10, "activation_checkpointing:no_recompute caught at example 1"),
    "test_checkpoint_keeps_only_its_inputs_and_runs_fn_twice":
        (10, "activation_checkpointing:no_recompute caught at example 1"),
    "test_checkpoint_matches_plain_backward": (10, "activation_checkpointing:no_recompute caught at example 1"),
    "test_checkpoint_memory_matches_measured_bytes":
        (10, "activation_checkpointing:memory_average_segment caught at example 4"),
    "test_checkpoint_passes_non_tensor_arguments_through":
        (10, "activation_checkpointing:no_recompute caught at example 1"),
    "test_checkpoint_replays_dropout_like_torch_utils_checkpoint":
        (10, "activation_checkpointing:rng_not_replayed caught at example 4"),
    "test_checkpoint_sequential_keeps_segment_inputs_and_recomputes_each_segment":
        (10, "activation_checkpointing:default_l_segments caught at example 4"),
    "test_checkpoint_sequential_matches_plain_backward":
        (10, "activation_checkpointing:auto-0-L63 caught at example 1"),
    "test_checkpoint_sequential_matches_reference":
        (10, "activation_checkpointing:default_l_segments caught at example 5"),
    "test_classify_flips_exactly_at_the_accelerator_intensity": (10, "roofline:auto-4-L40 caught at example 3"),
    "test_classify_matmuls_on_real_hardware": (10, "roofline:auto-4-L40 caught at example 5"),
    "test_contiguous_strides_match_torch": (16, "tensors:strides_zeroed_by_empty_dims caught at example 8"),
    "test_counter_matches_flopcountermode_on_fused_attention":
        (10, "flops:counter_fused_backward_2x caught at example 2"),
    "test_counter_matches_flopcountermode_on_math_attention": (10, "flops:counter_misses_bmm caught at example 1"),
    "test_counter_matches_flopcountermode_on_matmul_programs": (14, "flops:counter_counts_bias caught at example 7"),
    "test_counter_matches_flopcountermode_on_mlps": (10, "flops:counter_counts_bias caught at example 5"),
    "test_counter_matches_flopcountermode_on_transformers": (10, "flops:counter_bmm_no_batch caught at example 2"),
    "test_counter_names_each_op_without_its_overload": (10, "flops:counter_misses_bmm caught at example 3"),
    "test_counter_starts_from_zero_each_time_it_is_entered": (10, "flops:auto-1-L26 caught at example 3"),
    "test_default_segments_is_ceil_sqrt": (24, "activation_checkpointing:default_float_sqrt caught at example 12"),
    "test_differential_all_functions": (10, "einops_practice:merge_d_heads caught at example 1"),
    "test_differential_counter": (16, "flops:counter_counts_bias caught at example 8"),
    "test_differential_counting_functions": (22, "memory:packed_halved caught at example 11"),
    "test_differential_measurements": (14, "memory:saved_every_tensor caught at example 7"),
    "test_differential_nvfp4": (10, "precision:nvfp4_scale_truncated caught at example 4"),
    "test_differential_roofline": (10, "roofline:batch_off_by_one caught at example 5"),
    "test_dot_cost": (10, "roofline:dot_fp32 caught at example 2"),
    "test_each_pattern_is_parsed_once": (10, "mini_einops:parse_every_call caught at example 1"),
    "test_einsum_near_misses_raise_like_einops": (20, "mini_einops:auto-176-L119 caught at example 10"),
    "test_element_offset_matches_data_ptr": (10, "tensors:offset_without_storage_offset caught at example 4"),
    "test_gelu_cost_counts_torchs_decomposition": (10, "roofline:auto-1-L10 caught at example 2"),
    "test_generated_patterns_raise_or_match_like_einops":
        (120, "mini_einops:auto-164-L472 caught at example 93, by this test alone (the catalogue's latest, "
              "its rarer inputs pinned: example 40)"),
    "test_intensity_grows_with_matmul_size": (10, "roofline:matmul_no_write caught at example 1"),
    "test_is_contiguous_matches_torch": (20, "tensors:contiguous_size_one_strides_matter caught at example 10"),
    "test_linear_flops_matches_flopcountermode": (10, "flops:auto-19-L14 caught at example 1"),
    "test_matmul_cost": (10, "roofline:matmul_no_write caught at example 1"),
    "test_matmul_flops_matches_flopcountermode": (10, "flops:two_d_minus_one caught at example 1"),
    "test_matmul_is_the_matrix_product": (10, "caught nothing in the data"),
    "test_matvec_cost": (10, "roofline:matvec_matrix_only caught at example 1"),
    "test_max_trainable_params_is_the_largest_that_fits": (10, "memory:max_params_ceil caught at example 3"),
    "test_measure_bandwidth_with_a_fake_clock": (10, "benchmarking:relu_mean_seconds caught at example 5"),
    "test_measure_matmul_with_a_fake_clock": (16, "benchmarking:mfu_bf16_peak caught at example 8"),
    "test_merge_heads_matches_transpose_and_reshape": (10, "einops_practice:merge_d_heads caught at example 1"),
    "test_mfu_is_achieved_over_peak": (10, "flops:mfu_inverted caught at example 2"),
    "test_min_compute_bound_batch_is_the_smallest": (12, "roofline:auto-35-L32 caught at example 6"),
    "test_mixed_precision_bf16_matmuls_low_params_fp32": (10, "precision:mp_no_autocast caught at example 1"),
    "test_mixed_precision_fp16_with_scaler": (10, "precision:mp_no_autocast caught at example 1"),
    "test_mixed_precision_overflow_skips_the_step_and_backs_off": (10, "precision:mp_no_autocast caught at example 1"),
    "test_mixed_precision_scaler_rescues_underflowing_fp16_gradients":
        (10, "precision:mp_no_autocast caught at example 1"),
    "test_mlp_activation_bytes_matches_the_measurement": (10, "memory:mlp_fp32 caught at example 2"),
    "test_mlp_training_flops_matches_forward_and_backward": (10, "flops:mlp_6nd caught at example 1"),
    "test_model_state_bytes_is_n_times_bytes_per_param": (10, "memory:state_without_grads caught at example 1"),
    "test_model_state_bytes_matches_a_real_training_step": (10, "memory:state_without_grads caught at example 1"),
    "test_multihead_attention_matches_sdpa": (10, "einops_practice:attention_sqrt_d_model caught at example 1"),
    "test_near_misses_raise_like_einops": (45, "mini_einops:mean_as_sum caught at example 43"),
    "test_nvfp4_dequantize_multiplies_the_scales": (10, "precision:auto-48-L92 caught at example 3"),
    "test_nvfp4_error_bound_per_block": (10, "precision:nvfp4_one_scale caught at example 3"),
    "test_nvfp4_is_exact_for_representable_input":
        (10, "precision:nvfp4_dequantize_no_tensor_scale caught at example 3"),
    "test_nvfp4_quantize_grid_scales_and_nearest_values": (10, "precision:nvfp4_scale_truncated caught at example 4"),
    "test_optimizer_state_bytes_follow_the_policy_table": (10, "adamw:ignores_state_dtype caught at example 1"),
    "test_optimizer_state_bytes_of_torch_optimizers": (10, "adamw:bytes_assume_fp32 caught at example 3"),
    "test_pairwise_sq_distances_match_differences": (10, "einops_practice:distances_no_two caught at example 1"),
    "test_parameter_count_and_bytes_match_torch": (12, "memory:bytes_assume_fp32 caught at example 6"),
    "test_patchify_cuts_row_by_row_patches": (10, "einops_practice:patch_column_order caught at example 1"),
    "test_per_head_linear_applies_each_heads_matrix":
        (10, "einops_practice:per_head_merge_h2_heads caught at example 1"),
    "test_pool2d_matches_torch_pooling": (10, "einops_practice:pool_kernels_swapped caught at example 1"),
    "test_quantize_matches_torch_cast": (24, "precision:quantize_ties_away caught at example 12"),
    "test_quantize_small_formats_against_brute_force": (20, "precision:quantize_ties_away caught at example 10"),
    "test_rearrange_matches_einops": (22, "mini_einops:auto-207-L298 caught at example 11"),
    "test_recompute_flops_matches_counted_forward_calls":
        (10, "activation_checkpointing:auto-36-L98 caught at example 3"),
    "test_reduce_matches_einops": (20, "mini_einops:auto-19-L315 caught at example 10"),
    "test_relu_cost": (10, "roofline:relu_reads_only caught at example 1"),
    "test_repeat_kv_matches_repeat_interleave": (10, "einops_practice:repeat_kv_tiled caught at example 1"),
    "test_roofline_time_is_the_slower_of_compute_and_memory": (10, "roofline:time_compute_only caught at example 1"),
    "test_round_to_bf16_keeps_the_shape": (10, "precision:bf16_truncate caught at example 3"),
    "test_round_to_bf16_matches_torch_cast": (14, "precision:bf16_half_up caught at example 7"),
    "test_saved_activations_matches_the_autograd_graph": (10, "memory:saved_view_bytes caught at example 5"),
    "test_saved_activations_starts_from_zero_each_time_it_is_entered":
        (10, "memory:saved_never_resets caught at example 1"),
    "test_segment_sizes_like_tensor_split": (10, "activation_checkpointing:sizes_last_takes_rest caught at example 5"),
    "test_split_heads_matches_view_and_transpose": (10, "einops_practice:split_d_heads caught at example 1"),
    "test_sum_hidden_sums_the_last_dimension": (10, "einops_practice:sum_hidden_mean caught at example 2"),
    "test_summarize_matches_reference": (10, "benchmarking:median_upper_middle caught at example 5"),
    "test_summarize_matches_statistics": (10, "benchmarking:median_upper_middle caught at example 5"),
    "test_tensor_bytes_allocates_nothing": (12, "memory:bits_over_eight caught at example 6"),
    "test_tensor_bytes_matches_torch": (10, "memory:packed_halved caught at example 5"),
    "test_train_step_is_a_full_batch_sgd_step": (10, "gradient_accumulation:step_per_micro_batch caught at example 2"),
    "test_train_step_leaves_no_gradient_behind": (10, "gradient_accumulation:auto-8-L26 caught at example 3"),
    "test_training_days_scales_as_compute_over_throughput": (10, "flops:days_no_mfu caught at example 1"),
    "test_training_step_flops_matches_forward_and_backward": (10, "flops:backward_1x caught at example 1"),
    "test_transformer_forward_flops_matches_flopcountermode": (10, "flops:gqa_ignored caught at example 2"),
    "test_transformer_param_count_matches_the_module": (10, "flops:auto-39-L111 caught at example 5"),
    "test_two_layer_backward_matches_autograd": (10, "einops_practice:backward_w1_skips_w2 caught at example 1"),
    "test_uneven_splits_give_the_full_batch_gradient": (10, "gradient_accumulation:sum_of_means caught at example 1"),
    "test_unpatchify_inverts_patchify": (10, "einops_practice:auto-6-L52 caught at example 1"),
}
