"""Lab 10's exercises (labs/10-deeper-networks-and-skip-connections.ipynb): each one's setup rebuilt as the lab
builds it; the right answer passes its check, and each plausible wrong answer fails with the hint that points at
its mistake. The truths here are written independently of the checkers (numpy, by hand)."""

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab import lab


def block_with(forward):
    """A ResidualBlock of the lab's shape (branch self.f = Linear, ReLU, Linear) whose forward is ``forward``."""
    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.f = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))

        def forward(self, x):
            return forward(self, x)
    return Block


# --- exercise 1: ResidualBlock.forward -----------------------------------------------------------------------------

def test_exercise_1_x_plus_f_of_x_passes():
    assert lab.check_residual_block("ResidualBlock", block_with(lambda self, x: x + self.f(x))).passed
    assert lab.check_residual_block("ResidualBlock", block_with(lambda self, x: self.f(x) + x)).passed


def test_exercise_1_unsolved_says_not_done():
    assert lab.check_residual_block("ResidualBlock", block_with(lambda self, x: ...)).status == "not done"


def test_exercise_1_the_forgotten_identity_term_is_named():
    verdict = lab.check_residual_block("ResidualBlock", block_with(lambda self, x: self.f(x)))
    assert not verdict and "the identity term is missing" in verdict.message
    assert "x + self.f" not in verdict.message  # the hint does not write the answer


def test_exercise_1_an_activation_after_the_sum_is_named():
    verdict = lab.check_residual_block("ResidualBlock", block_with(lambda self, x: gl.relu(x + self.f(x))))
    assert not verdict and "an activation after the sum clips the skip path" in verdict.message


def test_exercise_1_an_activation_on_the_branch_before_the_sum_is_named():
    verdict = lab.check_residual_block("ResidualBlock", block_with(lambda self, x: x + gl.relu(self.f(x))))
    assert not verdict and "an activation on F(x) before the sum" in verdict.message


def test_exercise_1_other_slips_fail_with_the_size_of_the_difference_or_the_shape():
    skip_only = lab.check_residual_block("ResidualBlock", block_with(lambda self, x: x))
    assert not skip_only and "the branch F is never used" in skip_only.message
    first_layer = lab.check_residual_block("ResidualBlock", block_with(lambda self, x: x + self.f[0](x)))
    assert not first_layer and "differs from the block's by up to" in first_layer.message
    summed = lab.check_residual_block("ResidualBlock", block_with(lambda self, x: (x + self.f(x)).sum(1)))
    assert not summed and "returned shape (5,)" in summed.message and "has its input's shape" in summed.message


def test_exercise_1_bad_input_is_named():
    with pytest.raises(TypeError, match="the class itself"):
        lab.check_residual_block("ResidualBlock", block_with(lambda self, x: x)(8))

    class NoBranch(nn.Module):
        def __init__(self, width):
            super().__init__()

        def forward(self, x):
            return x
    with pytest.raises(AttributeError, match="has no branch self.f"):
        lab.check_residual_block("ResidualBlock", NoBranch)


# --- exercise 2: ∂L/∂x through y = x + F(x) ------------------------------------------------------------------------

@pytest.fixture
def branch():
    gl.manual_seed(4)
    A = gl.randn(4, 4)
    x = gl.randn(4)
    g = gl.tensor([1.0, -2.0, 0.5, 1.0])
    a, xv, gv = A.numpy().astype(np.float64), x.numpy().astype(np.float64), g.numpy().astype(np.float64)
    slope = 1 - np.tanh(a @ xv) ** 2  # tanh's slope at A x; the Jacobian of F is diag(slope) A
    return (lambda v: gl.tanh(A @ v)), x, g, a, slope, gv


def test_exercise_2_the_sum_of_both_paths_passes(branch):
    F, x, g, a, slope, gv = branch
    assert lab.check_skip_gradient("dx", gv + a.T @ (slope * gv), F, x, g).passed
    assert lab.check_skip_gradient("dx", ..., F, x, g).status == "not done"


def test_exercise_2_the_forgotten_identity_term_is_named(branch):
    F, x, g, a, slope, gv = branch
    verdict = lab.check_skip_gradient("dx", a.T @ (slope * gv), F, x, g)
    assert not verdict and "the identity term is missing" in verdict.message


def test_exercise_2_the_skip_alone_and_the_untransposed_jacobian_are_named(branch):
    F, x, g, a, slope, gv = branch
    skip_only = lab.check_skip_gradient("dx", gv, F, x, g)
    assert not skip_only and "the skip path's term only" in skip_only.message
    untransposed = lab.check_skip_gradient("dx", gv + slope * (a @ gv), F, x, g)
    assert not untransposed and "not its transpose" in untransposed.message


def test_exercise_2_a_wrong_shape_gets_the_shape_hint(branch):
    F, x, g, a, slope, gv = branch
    verdict = lab.check_skip_gradient("dx", np.zeros(3), F, x, g)
    assert not verdict and "(4,)" in verdict.message


# --- exercise 3: the product-of-Jacobians bound --------------------------------------------------------------------

@pytest.fixture
def stack():
    rng = np.random.default_rng(1)
    jacobians = [rng.uniform(-0.2, 0.2, (6, 6)) for _ in range(5)]
    top = rng.standard_normal(6)
    spectral = [np.linalg.svd(j, compute_uv=False)[0] for j in jacobians]  # the largest singular value
    return jacobians, top, np.sqrt((top ** 2).sum()), spectral


def test_exercise_3_the_product_of_spectral_norms_passes_and_bounds_the_real_gradient(stack):
    jacobians, top, top_norm, spectral = stack
    bound = top_norm * np.prod(spectral)
    assert lab.check_jacobian_bound("bound", bound, jacobians, top).passed
    true_gradient = top
    for j in reversed(jacobians):  # ∂L/∂h0 = ∂L/∂hL · J_L ⋯ J_1, row vector on the left
        true_gradient = true_gradient @ j
    assert np.linalg.norm(true_gradient) <= bound
    assert lab.check_jacobian_bound("bound", ..., jacobians, top).status == "not done"


def test_exercise_3_added_norms_and_frobenius_norms_are_named(stack):
    jacobians, top, top_norm, spectral = stack
    added = lab.check_jacobian_bound("bound", top_norm * sum(spectral), jacobians, top)
    assert not added and "you added the norms" in added.message
    frobenius = lab.check_jacobian_bound("bound", top_norm * np.prod([np.sqrt((j ** 2).sum()) for j in jacobians]),
                                         jacobians, top)
    assert not frobenius and "Frobenius norms" in frobenius.message and "largest singular value" in frobenius.message


def test_exercise_3_the_missing_top_gradient_and_other_slips(stack):
    jacobians, top, top_norm, spectral = stack
    no_top = lab.check_jacobian_bound("bound", np.prod(spectral), jacobians, top)
    assert not no_top and "the gradient that arrives at the top" in no_top.message
    four = lab.check_jacobian_bound("bound", top_norm * np.prod(spectral[:4]), jacobians, top)
    assert not four and "times the right one" in four.message
    vector = lab.check_jacobian_bound("bound", np.ones(3), jacobians, top)
    assert not vector and "expected one number" in vector.message
    with pytest.raises(ValueError, match="a list of 2-D Jacobians"):
        lab.check_jacobian_bound("bound", 1.0, [np.ones(3)], top)


# --- exercise 4: the skip when the widths differ -------------------------------------------------------------------

def right_skip(width_in, width_out):
    return nn.Identity() if width_in == width_out else nn.Linear(width_in, width_out, bias=False)


def test_exercise_4_identity_or_projection_passes():
    assert lab.check_skip("make_skip", right_skip).passed
    with_bias = lab.check_skip("make_skip", lambda i, o: nn.Identity() if i == o else nn.Linear(i, o))
    assert with_bias.passed
    assert lab.check_skip("make_skip", lambda i, o: ...).status == "not done"


def test_exercise_4_the_identity_everywhere_fails_on_the_shapes():
    verdict = lab.check_skip("make_skip", lambda i, o: nn.Identity())
    assert not verdict and "make_skip(8, 16) maps x of shape (4, 8) to (4, 8)" in verdict.message
    assert "F(x) has shape (4, 16): the two cannot be added" in verdict.message


def test_exercise_4_a_projection_everywhere_loses_the_identity():
    verdict = lab.check_skip("make_skip", lambda i, o: nn.Linear(i, o, bias=False))
    assert not verdict and "the widths match, so the skip needs no weights" in verdict.message


def test_exercise_4_the_projection_the_wrong_way_round_gets_a_shape_hint():
    verdict = lab.check_skip("make_skip", lambda i, o: nn.Identity() if i == o else nn.Linear(o, i))
    assert not verdict and "make_skip(8, 16)'s module, called on x of shape (4, 8), raised" in verdict.message
    assert "width_in numbers a row" in verdict.message
    assert lab.check_skip("make_skip", lambda i, o: "identity").message.startswith(
        "make_skip(8, 8) returned a str")


# --- the picture: the gradient at each block's input, against depth -----------------------------------------------

def test_gradient_by_depth_draws_one_line_per_network_over_the_blocks():
    picture = lab.gradient_by_depth({"plain": [1e-8, 1e-5, 1e-2], "residual": [0.3, 0.3, 0.3]})
    assert picture.count('class="gl-act-line"') == 2 and 'class="gl-act gl-act-depth"' in picture
    assert ">block 0<" in picture and ">block 2<" in picture and "plain: 0.01 at block 2" in picture
    assert ">1e-8<" in picture and ">1e0<" in picture  # the log axis spans the decades of both lines
    assert 'class="gl-bg"' in picture  # the white plate the theme repaints


def test_gradient_by_depth_names_bad_input():
    with pytest.raises(TypeError, match="a dict of network name -> list of norms"):
        lab.gradient_by_depth([1e-3, 1e-2])
    with pytest.raises(ValueError, match="'plain' needs positive finite norms"):
        lab.gradient_by_depth({"plain": [0.0, 1e-2]})
