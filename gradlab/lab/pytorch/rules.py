"""What a PyTorch backward node does, in words and in plain maths, for the inspector.

PyTorch's nodes carry no docstring of their rule (their code is generated C++ from
``derivatives.yaml``), so the lab keeps the rule of the common ones here, by node name with its
``Backward0`` cut off. A custom ``torch.autograd.Function`` speaks for itself: its docstring's first
paragraph and its ``derivative`` attribute, as a gradlab Function does.
"""

from __future__ import annotations

import inspect

from ..capture_basics import LEAF_MATH, LEAF_WORDS, short_name

# name -> (family for colouring, words, math); g is the gradient w.r.t. the node's output
RULES = {
    "Add": ("arithmetic", "a sum passes the gradient to both inputs unchanged (summed over broadcast axes)",
            "∂L/∂a = g, ∂L/∂b = α·g"),
    "Sub": ("arithmetic", "a difference passes g to the first input and −g to the second",
            "∂L/∂a = g, ∂L/∂b = −α·g"),
    "Mul": ("arithmetic", "a product sends each input the gradient times the other input",
            "∂L/∂a = g·b, ∂L/∂b = g·a"),
    "Div": ("arithmetic", "a quotient a/b sends g/b to a and −g·a/b² to b", "∂L/∂a = g/b, ∂L/∂b = −g·a/b²"),
    "Neg": ("arithmetic", "negation flips the gradient's sign", "∂L/∂x = −g"),
    "Pow": ("arithmetic", "xⁿ sends n·xⁿ⁻¹ times the gradient", "∂L/∂x = g·n·xⁿ⁻¹"),
    "Mm": ("matmul", "a matrix product A@B sends g@Bᵀ to A and Aᵀ@g to B", "∂L/∂A = g·Bᵀ, ∂L/∂B = Aᵀ·g"),
    "Bmm": ("matmul", "a batch of matrix products: A@B per batch item", "∂L/∂A = g·Bᵀ, ∂L/∂B = Aᵀ·g (per item)"),
    "Mv": ("matmul", "a matrix-vector product A@v", "∂L/∂A = g·vᵀ, ∂L/∂v = Aᵀ·g"),
    "Addmm": ("matmul", "a Linear layer's β·bias + α·x@Wᵀ in one call: the bias gets g summed over the batch, "
              "the product's two inputs get g times the other", "∂L/∂bias = β·Σ g, ∂L/∂m1 = α·g·m2ᵀ, ∂L/∂m2 = α·m1ᵀ·g"),
    "Linear": ("matmul", "y = x@Wᵀ + b: x gets g@W, W gets gᵀ@x, b gets g summed over the batch",
               "∂L/∂x = g·W, ∂L/∂W = gᵀ·x, ∂L/∂b = Σ g"),
    "Convolution": ("matmul", "a convolution: the input gets the gradient convolved with the flipped kernel "
                    "(a transposed convolution), the kernel gets the input correlated with the gradient",
                    "∂L/∂x = conv_transpose(g, W), ∂L/∂W = correlate(x, g), ∂L/∂b = Σ g"),
    "Tanh": ("elementwise", "tanh's slope is 1 − tanh², read from the saved output", "∂L/∂x = g·(1 − out²)"),
    "Sigmoid": ("elementwise", "the sigmoid's slope is out·(1 − out), read from the saved output",
                "∂L/∂x = g·out·(1 − out)"),
    "Relu": ("elementwise", "ReLU lets the gradient through where the output was positive, and stops it elsewhere",
             "∂L/∂x = g·[out > 0]"),
    "Gelu": ("elementwise", "GELU's slope Φ(x) + x·φ(x) times the gradient", "∂L/∂x = g·(Φ(x) + x·φ(x))"),
    "Silu": ("elementwise", "SiLU x·σ(x) has slope σ(x)·(1 + x·(1 − σ(x)))", "∂L/∂x = g·σ(x)·(1 + x·(1 − σ(x)))"),
    "Exp": ("elementwise", "eˣ is its own slope, read from the saved output", "∂L/∂x = g·out"),
    "Log": ("elementwise", "log x has slope 1/x", "∂L/∂x = g / x"),
    "Sqrt": ("elementwise", "√x has slope 1/(2√x)", "∂L/∂x = g / (2·out)"),
    "Rsqrt": ("elementwise", "1/√x has slope −1/(2·x^1.5)", "∂L/∂x = −g·out³/2"),
    "Abs": ("elementwise", "|x| has slope sign(x)", "∂L/∂x = g·sign(x)"),
    "Clamp": ("elementwise", "clamp passes the gradient where x was inside the bounds", "∂L/∂x = g·[lo ≤ x ≤ hi]"),
    "Softmax": ("elementwise", "softmax's Jacobian diag(s) − s·sᵀ applied to g, along the softmax axis",
                "∂L/∂x = s·(g − Σ g·s)"),
    "LogSoftmax": ("elementwise", "log-softmax sends g minus softmax times the sum of g, along its axis",
                   "∂L/∂x = g − softmax(x)·Σ g"),
    "NllLoss": ("loss", "negative log-likelihood: −g/N at each row's target class, 0 elsewhere",
                "∂L/∂logp[i, y_i] = −g / N"),
    "MseLoss": ("loss", "mean squared error sends 2·(x − y)/N times g", "∂L/∂x = 2·g·(x − y) / N"),
    "BinaryCrossEntropy": ("loss", "binary cross-entropy on probabilities p: g·(p − y)/(p·(1 − p))/N",
                           "∂L/∂p = g·(p − y) / (p·(1 − p)·N)"),
    "Sum": ("reduction", "a sum sends its gradient back to every element it added, copied (broadcast back)",
            "∂L/∂x = g (expanded to x's shape)"),
    "Mean": ("reduction", "a mean sends each element its gradient divided by the count", "∂L/∂x = g / N"),
    "Max": ("reduction", "a max sends the gradient to the element that won, 0 to the rest", "∂L/∂x = g·[x = max]"),
    "MaxPool2DWithIndices": ("reduction", "max pooling sends each window's gradient to the input that was the "
                             "window's max (the saved indices)", "∂L/∂x[argmax] += g"),
    "AvgPool2D": ("reduction", "average pooling spreads each window's gradient evenly over its inputs",
                  "∂L/∂x = g / window size (per window)"),
    "NativeLayerNorm": ("normalization", "layer norm: the gradient through the mean and the variance of each row, "
                        "then scaled by γ; γ gets Σ g·x̂, β gets Σ g",
                        "∂L/∂x = (γ/σ)·(g − mean(g) − x̂·mean(g·x̂))"),
    "NativeBatchNorm": ("normalization", "batch norm: as layer norm, over the batch for each channel",
                        "∂L/∂x = (γ/σ)·(g − mean(g) − x̂·mean(g·x̂))"),
    "NativeDropout": ("elementwise", "dropout sends the gradient through the kept units, scaled by 1/(1 − p)",
                      "∂L/∂x = g·mask / (1 − p)"),
    "Embedding": ("shape", "an embedding lookup adds each row's gradient into the row of the table it read",
                  "∂L/∂W[idx] += g"),
    "View": ("shape", "a view moves no numbers: the gradient is reshaped back", "∂L/∂x = g.view(x.shape)"),
    "Reshape": ("shape", "a reshape: the gradient is reshaped back", "∂L/∂x = g.reshape(x.shape)"),
    "UnsafeView": ("shape", "a reshape: the gradient is reshaped back", "∂L/∂x = g.reshape(x.shape)"),
    "T": ("shape", "a transpose: the gradient is transposed back", "∂L/∂x = gᵀ"),
    "Transpose": ("shape", "a transpose of two axes: the gradient swaps them back", "∂L/∂x = g.transpose(d0, d1)"),
    "Permute": ("shape", "a permutation of axes: the gradient is permuted back", "∂L/∂x = g.permute(inverse)"),
    "Expand": ("shape", "an expand copies along new axes: the gradient is summed over them", "∂L/∂x = Σ g over expanded axes"),
    "Unsqueeze": ("shape", "a new axis of size 1: the gradient loses it again", "∂L/∂x = g.squeeze(d)"),
    "Squeeze": ("shape", "an axis of size 1 removed: the gradient gets it back", "∂L/∂x = g.unsqueeze(d)"),
    "Clone": ("shape", "a copy: the gradient passes unchanged", "∂L/∂x = g"),
    "ToCopy": ("shape", "a copy to another dtype or device: the gradient is copied back", "∂L/∂x = g.to(x's dtype)"),
    "Select": ("shape", "picking one index along an axis: the gradient lands there, zeros elsewhere",
               "∂L/∂x[i] = g, 0 elsewhere"),
    "Slice": ("shape", "a slice: the gradient lands in the slice, zeros elsewhere", "∂L/∂x[slice] = g"),
    "Index": ("shape", "indexing: the gradient is added back at the indices read", "∂L/∂x[idx] += g"),
    "Cat": ("shape", "a concatenation: each input gets its own slice of the gradient", "∂L/∂x_k = g[slice k]"),
    "Stack": ("shape", "a stack: each input gets its own slice of the gradient", "∂L/∂x_k = g[k]"),
    "Split": ("shape", "a split: the pieces' gradients are joined back", "∂L/∂x = cat(g_k)"),
    "SplitWithSizes": ("shape", "a split: the pieces' gradients are joined back", "∂L/∂x = cat(g_k)"),
    "Unbind": ("shape", "unbinding an axis: the gradients are stacked back", "∂L/∂x = stack(g_k)"),
    "ScaledDotProductEfficientAttention": (
        "matmul", "fused attention softmax(QKᵀ/√d)V: its backward recomputes the softmax and sends gradients to "
        "Q, K and V", "∂L/∂V = Pᵀg, ∂L/∂P = gVᵀ, through softmax to Q and K"),
    "ScaledDotProductFlashAttentionForCpu": (
        "matmul", "fused attention softmax(QKᵀ/√d)V: its backward recomputes the softmax and sends gradients to "
        "Q, K and V", "∂L/∂V = Pᵀg, ∂L/∂P = gVᵀ, through softmax to Q and K"),
}


def rule_of_node(node) -> tuple[str, str, str]:
    """(family, words, math) of a PyTorch backward node."""
    name = node.name()
    if name == "torch::autograd::AccumulateGrad" or type(node).__name__ == "AccumulateGrad":
        return "leaf", LEAF_WORDS, LEAF_MATH
    forward_cls = getattr(node, "_forward_cls", None)
    if forward_cls is not None:  # a custom torch.autograd.Function
        return _custom_rule(forward_cls)
    short = short_name(name)
    if short in RULES:
        return RULES[short]
    return "other", f"PyTorch's backward of {short} (gradlab has no words written for this node yet)", ""


def _custom_rule(forward_cls) -> tuple[str, str, str]:
    doc = inspect.cleandoc(forward_cls.__dict__.get("__doc__") or "")
    words = doc.split("\n\n")[0].replace("\n", " ") if doc else (
        f"{forward_cls.__name__}: your custom Function (give it a docstring to say its rule here)")
    math = getattr(forward_cls, "derivative", "") or ""
    return "other", words, math
