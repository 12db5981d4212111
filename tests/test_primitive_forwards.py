"""gradlab's own Functions record nothing inside their forwards, so apply may skip switching recording off.

Function.apply trusts every Function in gradlab.ops and gradlab.nn.functional to build its forward from
backend primitives (see _forward_is_primitive). A forward that used Tensor operations instead would
record hidden nodes; this watches a wide workload, op family by op family, for any.
"""

import pytest

import gradlab as gl
from helpers import watch_trusted_forwards

F = gl.nn.functional


@pytest.fixture
def nested(monkeypatch):
    """The ops recorded while a trusted forward was running (there should be none)."""
    return watch_trusted_forwards(monkeypatch)


def leaf(*shape, positive=False):
    gl.manual_seed(sum(shape))
    x = gl.randn(*shape, dtype=gl.float64)
    return (x.abs() + 0.5 if positive else x).requires_grad_()


def spd(n):
    a = leaf(n, n)
    return a @ a.mT + gl.eye(n, dtype=gl.float64) * n


WORKLOADS = {
    "sorting and selection": lambda x, i: [
        x.sort(1).values, x.topk(2).values, x.kthvalue(2).values, x.median(1).values, x.mode(1).values,
        x.quantile(0.3, dim=1), x.nanquantile(0.5), x.cummax(1).values, x.cummin(0).values, x.msort(),
        x.masked_select(x > 0), x.take(i), x.select(0, 1), x.diag(), x.diagonal(), x.trace(), x.diag_embed(),
        x.index_add(0, gl.tensor([0, 2]), x[:2]), x.scatter_reduce(1, i.reshape(1, -1).expand(3, 4) % 4, x, "amax"),
        x.index_select(1, gl.tensor([1, 0])), x.gather(1, i.reshape(1, -1).expand(3, 4) % 4),
        x.index_fill(1, gl.tensor([0]), 1.0), x.masked_scatter(x > 0, x * 2), x.diagonal_scatter(x.diagonal())],
    "pointwise": lambda x, i: [
        x.atan2(x + 2), x.hypot(x), (x.abs() + 1).lgamma(), (x.abs() + 1).digamma(), (x.tanh() * 0.9).erfinv(),
        x.xlogy(x.abs() + 1), x.lerp(x * 2, 0.3), x.addcmul(x, x, value=2), x.logaddexp(x * 2), x.sinh(), x.asinh(),
        x.fmod(1.5), x.remainder(1.5), x.copysign(-x), x.logit(eps=1e-3), x.nan_to_num(), x.float_power(2),
        (x.abs() + 1).polygamma(1), x.frac(), x.sinc(), x.deg2rad()],
    "statistics and shape": lambda x, i: [
        x.nansum(1), gl.var_mean(x, 1)[0], x.cov(), x.corrcoef(), x.logcumsumexp(1), x.diff(dim=1),
        gl.trapezoid(x), gl.cumulative_trapezoid(x), x.unfold(1, 2, 1), x.rot90(), x.fliplr(), gl.block_diag(x, x),
        gl.hstack([x, x]), x.tensor_split(2, 1)[0], x.renorm(2, 0, 1.0), x.dist(x * 2), gl.cartesian_prod(x[0], x[1]),
        gl.vander(x[0]), x.ravel(), x.aminmax().min, gl.atleast_3d(x), x.sum_to_size(1, 4)],
    "linear algebra": lambda x, i: [
        gl.linalg.det(spd(3)), gl.linalg.slogdet(spd(3)).logabsdet, gl.linalg.inv(spd(3)),
        gl.linalg.solve(spd(3), x[:, :2]), gl.linalg.cholesky(spd(3)), gl.linalg.qr(x).R, gl.linalg.svdvals(x),
        gl.linalg.eigvalsh(spd(3)), gl.linalg.pinv(x), gl.linalg.matrix_exp(x[:, :3] * 0.1), gl.linalg.norm(x),
        gl.linalg.matrix_norm(x, "nuc"), gl.linalg.vector_norm(x, 3), gl.linalg.lstsq(spd(3), x).solution,
        gl.linalg.lu_factor(spd(3)).LU, gl.linalg.solve_triangular(spd(3).triu(), x, upper=True),
        gl.addmm(x[:, :3], x, x.mT), gl.kron(x, x), gl.tensordot(x, x, 2), gl.cdist(x, x * 2),
        gl.linalg.cross(x[:, :3], x[:, 1:]), gl.linalg.multi_dot([x, x.mT, x]), gl.linalg.matrix_power(spd(3), -2)],
    "nn functional": lambda x, i: [
        F.interpolate(x.reshape(1, 1, 3, 4), scale_factor=2, mode="bilinear"), F.pixel_shuffle(x.reshape(1, 4, 3, 1), 2),
        F.grid_sample(x.reshape(1, 1, 3, 4), F.affine_grid(gl.eye(2, 3, dtype=gl.float64)[None], (1, 1, 3, 4),
                                                           align_corners=False), align_corners=False),
        F.embedding_bag(i % 3, x, gl.tensor([0, 2])), F.instance_norm(x.reshape(1, 3, 4)),
        F.cosine_similarity(x, x * 2), F.pairwise_distance(x, x + 1), F.normalize(x), F.pad(x, (1, 1), mode="reflect"),
        F.adaptive_max_pool1d(x.reshape(1, 3, 4), 2), F.lp_pool1d(x.reshape(1, 3, 4), 2, 2),
        F.triplet_margin_loss(x, x * 2, x + 1), F.gaussian_nll_loss(x, x * 2, x.abs() + 1),
        F.poisson_nll_loss(x, x.abs()), F.multi_margin_loss(x, gl.tensor([0, 1, 3])), F.soft_margin_loss(x, x.sign()),
        F.hinge_embedding_loss(x, x.sign()), F.hardshrink(x), F.softshrink(x), F.local_response_norm(x.reshape(1, 3, 4), 2),
        F.fold(F.unfold(x.reshape(1, 1, 3, 4), 2), (3, 4), 2), F.conv3d(x.reshape(1, 1, 1, 3, 4),
                                                                      leaf(2, 1, 1, 2, 2))],
}


@pytest.mark.parametrize("family", sorted(WORKLOADS))
def test_trusted_forwards_record_nothing_inside(nested, family):
    x = leaf(3, 4)
    outs = WORKLOADS[family](x, gl.tensor([0, 5, 7, 11]))
    sum(o.sum() for o in outs).backward()
    assert x.grad is not None
    assert not nested, nested
