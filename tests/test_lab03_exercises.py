"""Lab 3's exercises, each rebuilt as the lab sets it: the right answer passes, and each plausible wrong one
(shapes lined up from the left, strides left unswapped, a gradient not summed or summed over the wrong
dimension, a copy where a view was asked) fails with the hint that names that mistake, not the answer."""

import pytest

import gradlab as gl
from gradlab import lab


# --- exercise 1: the strides of x.transpose(0, 2) -------------------------------------------------------

@pytest.fixture
def transposed():
    return gl.arange(24.0).reshape(2, 3, 4).transpose(0, 2)


def test_the_strides_of_a_transpose_pass_when_swapped(transposed):
    verdict = lab.check_strides("strides", (1, 4, 12), transposed)
    assert verdict.passed and verdict.message == "exact"


def test_strides_left_unswapped_are_the_right_numbers_in_the_wrong_order(transposed):
    verdict = lab.check_strides("strides", (12, 4, 1), transposed)
    assert not verdict and "the right numbers in the wrong order" in verdict.message
    assert "(1, 4, 12)" not in verdict.message


def test_the_strides_of_a_fresh_tensor_of_that_shape_are_named_as_contiguous(transposed):
    verdict = lab.check_strides("strides", (6, 2, 1), transposed)
    assert not verdict and "fresh, contiguous tensor" in verdict.message and "moves no data" in verdict.message


def test_strides_in_bytes_and_a_wrong_count_are_named(transposed):
    assert "counted in bytes" in lab.check_strides("strides", (4, 16, 48), transposed).message
    assert "it has 3 strides; yours has 2" in lab.check_strides("strides", (1, 4), transposed).message
    one_off = lab.check_strides("strides", (1, 4, 11), transposed)
    assert "the stride of dimension 2 is off" in one_off.message and "12" not in one_off.message
    assert "a tuple of whole numbers" in lab.check_strides("strides", "1, 4, 12", transposed).message


# --- exercise 2: evens, a view of grid ------------------------------------------------------------------

@pytest.fixture
def grid():
    return gl.arange(10.0)


EVENS = gl.tensor([0.0, 2.0, 4.0, 6.0, 8.0])


def test_a_sliced_view_passes(grid):
    assert lab.check_view("evens", grid[::2], grid, values=EVENS).passed
    assert lab.check_view("evens", grid.view(5, 2)[:, 0], grid, values=EVENS).passed  # another view, also right


def test_a_copy_with_the_right_values_fails_as_a_copy(grid):
    for copy in (grid[[0, 2, 4, 6, 8]], grid[::2].clone(), grid[::2] + 0):
        verdict = lab.check_view("evens", copy, grid, values=EVENS)
        assert not verdict and "it is a copy: it shares no memory" in verdict.message


def test_a_view_of_the_wrong_elements_gets_the_value_hint(grid):
    odd = lab.check_view("evens", grid[1::2], grid, values=EVENS)
    assert not odd and "elements are off" in odd.message
    short = lab.check_view("evens", grid[:8:2], grid, values=EVENS)
    assert "the answer has shape (5,), yours has (4,)" in short.message
    assert "expected a tensor, got a list" in lab.check_view("evens", [0, 2, 4, 6, 8], grid).message


# --- exercise 3: the shape of (2, 1, 3) + (2, 3) --------------------------------------------------------

SHAPES = ((2, 1, 3), (2, 3))


def test_the_broadcast_shape_passes_and_agrees_with_the_engine():
    assert tuple((gl.ones(*SHAPES[0]) + gl.ones(*SHAPES[1])).shape) == (2, 2, 3)
    assert lab.check_broadcast_shape("shape", (2, 2, 3), *SHAPES).passed
    assert lab.check_broadcast_shape("shape", gl.Size([2, 2, 3]), *SHAPES).passed


def test_shapes_lined_up_from_the_left_are_named():
    verdict = lab.check_broadcast_shape("shape", (2, 3, 3), *SHAPES)
    assert not verdict and "lined the shapes up from the left" in verdict.message


def test_a_kept_one_a_wrong_rank_and_an_input_shape_each_get_their_hint():
    assert "you kept a size 1" in lab.check_broadcast_shape("shape", (1, 2, 3), *SHAPES).message
    assert "as many dimensions as the longest shape, 3" in lab.check_broadcast_shape("shape", (2, 3), (2, 1, 3),
                                                                                     (3,)).message
    assert "one of the inputs' shapes" in lab.check_broadcast_shape("shape", (2, 1, 3), *SHAPES).message


def test_shapes_that_cannot_broadcast_are_the_caller_s_mistake():
    with pytest.raises(ValueError, match="do not broadcast together"):
        lab.check_broadcast_shape("shape", (4, 3), (4, 3), (4,))


# --- exercise 4: db and ds by hand ---------------------------------------------------------------------

@pytest.fixture
def layer():
    """Section 4's layer and the broadcast product of exercise 4, backward run, as the lab builds them."""
    gl.manual_seed(0)
    x = gl.randn(4, 3, dtype=gl.float64)
    W = gl.randn(3, 2, dtype=gl.float64, requires_grad=True)
    b = gl.randn(2, dtype=gl.float64, requires_grad=True)
    y = x @ W + b
    (y ** 2).mean().backward()
    s = gl.randn(4, 1, dtype=gl.float64, requires_grad=True)
    u = x * s
    (u ** 2).sum().backward()
    return {"x": x, "b": b, "s": s, "dy": 2 * y.detach() / y.numel(), "du": 2 * u.detach()}


def test_the_hand_written_broadcast_gradients_pass(layer):
    verdicts = lab.check_gradients({"db": (layer["dy"].sum(0), layer["b"]),
                                    "ds": ((layer["du"] * layer["x"]).sum(1, keepdim=True), layer["s"])})
    assert verdicts.passed


def test_a_bias_gradient_not_summed_over_the_batch_says_so(layer):
    verdict = lab.check_gradient("db", layer["dy"], layer["b"])
    assert not verdict and "broadcast over dimension 0" in verdict.message and "summed back" in verdict.message


def test_a_bias_gradient_summed_over_the_wrong_dim_names_the_shape_expected(layer):
    verdict = lab.check_gradient("db", layer["dy"].sum(1), layer["b"])
    assert not verdict and "the answer has shape (2,), yours has (4,)" in verdict.message


def test_a_scale_gradient_not_summed_summed_the_wrong_way_or_without_keepdim(layer):
    du, x, s = layer["du"], layer["x"], layer["s"]
    not_summed = lab.check_gradient("ds", du * x, s)
    assert "broadcast over dimension 1" in not_summed.message
    wrong_dim = lab.check_gradient("ds", (du * x).sum(0, keepdim=True), s)
    assert not wrong_dim and "the answer has shape (4, 1), yours has (1, 3)" in wrong_dim.message
    no_keepdim = lab.check_gradient("ds", (du * x).sum(1), s)
    assert "a dimension of size 1 more or fewer" in no_keepdim.message
    without_x = lab.check_gradient("ds", du.sum(1, keepdim=True), s)
    assert not without_x and "elements are off" in without_x.message


# --- exercise 5: unbroadcast ---------------------------------------------------------------------------

def right_unbroadcast(grad, shape):
    added = grad.ndim - len(shape)
    if added:
        grad = grad.sum(tuple(range(added)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(stretched, keepdim=True) if stretched else grad


@pytest.fixture
def cases():
    gl.manual_seed(1)
    return [(gl.randn(4, 2, dtype=gl.float64), (2,)), (gl.randn(4, 3, dtype=gl.float64), (4, 1)),
            (gl.randn(2, 3, 4, dtype=gl.float64), (3, 1)), (gl.randn(5, 3, dtype=gl.float64), (5, 3))]


def reference(grad, shape):
    return grad.sum_to_size(shape)


def test_unbroadcast_passes_on_every_case(cases):
    verdict = lab.check_function_cases("unbroadcast", right_unbroadcast, reference, cases)
    assert verdict.passed and verdict.message.endswith("on all 4 cases")


def test_summing_only_the_added_dims_fails_on_the_stretched_case_by_name(cases):
    def only_leading(grad, shape):
        return grad.sum(tuple(range(grad.ndim - len(shape)))) if grad.ndim > len(shape) else grad
    verdict = lab.check_function_cases("unbroadcast", only_leading, reference, cases)
    assert not verdict and verdict.message.startswith("case 2 of 4, called with a tensor of shape (4, 3) and (4, 1):")
    assert "broadcast over dimension 1" in verdict.message


def test_always_summing_dim_0_and_forgetting_keepdim_are_caught(cases):
    dim0 = lab.check_function_cases("unbroadcast", lambda g, shape: g.sum(0), reference, cases)
    assert not dim0 and dim0.message.startswith("case 2 of 4")
    def no_keepdim(grad, shape):
        added = grad.ndim - len(shape)
        grad = grad.sum(tuple(range(added))) if added else grad
        stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
        return grad.sum(stretched) if stretched else grad
    verdict = lab.check_function_cases("unbroadcast", no_keepdim, reference, cases)
    assert not verdict and "a dimension of size 1 more or fewer" in verdict.message


def test_unsolved_exercises_are_not_done_yet(cases, transposed, grid):
    for verdict in (lab.check_strides("s", ..., transposed), lab.check_view("v", ..., grid),
                    lab.check_broadcast_shape("b", ..., *SHAPES),
                    lab.check_function_cases("u", ..., reference, cases),
                    lab.check_function_cases("u", lambda g, shape: ..., reference, cases)):
        assert verdict.status == "not done" and "not done yet" in repr(verdict)
