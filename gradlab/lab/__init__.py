"""gradlab.lab: see the engine work, in a notebook.

The views: ``record()`` watches a forward pass; ``GraphView`` draws the graph of a tensor, a recording,
a ``Scalar`` or a ``gl.jit.trace`` tape; ``BackpropStepper`` walks the engine's real backward through it
one node at a time; ``GradientFlow`` and ``ActivationStats`` follow each layer's gradients and outputs
over training; ``profile`` times and weighs each node; ``DeviceTimings`` and ``compare_devices`` time
the same work on every device (and, given ``torch=``, on PyTorch's); ``compare_engines`` sets one model's
gradlab and PyTorch versions side by side, parameter by parameter; ``make_dot`` writes a graph as
Graphviz's DOT, as torchviz draws it; ``Playground``, ``OptimizerRace`` and ``ConvScatter`` are the
course's interactive pictures. The checks (``check``, ``check_gradient``, ``check_this_node``, and one family per
lab: docs/lab.md lists them) say ✓, or ✗ with a hint that points at the mistake, or ○ "not done yet".
Everything but ``record`` and ``capture`` loads on first use, so ipywidgets and anywidget load only then.
"""

from .capture import CaptureError, capture
from .record import Recording, record

# module -> the names it defines, imported when one is first used
_LAZY_BY_MODULE = {
    "graph_view": ("GraphView",),
    "backprop_stepper": ("BackpropStepper",),
    "gradient_flow": ("GradientFlow",),
    "device_timings": ("DeviceTimings",),
    "timing": ("compare_devices", "compare_compiled"),
    "compare": ("compare_engines",),
    "profiling": ("profile", "Profile"),
    "playground": ("Playground",),
    "activation_stats": ("ActivationStats",),
    "ratio_picture": ("update_ratios",),
    "optimizer_race": ("OptimizerRace",),
    "conv_scatter": ("ConvScatter",),
    "depth_picture": ("gradient_by_depth",),
    "curves_picture": ("loss_curves",),
    "sequence_pictures": ("gradient_norms_over_time", "attention_maps"),
    "node_check": ("check_node",),
    "dot": ("make_dot",),
    "exercises": ("check", "check_gradient", "check_gradients", "check_function", "Verdict", "Verdicts",
        "check_numerically", "check_this_node", "cs231n_band"),
    "derivative_exercises": ("check_centred_difference",),
    "algorithm_exercises": ("check_topological_order", "check_prediction", "check_dual", "check_cheaper_mode"),
    "tensor_exercises": ("check_strides", "check_view", "check_broadcast_shape", "check_function_cases"),
    "optimizer_exercises": ("check_optimizer_step",),
    "health_exercises": ("check_init_std", "check_dead_fraction", "check_update_ratio", "check_learning_rate"),
    "norm_exercises": ("check_norm_forward", "check_norm_backward", "check_running_stats", "check_eval_norm"),
    "regularisation_exercises": ("check_dropout", "check_early_stopping"),
    "conv_exercises": ("check_output_size", "check_conv2d", "check_conv_weight_grad", "check_max_pool_grad"),
    "residual_exercises": ("check_residual_block", "check_skip_gradient", "check_jacobian_bound", "check_skip"),
    "sequence_exercises": ("check_rnn_step", "check_bptt_ratio", "check_causal_attention", "check_softmax_backward"),
    "performance_exercises": ("check_step_flops", "check_saved_bytes", "check_peak_memory", "check_segment_count"),
    "pytorch.exercises": ("check_torch_node_names", "check_torch_function", "check_wrong_parameter",
        "check_ported_weights"),
}
_LAZY = {name: module for module, names in _LAZY_BY_MODULE.items() for name in names}

__all__ = sorted(["CaptureError", "Recording", "capture", "record", *_LAZY])


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'gradlab.lab' has no attribute {name!r}")
