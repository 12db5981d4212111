"""gradlab.data: datasets, samplers, DataLoader and collate (PyTorch's semantics), the toy sets, digits, IDX files."""

import gzip
import itertools
import re
import struct
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
from gradlab.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, DistributedSampler,
                          IterableDataset, RandomSampler, Sampler, SequentialSampler, StackDataset, Subset,
                          SubsetRandomSampler, TensorDataset,
                          WeightedRandomSampler, default_collate, default_convert, load_digits, load_mnist,
                          make_synthetic, random_split, read_idx, train_test_split)


def as_numpy(value):
    """A batch (tensors inside lists/dicts, from gradlab or torch) as the same structure of numpy arrays."""
    if isinstance(value, gl.Tensor):
        return value.numpy()
    if torch is not None and isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return type(value)((k, as_numpy(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        items = [as_numpy(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def assert_same_batch(ours, expected):
    assert type(ours) is type(expected), (ours, expected)
    if isinstance(expected, np.ndarray):
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        np.testing.assert_array_equal(ours, expected)
    elif isinstance(expected, dict):
        assert list(ours) == list(expected)
        for key in expected:
            assert_same_batch(ours[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            assert_same_batch(a, b)
    else:
        assert ours == expected


def toy(n=10):
    return TensorDataset(gl.arange(2 * n).float().reshape(n, 2), gl.arange(n))


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"x": np.array([i, i * i], dtype=np.float32), "label": i % 3, "name": f"s{i}"}

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# --- datasets ------------------------------------------------------------------------------------


def test_tensor_dataset_indexes_every_tensor_together():
    ds = toy(5)
    x, y = ds[3]
    assert len(ds) == 5 and x.tolist() == [6.0, 7.0] and y.item() == 3
    assert [t.tolist() for t in ds[[0, 4]]] == [[[0.0, 1.0], [8.0, 9.0]], [0, 4]]


def test_tensor_dataset_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match=r"Size mismatch between tensors.*\[3, 4\]"):
        TensorDataset(gl.zeros(3, 2), gl.zeros(4))


def test_subset_and_its_getitems():
    sub = Subset(toy(6), [5, 1, 3])
    assert len(sub) == 3 and sub[0][1].item() == 5 and sub[-1][1].item() == 3
    assert [sample[1].item() for sample in sub.__getitems__([2, 0])] == [3, 5]
    assert sub[[0, 1]][1].tolist() == [5, 1]


def test_concat_dataset_indexes_across_parts_and_from_the_end():
    ds = ConcatDataset([Squares(3), Squares(2)])
    assert len(ds) == 5 and ds.cumulative_sizes == [3, 5]
    assert ds[3]["name"] == "s0" and ds[2]["name"] == "s2" and ds[-1]["name"] == "s1"
    assert (Squares(2) + Squares(4))[5]["name"] == "s3"
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-6]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ds[5]
    with pytest.raises(ValueError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])


def test_chain_dataset_streams_one_after_another():
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5


@requires_torch
def test_stack_dataset_reads_datasets_side_by_side_as_torch():
    images, labels = Squares(4), [10, 11, 12, 13]
    ours, theirs = StackDataset(images, labels), torch.utils.data.StackDataset(images, labels)
    assert len(ours) == len(theirs) == 4 and ours[2][0]["name"] == "s2" and ours[2][1] == 12
    assert [s[1] for s in ours.__getitems__([3, 1])] == [s[1] for s in theirs.__getitems__([3, 1])] == [13, 11]
    named = StackDataset(image=images, label=labels)
    assert named[1]["label"] == 11 and [s["label"] for s in named.__getitems__([0, 3])] == [10, 13]
    assert type(ours.__getitems__([0])[0]) is type(theirs.__getitems__([0])[0]) is tuple
    batch = next(iter(DataLoader(named, batch_size=2)))
    assert batch["label"].tolist() == [10, 11] and batch["image"]["name"] == ["s0", "s1"]


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match=r"Size mismatch between datasets: StackDataset needs one length, "
                                         r"got \[4, 3\]"):
        StackDataset(Squares(4), Squares(3))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(Squares(2), b=Squares(2))


def test_datasets_and_samplers_are_generic_as_in_pytorch():
    class Pairs(Dataset[tuple]):
        def __getitem__(self, i):
            return (i, -i)

        def __len__(self):
            return 3

    class Evens(Sampler[int]):
        def __iter__(self):
            return iter([0, 2])

    assert [b[1].tolist() for b in DataLoader(Pairs(), batch_size=2, sampler=Evens())] == [[0, -2]]
    assert IterableDataset[int] is not None and isinstance(Pairs(), Dataset)


def test_abstract_dataset_says_what_to_define():
    with pytest.raises(NotImplementedError, match="must define __getitem__"):
        Dataset()[0]


@pytest.mark.parametrize("n, lengths, expected", [(10, [0.5, 0.5], [5, 5]), (10, [0.3, 0.3, 0.4], [3, 3, 4]),
                                                  (11, [0.5, 0.5], [6, 5]), (7, [0.1, 0.2, 0.7], [1, 2, 4]),
                                                  (9, [4, 5], [4, 5])])
def test_random_split_lengths_and_fractions(n, lengths, expected):
    parts = random_split(range(n), lengths, generator=gl.Generator().manual_seed(0))
    assert [len(p) for p in parts] == expected
    assert sorted(i for p in parts for i in p.indices) == list(range(n))


@requires_torch
@pytest.mark.parametrize("n, fractions", [(10, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]),
                                          (100, [0.33, 0.33, 0.34]), (5, [1 / 3, 1 / 3, 1 / 3])])
def test_random_split_fractions_match_torch(n, fractions):
    ours = random_split(range(n), fractions, generator=gl.Generator().manual_seed(0))
    theirs = torch.utils.data.random_split(range(n), fractions, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in ours] == [len(p) for p in theirs]


def test_random_split_is_reproducible_with_a_seed():
    split = lambda seed: [p.indices for p in random_split(range(20), [0.5, 0.5], gl.Generator().manual_seed(seed))]
    assert split(3) == split(3) and split(3) != split(4)


def test_random_split_errors():
    with pytest.raises(ValueError, match="does not equal the length of the input dataset"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, -0.5, 1.0])


# --- samplers ------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("n, batch_size, drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False),
                                                      (2, 5, True), (0, 2, False)])
def test_sequential_and_batch_samplers_match_torch(n, batch_size, drop_last):
    ours = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


@requires_torch
@pytest.mark.parametrize("kwargs", [{"batch_size": 0, "drop_last": False}, {"batch_size": True, "drop_last": False},
                                    {"batch_size": 2, "drop_last": 1}])
def test_batch_sampler_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.BatchSampler(range(3), **kwargs)
    with pytest.raises(ValueError, match=f"^{theirs.value}$"):
        BatchSampler(range(3), **kwargs)


def test_a_sampler_of_your_own_orders_the_loader():
    class Backwards(Sampler):
        def __init__(self, data_source):
            self.data_source = data_source

        def __iter__(self):
            return iter(range(len(self.data_source) - 1, -1, -1))

        def __len__(self):
            return len(self.data_source)

    loader = DataLoader(toy(5), batch_size=2, sampler=Backwards(range(5)))
    assert [b[1].tolist() for b in loader] == [[4, 3], [2, 1], [0]] and len(loader) == 3
    with pytest.raises(NotImplementedError, match="must define __iter__"):
        iter(Sampler())


def test_random_sampler_is_a_permutation_per_epoch_and_seeded():
    g = gl.Generator().manual_seed(0)
    sampler = RandomSampler(range(10), generator=g)
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(10)) and first != second and len(sampler) == 10
    assert list(RandomSampler(range(10), generator=gl.Generator().manual_seed(0))) == first


def test_random_sampler_without_generator_follows_manual_seed():
    gl.manual_seed(7)
    a = list(RandomSampler(range(20)))
    gl.manual_seed(7)
    assert list(RandomSampler(range(20))) == a


def test_random_sampler_num_samples_without_replacement_repeats_whole_permutations():
    # PyTorch's rule: num_samples // n full permutations, then the start of one more
    order = list(RandomSampler(range(4), num_samples=10, generator=gl.Generator().manual_seed(1)))
    assert len(order) == 10 and sorted(order[:4]) == sorted(order[4:8]) == [0, 1, 2, 3]
    assert len(set(order[8:])) == 2


def test_random_sampler_with_replacement():
    order = list(RandomSampler(range(3), replacement=True, num_samples=300, generator=gl.Generator().manual_seed(0)))
    assert len(order) == 300 and set(order) == {0, 1, 2}


def test_random_sampler_with_replacement_draws_lazily():
    # an eager draw of 10**10 int64 indices would need 80 GB; the sampler holds a few at a time
    sampler = RandomSampler(range(7), replacement=True, num_samples=10**10, generator=gl.Generator().manual_seed(0))
    first = list(itertools.islice(sampler, 70))
    assert len(sampler) == 10**10 and len(first) == 70 and set(first) <= set(range(7)) and len(set(first)) > 1
    again = RandomSampler(range(7), replacement=True, num_samples=10**10, generator=gl.Generator().manual_seed(0))
    assert list(itertools.islice(again, 70)) == first
    loader = DataLoader(toy(7), batch_size=4, sampler=sampler)
    assert len(loader) == 10**10 // 4 and next(iter(loader))[1].shape == (4,)
    short = list(RandomSampler(range(7), replacement=True, num_samples=33, generator=gl.Generator().manual_seed(0)))
    assert len(short) == 33 and set(short) <= set(range(7))


@requires_torch
@pytest.mark.parametrize("kwargs, error", [({"replacement": 1}, TypeError), ({"num_samples": 0}, ValueError),
                                           ({"num_samples": 2.5}, ValueError)])
def test_random_sampler_errors_match_torch(kwargs, error):
    with pytest.raises(error) as theirs:
        torch.utils.data.RandomSampler(range(3), **kwargs)
    with pytest.raises(error, match=f"^{theirs.value}$"):
        RandomSampler(range(3), **kwargs)


def test_subset_random_sampler_permutes_the_given_indices():
    order = list(SubsetRandomSampler([10, 20, 30, 40], generator=gl.Generator().manual_seed(0)))
    assert sorted(order) == [10, 20, 30, 40]


def test_weighted_random_sampler_follows_the_weights():
    weights = [1.0, 0.0, 3.0, 4.0]
    draws = np.array(list(WeightedRandomSampler(weights, 20000, generator=gl.Generator().manual_seed(0))))
    counts = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(counts, np.array(weights) / 8, atol=0.015)
    unique = list(WeightedRandomSampler(weights, 3, replacement=False, generator=gl.Generator().manual_seed(0)))
    assert sorted(unique) == [0, 2, 3]


def test_weighted_random_sampler_without_replacement_prefers_heavy_weights():
    def first_draw(seed):
        sampler = WeightedRandomSampler([1.0, 9.0], 1, replacement=False, generator=gl.Generator().manual_seed(seed))
        return next(iter(sampler))

    firsts = [first_draw(seed) for seed in range(400)]
    assert 0.85 < np.mean(firsts) < 0.95


@requires_torch
@pytest.mark.parametrize("args", [([[1.0, 2.0]], 2), ([1.0, 2.0], 0), ([1.0], 2, 1)])
def test_weighted_random_sampler_argument_errors_match_torch(args):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.WeightedRandomSampler(*args)
    with pytest.raises(ValueError, match=f"^{theirs.value}$".replace("(", r"\(").replace(")", r"\)")):
        WeightedRandomSampler(*args)


def test_weighted_random_sampler_distribution_errors():
    with pytest.raises(ValueError, match="cannot draw num_samples=3 without replacement from 2 indices"):
        WeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False)
    with pytest.raises(ValueError, match="sum of probabilities <= 0"):
        WeightedRandomSampler([0.0, 0.0], 1)
    with pytest.raises(ValueError, match=">= 0"):
        WeightedRandomSampler([1.0, -1.0], 1)


@requires_torch
@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False),
                                                    (11, 4, True)])
def test_distributed_sampler_shares_match_torch(n, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False,
                                                     drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_shuffles_the_same_on_every_replica_and_reshuffles_per_epoch():
    shares = [DistributedSampler(range(10), num_replicas=2, rank=rank, seed=3) for rank in (0, 1)]
    first = [list(share) for share in shares]
    assert sorted(first[0] + first[1]) == list(range(10))
    for share in shares:
        share.set_epoch(1)
    second = [list(share) for share in shares]
    assert sorted(second[0] + second[1]) == list(range(10)) and second != first


def test_distributed_sampler_needs_replicas_and_rank_in_one_process():
    with pytest.raises(RuntimeError, match="gradlab trains in one process and has no process group to read "
                                           "num_replicas and rank from; pass them yourself"):
        DistributedSampler(range(4))
    with pytest.raises(RuntimeError, match="to read rank from"):
        DistributedSampler(range(4), num_replicas=2)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


# --- collate -------------------------------------------------------------------------------------

Point = namedtuple("Point", "x y")


@requires_torch
@pytest.mark.parametrize("make", [
    lambda T: [(T([1.0, 2.0]), 0), (T([3.0, 4.0]), 1)],
    lambda T: [{"a": T([1, 2]), "b": {"c": 1.5, "d": "x"}}, {"a": T([3, 4]), "b": {"c": 2.5, "d": "y"}}],
    lambda T: [[np.zeros((2, 2), np.float32), True], [np.ones((2, 2), np.float32), False]],
    lambda T: [np.float32(1.5), np.float32(2.5)],
    lambda T: [np.array(3), np.array(4)],
    lambda T: [Point(1, 2.0), Point(3, 4.0)],
    lambda T: [OrderedDict(z=1, a=2), OrderedDict(z=3, a=4)],
    lambda T: [3, 4, 5],
    lambda T: ["a", "b"],
])
def test_default_collate_matches_torch(make):
    ours = default_collate(make(gl.tensor))
    theirs = torch.utils.data.default_collate(make(torch.tensor))
    assert_same_batch(as_numpy(ours), as_numpy(theirs))


def test_default_collate_stacks_and_transposes():
    batch = default_collate([(gl.tensor([1.0, 2.0]), 0, "a"), (gl.tensor([3.0, 4.0]), 1, "b")])
    assert isinstance(batch, list) and batch[0].shape == (2, 2) and batch[1].dtype is gl.int64
    assert batch[2] == ["a", "b"]
    assert default_collate([1.0, 2.0]).dtype is gl.float64
    assert default_collate([True, False]).dtype is gl.bool


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists; found"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([gl.zeros(2), gl.zeros(3)])


@requires_torch
def test_default_convert_matches_torch():
    sample = {"x": np.arange(3), "y": (np.float32(2), 4), "z": "s"}
    assert_same_batch(as_numpy(default_convert(sample)), as_numpy(torch.utils.data.default_convert(sample)))


# --- DataLoader ----------------------------------------------------------------------------------


def test_loader_batches_in_order():
    batches = list(DataLoader(toy(5), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[0][0].tolist() == [[0.0, 1.0], [2.0, 3.0]] and batches[0][0].dtype is gl.float32


@requires_torch
@pytest.mark.parametrize("n, batch_size, drop_last", [(10, 3, False), (10, 3, True), (10, 5, True), (3, 4, True),
                                                      (3, 4, False), (7, 1, False)])
def test_loader_batches_and_len_match_torch(n, batch_size, drop_last):
    X = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    ours = DataLoader(TensorDataset(gl.tensor(X), gl.arange(n)), batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(X), torch.arange(n)),
                                         batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got, expected = [as_numpy(b) for b in ours], [as_numpy(b) for b in theirs]
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert_same_batch(a, b)


def test_loader_shuffle_is_reproducible_with_a_seeded_generator():
    def epochs(seed):
        loader = DataLoader(toy(10), batch_size=4, shuffle=True, generator=gl.Generator().manual_seed(seed))
        return [[b[1].tolist() for b in loader] for _ in range(2)]

    first, second = epochs(0)
    assert first == epochs(0)[0] and first != second
    assert sorted(i for batch in first for i in batch) == list(range(10)) and [len(b) for b in first] == [4, 4, 2]
    assert epochs(1)[0] != first


def test_loader_shuffle_keeps_inputs_and_labels_together():
    for x, y in DataLoader(toy(9), batch_size=4, shuffle=True):
        np.testing.assert_array_equal(x.numpy(), np.stack([2 * y.numpy(), 2 * y.numpy() + 1], 1))


def test_loader_fast_tensor_path_equals_collating_samples():
    ds = Subset(toy(12), [11, 3, 5, 0, 7])
    fast = list(DataLoader(ds, batch_size=2))
    slow = list(DataLoader(ds, batch_size=2, collate_fn=lambda batch: default_collate(batch)))
    for a, b in zip(fast, slow):
        assert_same_batch(as_numpy(a), as_numpy(b))
    assert [b[1].tolist() for b in fast] == [[11, 3], [5, 0], [7]]


def test_loader_on_a_custom_dataset_collates_dicts():
    batch = next(iter(DataLoader(Squares(5), batch_size=3)))
    assert batch["x"].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]] and batch["x"].dtype is gl.float32
    assert batch["label"].tolist() == [0, 1, 2] and batch["name"] == ["s0", "s1", "s2"]


def test_loader_without_batching_yields_converted_samples():
    loader = DataLoader(Squares(3), batch_size=None)
    samples = list(loader)
    assert len(loader) == 3 and isinstance(samples[2]["x"], gl.Tensor) and samples[2]["x"].tolist() == [2.0, 4.0]
    assert samples[2]["label"] == 2


def test_loader_with_samplers_and_custom_collate():
    loader = DataLoader(toy(6), sampler=[5, 4, 3], batch_size=2)
    assert [b[1].tolist() for b in loader] == [[5, 4], [3]]
    loader = DataLoader(toy(6), batch_sampler=[[0, 2], [1]], collate_fn=lambda samples: [s[1].item() for s in samples])
    assert list(loader) == [[0, 2], [1]] and len(loader) == 2


def test_loader_over_an_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    assert len(DataLoader(Stream(5), batch_size=2)) == 3
    assert len(DataLoader(Stream(5), batch_size=2, drop_last=True)) == 2
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]


@requires_torch
@pytest.mark.parametrize("kwargs", [
    {"batch_size": 0}, {"batch_size": -3}, {"shuffle": True, "sampler": [0, 1]},
    {"batch_sampler": [[0]], "batch_size": 2}, {"batch_sampler": [[0]], "drop_last": True},
    {"batch_size": None, "drop_last": True}, {"num_workers": -1}, {"timeout": -1},
])
def test_loader_argument_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(4)), **kwargs)
    with pytest.raises(ValueError, match=f"^{theirs.value}$"):
        DataLoader(TensorDataset(gl.zeros(4)), **kwargs)


def test_loader_batch_size_zero_message():
    with pytest.raises(ValueError, match="^batch_size should be a positive integer value, but got batch_size=0$"):
        DataLoader(toy(3), batch_size=0)


@requires_torch
@pytest.mark.parametrize("kwargs", [{"prefetch_factor": 2}, {"persistent_workers": True},
                                    {"multiprocessing_context": "spawn"}, {"num_workers": 1, "prefetch_factor": -1},
                                    {"num_workers": 1, "multiprocessing_context": "no-such-method"}])
def test_loader_worker_option_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(4)), **kwargs)
    with pytest.raises(ValueError, match=f"^{re.escape(str(theirs.value))}$"):
        DataLoader(TensorDataset(gl.zeros(4)), **kwargs)


def test_loader_worker_option_errors():
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context object"):
        DataLoader(toy(3), num_workers=1, multiprocessing_context=3)
    with pytest.raises(ValueError, match="timeout option bounds the wait for a worker's batch, so it needs "
                                         "num_workers > 0"):
        DataLoader(toy(3), timeout=5)
    with pytest.raises(ValueError, match="prefetch_factor=0 would give the workers no batch to read"):
        DataLoader(toy(3), num_workers=2, prefetch_factor=0)
    assert DataLoader(toy(3), num_workers=2).prefetch_factor == 2 and gl.data.get_worker_info() is None


def test_loader_iterable_dataset_refuses_shuffle_and_samplers():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])


def test_loader_settings_are_frozen_after_init():
    loader = DataLoader(toy(3))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 4
    loader.collate_fn = default_collate  # not frozen in PyTorch either


def test_utils_data_alias_is_the_same_module_contents():
    from gradlab.utils.data import DataLoader as AliasLoader, TensorDataset as AliasDataset

    assert AliasLoader is DataLoader and AliasDataset is TensorDataset and gl.utils.data.random_split is random_split


def test_utils_data_has_pytorchs_submodules():
    from gradlab.utils.data.dataloader import DataLoader as Loader, default_collate as collate, get_worker_info as info
    from gradlab.utils.data.dataset import StackDataset as Stack, random_split as split
    from gradlab.utils.data.distributed import DistributedSampler as Distributed
    from gradlab.utils.data.sampler import RandomSampler as Random, WeightedRandomSampler as Weighted

    assert (Loader, collate, info, Stack, split) == (DataLoader, default_collate, gl.data.get_worker_info,
                                                     StackDataset, random_split)
    assert (Distributed, Random, Weighted) == (DistributedSampler, RandomSampler, WeightedRandomSampler)


def imported_modules(path, package):
    """The absolute names a module file imports (relative imports resolved, ``from x import y`` as x and x.y)."""
    import ast

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)


def test_utils_never_imports_the_datasets_package():
    # gradlab.data (datasets to learn on) builds on gradlab.utils.data, never the reverse: no cycle
    import pathlib

    top = pathlib.Path(gl.__file__).parent
    for path in (top / "utils").rglob("*.py"):
        parts = path.relative_to(top.parent).with_suffix("").parts
        package = ".".join(parts[:-1])  # the package a relative import starts from
        for name in imported_modules(path, package):
            assert name != "gradlab.data" and not name.startswith("gradlab.data."), (path, name)
    assert "gradlab.utils.data" in set(imported_modules(top / "data" / "__init__.py", "gradlab.data"))


# --- synthetic 2-D sets --------------------------------------------------------------------------

RULES = {  # the label each clean point must have, computed from its coordinates
    "simple": lambda x, y: x + y > 0,
    "diag": lambda x, y: y > x,
    "split": lambda x, y: np.abs(x) < 0.5,
    "xor": lambda x, y: x * y > 0,
    "circle": lambda x, y: np.hypot(x, y) < 0.6,
}


@pytest.mark.parametrize("name", ["simple", "diag", "split", "xor", "circle", "spiral"])
def test_synthetic_shapes_dtypes_balance_and_determinism(name):
    X, y = make_synthetic(name, 301, seed=3)
    assert X.shape == (301, 2) and X.dtype is gl.float32 and y.shape == (301,) and y.dtype is gl.int64
    assert set(y.tolist()) == {0, 1} and y.sum().item() == 150
    X2, y2 = make_synthetic(name, 301, seed=3)
    np.testing.assert_array_equal(X.numpy(), X2.numpy())
    np.testing.assert_array_equal(y.numpy(), y2.numpy())
    assert not np.array_equal(X.numpy(), make_synthetic(name, 301, seed=4)[0].numpy())
    assert np.abs(X.numpy()).max() < 1.5


@pytest.mark.parametrize("name", sorted(RULES))
def test_synthetic_labels_follow_the_documented_rule(name):
    X, y = make_synthetic(name, 400, seed=0)
    x1, x2 = X.numpy().T
    np.testing.assert_array_equal(RULES[name](x1, x2).astype(np.int64), y.numpy())


def test_spiral_points_lie_on_their_arm():
    X, y = make_synthetic("spiral", 400, seed=0)
    points, labels = X.numpy().astype(np.float64), y.numpy()
    r = np.hypot(points[:, 0], points[:, 1])
    turn = 1.75 * 2 * np.pi * r + np.where(labels == 1, 0.0, np.pi)
    np.testing.assert_allclose(points, r[:, None] * np.stack([np.sin(turn), np.cos(turn)], 1), atol=1e-5)
    assert r.max() > 0.95


def test_synthetic_noise_moves_points_but_keeps_labels():
    clean_X, clean_y = make_synthetic("xor", 200, seed=1)
    noisy_X, noisy_y = make_synthetic("xor", 200, seed=1, noise=0.1)
    np.testing.assert_array_equal(clean_y.numpy(), noisy_y.numpy())
    shift = noisy_X.numpy() - clean_X.numpy()
    assert 0.07 < shift.std() < 0.13


def test_synthetic_errors():
    with pytest.raises(ValueError, match="unknown set 'moons'; choose one of 'simple', 'diag'"):
        make_synthetic("moons", 10)
    with pytest.raises(ValueError, match="positive integer"):
        make_synthetic("xor", 0)
    with pytest.raises(ValueError, match="noise"):
        make_synthetic("xor", 10, noise=-1)


# --- digits --------------------------------------------------------------------------------------


def test_load_digits_count_shape_and_range():
    datasets = pytest.importorskip("sklearn.datasets", reason="scikit-learn is not installed")
    images, labels = load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype is gl.float32
    assert labels.shape == (1797,) and labels.dtype is gl.int64
    assert images.min().item() == 0.0 and images.max().item() == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))
    reference = datasets.load_digits()
    np.testing.assert_allclose(images.numpy()[:, 0], reference.images / 16, rtol=1e-6)
    np.testing.assert_array_equal(labels.numpy(), reference.target)


def test_load_digits_without_sklearn_names_the_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sklearn(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        load_digits()


def test_train_test_split_keeps_rows_together_and_covers_everything():
    X, y = gl.arange(20).reshape(10, 2), gl.arange(10)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, generator=gl.Generator().manual_seed(0))
    assert X_train.shape == (7, 2) and X_test.shape == (3, 2) and y_train.shape == (7,) and y_test.shape == (3,)
    np.testing.assert_array_equal(X_train.numpy()[:, 0], 2 * y_train.numpy())
    assert sorted(y_train.tolist() + y_test.tolist()) == list(range(10))
    assert len(train_test_split(X, test_size=4)[1]) == 4
    with pytest.raises(ValueError, match="same length"):
        train_test_split(X, gl.arange(3))
    with pytest.raises(ValueError, match="at least one row on each side"):
        train_test_split(X, test_size=0.0)


# --- IDX files -----------------------------------------------------------------------------------

IDX_CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}


def idx_bytes(array):
    """An IDX file written from the format's definition: magic, big-endian sizes, big-endian values."""
    header = bytes([0, 0, IDX_CODES[array.dtype.type], array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path, array, gz=False):
    data = idx_bytes(array)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("dtype", list(IDX_CODES))
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trips_every_type(tmp_path, dtype, gz):
    array = (np.arange(24).reshape(2, 3, 4) * 3 - 20).astype(dtype)
    if dtype is np.uint8:
        array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 10
    got = read_idx(write_idx(tmp_path / ("f.idx.gz" if gz else "f.idx"), array, gz))
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, array)


def test_read_idx_one_dimensional_labels(tmp_path):
    labels = np.array([5, 0, 4, 1, 9], np.uint8)
    path = write_idx(tmp_path / "labels", labels)
    assert path.read_bytes()[:8] == b"\x00\x00\x08\x01\x00\x00\x00\x05"
    np.testing.assert_array_equal(read_idx(path), labels)


def test_read_idx_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.idx"):
        read_idx(tmp_path / "missing.idx")
    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"\x12\x34\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match=r"bad.idx is not an IDX file: it starts with bytes 12 34 08 01"):
        read_idx(bad)
    full = idx_bytes(np.zeros((3, 4, 5), np.uint8))  # 16 header bytes + 60 values
    cut = tmp_path / "cut.idx"
    cut.write_bytes(full[:50])
    with pytest.raises(ValueError, match=r"cut.idx is truncated: shape \(3, 4, 5\) of u1 needs 76 bytes.*has 50 bytes"):
        read_idx(cut)
    cut.write_bytes(full[:10])
    with pytest.raises(ValueError, match=r"cut.idx is truncated: its header needs 16 bytes .* only 10 bytes"):
        read_idx(cut)
    long = tmp_path / "long.idx"
    long.write_bytes(full + b"\x00")
    with pytest.raises(ValueError, match="extra bytes at the end.*needs 76 bytes.*has 77 bytes"):
        read_idx(long)
    broken = tmp_path / "broken.idx.gz"
    broken.write_bytes(gzip.compress(full)[:30])
    with pytest.raises(ValueError, match="broken.idx.gz is not a readable gzip file"):
        read_idx(broken)


def fake_mnist(folder, n, gz, names=("train-images-idx3-ubyte", "train-labels-idx1-ubyte")):
    folder.mkdir(parents=True, exist_ok=True)
    images = (np.arange(n * 28 * 28) % 256).astype(np.uint8).reshape(n, 28, 28)
    labels = (np.arange(n) % 10).astype(np.uint8)
    suffix = ".gz" if gz else ""
    write_idx(folder / (names[0] + suffix), images, gz)
    write_idx(folder / (names[1] + suffix), labels, gz)
    return images, labels


@pytest.mark.parametrize("sub, gz", [((), False), (("MNIST", "raw"), True), (("raw",), False)])
def test_load_mnist_finds_the_standard_files(tmp_path, sub, gz):
    images, labels = fake_mnist(tmp_path.joinpath(*sub), 6, gz)
    X, y = load_mnist(tmp_path, train=True)
    assert X.shape == (6, 1, 28, 28) and X.dtype is gl.float32 and y.dtype is gl.int64
    np.testing.assert_allclose(X.numpy()[:, 0], images / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y.numpy(), labels)


def test_load_mnist_test_split_and_errors(tmp_path):
    fake_mnist(tmp_path, 4, False, names=("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
    assert load_mnist(str(tmp_path), train=False)[0].shape == (4, 1, 28, 28)
    with pytest.raises(FileNotFoundError, match="found no train-images-idx3-ubyte .* does not download"):
        load_mnist(tmp_path, train=True)
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((3, 28, 28), np.uint8))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match=r"images of shape \(3, 28, 28\).*labels of shape \(2,\)"):
        load_mnist(tmp_path)
