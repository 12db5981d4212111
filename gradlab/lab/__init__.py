"""gradlab.lab: see the engine work, in a notebook.

``record()`` watches a forward pass; ``GraphView`` draws the graph of a tensor, a recording or a
``Scalar``; ``BackpropStepper`` walks the engine's real backward through it one node at a time;
``GradientFlow`` follows each layer's gradients over training; ``DeviceTimings`` and
``compare_devices`` time the same work on every device (``compare_compiled``: eager against
``gl.compile``); ``GraphView(tape)`` draws a ``gl.jit.trace`` tape; ``check``, ``check_gradient`` and
``check_function`` check a learner's exercise, and ``check_strides``, ``check_view``,
``check_broadcast_shape`` and ``check_function_cases`` one about tensors' layout,
``check_centred_difference`` a finite difference written by hand; ``check_numerically``
checks a gradient against finite differences, ``check_this_node`` a Function's backward, and
``Verdicts.show_on(view)`` colours a graph by each checked gradient's error; ``check_topological_order``,
``check_prediction``, ``check_dual`` and ``check_cheaper_mode`` check lab 2's answers about backward as an
algorithm, and ``check_step_flops``, ``check_saved_bytes``, ``check_peak_memory`` and ``check_segment_count``
lab 12's about performance. The widgets load ipywidgets and anywidget only when first used.
"""

from .capture import CaptureError, capture
from .record import Recording, record

__all__ = ["BackpropStepper", "CaptureError", "DeviceTimings", "GradientFlow", "GraphView", "Recording", "capture",
           "Playground", "ActivationStats", "update_ratios",
           "check_norm_forward", "check_norm_backward", "check_running_stats", "check_eval_norm",
           "check_init_std", "check_dead_fraction", "check_update_ratio", "check_learning_rate",
           "OptimizerRace", "check_optimizer_step",
           "ConvScatter", "check_output_size", "check_conv2d", "check_conv_weight_grad", "check_max_pool_grad",
           "check_residual_block", "check_skip_gradient", "check_jacobian_bound", "check_skip", "gradient_by_depth",
           "check_step_flops", "check_saved_bytes", "check_peak_memory", "check_segment_count",
           "check_cheaper_mode", "check_dual", "check_prediction", "check_topological_order",
           "Profile", "Verdict", "Verdicts", "check", "check_broadcast_shape", "check_centred_difference", "check_function", "check_function_cases",
           "check_gradient", "check_gradients", "check_node", "check_numerically", "check_strides", "check_this_node",
           "check_view", "compare_compiled", "compare_devices", "cs231n_band", "profile", "record"]

# name -> the module that defines it, imported when the name is first used
_LAZY = {
    "GraphView": "graph_view", "BackpropStepper": "backprop_stepper", "check_node": "node_check",
    "GradientFlow": "gradient_flow", "DeviceTimings": "device_timings", "compare_devices": "timing",
    "compare_compiled": "timing",
    "profile": "profiling", "Profile": "profiling",
    "check": "exercises", "check_gradient": "exercises", "check_gradients": "exercises",
    "check_function": "exercises", "Verdict": "exercises", "Verdicts": "exercises",
    "check_numerically": "exercises", "check_this_node": "exercises", "cs231n_band": "exercises",
    "Playground": "playground",
    "ActivationStats": "activation_stats", "update_ratios": "ratio_picture", "check_init_std": "health_exercises",
    "check_dead_fraction": "health_exercises", "check_update_ratio": "health_exercises",
    "check_learning_rate": "health_exercises",
    "check_norm_forward": "norm_exercises", "check_norm_backward": "norm_exercises", "check_running_stats": "norm_exercises",
    "check_eval_norm": "norm_exercises",
    "OptimizerRace": "optimizer_race", "check_optimizer_step": "optimizer_exercises",
    "ConvScatter": "conv_scatter", "check_output_size": "conv_exercises", "check_conv2d": "conv_exercises",
    "check_conv_weight_grad": "conv_exercises", "check_max_pool_grad": "conv_exercises",
    "check_residual_block": "residual_exercises", "check_skip_gradient": "residual_exercises", "check_jacobian_bound": "residual_exercises", "check_skip": "residual_exercises", "gradient_by_depth": "depth_picture",
    "check_step_flops": "performance_exercises", "check_saved_bytes": "performance_exercises",
    "check_peak_memory": "performance_exercises", "check_segment_count": "performance_exercises",
    "check_strides": "tensor_exercises", "check_view": "tensor_exercises",
    "check_broadcast_shape": "tensor_exercises", "check_function_cases": "tensor_exercises",
    "check_centred_difference": "derivative_exercises",
    "check_topological_order": "algorithm_exercises", "check_prediction": "algorithm_exercises",
    "check_dual": "algorithm_exercises", "check_cheaper_mode": "algorithm_exercises",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'gradlab.lab' has no attribute {name!r}")
