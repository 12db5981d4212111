"""DataLoader(num_workers=N): real worker processes, seeded as PyTorch seeds them, batches in order,
errors carried back with their traceback, and no process left behind.

Every test here is guarded twice against hanging: the loaders get a ``timeout`` and the test a
SIGALRM deadline. Workers start by fork (Linux) unless a test asks for spawn.
"""

import math
import os
import random
import signal
import sys

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
from gradlab.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info
from worker_datasets import Numbers

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="the hang guard needs SIGALRM (POSIX)")

LIMIT = 10  # seconds any loader here may wait for one batch


@pytest.fixture(autouse=True)
def deadline():
    def expire(signum, frame):
        raise TimeoutError("a DataLoader worker test ran for more than 30 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


class Seeds(Dataset):
    """What the worker's random generators give, next to the worker's info."""

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "num_workers": info.num_workers, "seed": info.seed, "gradlab": gl.rand(1).item(),
                "numpy": np.random.rand(), "python": random.random(), "initial_seed": gl.initial_seed()}

    def __len__(self):
        return 4


class Range(IterableDataset):
    """The example of PyTorch's IterableDataset docs: each worker yields its own slice of [start, end)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per_worker = int(math.ceil((self.end - self.start) / float(info.num_workers)))
        first = self.start + info.id * per_worker
        return iter(range(first, min(first + per_worker, self.end)))


class Failing(Dataset):
    def __init__(self, bad_index, error):
        self.bad_index, self.error = bad_index, error

    def __getitem__(self, i):
        if i == self.bad_index:
            raise self.error
        return i

    def __len__(self):
        return 6


class Dying(Dataset):
    def __getitem__(self, i):
        if i == 2:
            os._exit(3)
        return i

    def __len__(self):
        return 6


class Slow(Dataset):
    def __getitem__(self, i):
        import time

        time.sleep(1.0)
        return i

    def __len__(self):
        return 2


def values(batches):
    """Batches of Numbers as plain lists (without the pids), to compare loaders."""
    return [(b["x"].tolist(), b["x"].dtype, b["y"].tolist(), b["y"].dtype) for b in batches]


def pids(batches):
    return {pid for batch in batches for pid in batch["pid"].tolist()}


def assert_reaped(pids):
    """Each pid has exited and been waited for: not running, and not a zombie either."""
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


# --- order and seeding ---------------------------------------------------------------------------


@pytest.mark.parametrize("num_workers, prefetch_factor", [(2, None), (3, 1)])
def test_workers_give_the_same_batches_in_the_same_order_as_the_main_process(num_workers, prefetch_factor):
    def batches(**kwargs):
        loader = DataLoader(Numbers(23), batch_size=4, shuffle=True, generator=gl.Generator().manual_seed(5), **kwargs)
        return [batch for _ in range(2) for batch in loader]  # two epochs: the second order differs

    main = batches()
    workers = batches(num_workers=num_workers, prefetch_factor=prefetch_factor, timeout=LIMIT)
    assert values(workers) == values(main) and values(main[:6]) != values(main[6:12])
    assert os.getpid() not in pids(workers) and pids(main) == {os.getpid()}


class Jittery(Dataset):
    """Sample i arrives after a delay of its own (0 to 4 ms), so workers answer out of order."""

    def __getitem__(self, i):
        import time

        time.sleep((i * 7919 % 5) / 1000)
        return i

    def __len__(self):
        return 30


class JitteryRange(Range):
    def __iter__(self):
        import time

        for i in super().__iter__():
            time.sleep((i * 7919 % 5) / 1000)
            yield i


def test_answers_that_arrive_out_of_order_are_returned_in_order():
    batches = [b.tolist() for b in DataLoader(Jittery(), batch_size=2, num_workers=3, timeout=LIMIT)]
    assert batches == [[i, i + 1] for i in range(0, 30, 2)]
    single = [b.tolist() for b in DataLoader(JitteryRange(0, 17), batch_size=2)]
    workers = [b.tolist() for b in DataLoader(JitteryRange(0, 17), batch_size=2, num_workers=3, timeout=LIMIT)]
    # the workers hold 0..5, 6..11 and 12..16; each batches its own slice, and their batches take turns
    assert single == [[i, i + 1] for i in range(0, 16, 2)] + [[16]]
    assert workers == [[0, 1], [6, 7], [12, 13], [2, 3], [8, 9], [14, 15], [4, 5], [10, 11], [16]]


def test_tensor_batches_cross_processes_with_dtype_and_values():
    X = gl.arange(12).float().reshape(6, 2)
    loader = DataLoader(TensorDataset(X, gl.arange(6) % 2 == 0), batch_size=4, num_workers=2, timeout=LIMIT)
    (x0, m0), (x1, m1) = list(loader)
    assert x0.dtype is gl.float32 and m0.dtype is gl.bool and x1.tolist() == [[8.0, 9.0], [10.0, 11.0]]
    assert m0.tolist() == [True, False, True, False]


def test_out_of_order_loading_yields_every_batch_once():
    loader = DataLoader(Numbers(10), batch_size=3, num_workers=2, in_order=False, timeout=LIMIT)
    assert sorted(b["y"].tolist() for b in loader) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_each_worker_is_seeded_from_the_loaders_generator_as_in_pytorch():
    def run(seed):
        loader = DataLoader(Seeds(), batch_size=None, num_workers=2, generator=gl.Generator().manual_seed(seed),
                            timeout=LIMIT)
        return list(loader)

    first = run(0)
    assert [s["id"] for s in first] == [0, 1, 0, 1] and {s["num_workers"] for s in first} == {2}
    base_seed = first[0]["seed"]
    assert first[1]["seed"] == base_seed + 1 and run(0) == first and run(1)[0]["seed"] != base_seed
    # what PyTorch's reproducibility notes read in a worker_init_fn: torch.initial_seed() is the worker's seed
    assert [s["initial_seed"] for s in first[:2]] == [base_seed, base_seed + 1]
    for worker in (0, 1):
        seed = base_seed + worker
        assert first[worker]["gradlab"] == gl.rand(1, generator=gl.Generator().manual_seed(seed)).item()
        assert first[worker]["python"] == random.Random(seed).random()
    assert first[0]["gradlab"] != first[2]["gradlab"]  # the worker's generator moves on


@requires_torch
def test_numpy_in_a_worker_gets_the_seed_pytorch_gives_it():
    from torch.utils.data._utils.worker import _generate_state

    samples = list(DataLoader(Seeds(), batch_size=None, num_workers=2, timeout=LIMIT))
    base_seed = samples[0]["seed"]
    for worker in (0, 1):
        assert samples[worker]["numpy"] == np.random.RandomState(_generate_state(base_seed, worker)).rand()


def test_worker_init_fn_configures_each_workers_own_copy_of_the_dataset():
    def shift_by_worker(worker_id):
        info = get_worker_info()
        assert info.id == worker_id
        info.dataset.offset = 100 * worker_id

    class Offset(Dataset):
        offset = 0

        def __getitem__(self, i):
            return i + self.offset

        def __len__(self):
            return 4

    dataset = Offset()
    loader = DataLoader(dataset, batch_size=None, num_workers=2, worker_init_fn=shift_by_worker, timeout=LIMIT)
    assert list(loader) == [0, 101, 2, 103] and dataset.offset == 0 and get_worker_info() is None


# --- iterable datasets ---------------------------------------------------------------------------


def test_iterable_dataset_shards_with_get_worker_info_as_in_pytorchs_docs():
    # the outputs printed in the docs of torch.utils.data.IterableDataset for this dataset
    assert [t.item() for t in DataLoader(Range(3, 7), num_workers=0)] == [3, 4, 5, 6]
    assert [t.item() for t in DataLoader(Range(3, 7), num_workers=2, timeout=LIMIT)] == [3, 5, 4, 6]
    assert sorted(t.item() for t in DataLoader(Range(3, 7), num_workers=5, timeout=LIMIT)) == [3, 4, 5, 6]  # one idle


def test_iterable_dataset_batches_end_when_every_worker_has_run_dry():
    batches = [b.tolist() for b in DataLoader(Range(0, 11), batch_size=2, num_workers=3, timeout=LIMIT)]
    # worker 0 has 0..3, worker 1 has 4..7, worker 2 has 8..10: each batches its own share
    assert batches == [[0, 1], [4, 5], [8, 9], [2, 3], [6, 7], [10]]
    dropped = [b.tolist() for b in DataLoader(Range(0, 11), batch_size=2, num_workers=3, drop_last=True,
                                              timeout=LIMIT)]
    assert dropped == [[0, 1], [4, 5], [8, 9], [2, 3], [6, 7]]


def test_persistent_workers_restart_an_iterable_dataset_every_epoch():
    loader = DataLoader(Range(0, 6), batch_size=2, num_workers=2, persistent_workers=True, timeout=LIMIT)
    epochs = [[b.tolist() for b in loader] for _ in range(2)]
    assert epochs[0] == epochs[1] == [[0, 1], [3, 4], [2], [5]]


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("error, kind", [(ValueError("bad sample 3"), ValueError),
                                         (KeyError("bad sample 3"), KeyError)])
def test_a_workers_exception_is_raised_in_the_main_process_with_its_traceback(error, kind):
    loader = DataLoader(Failing(3, error), batch_size=None, num_workers=2, timeout=LIMIT)
    iterator = iter(loader)
    assert [next(iterator) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(kind) as caught:
        next(iterator)
    message = str(caught.value)
    assert message.startswith(f"Caught {kind.__name__} in DataLoader worker process 1.\nOriginal Traceback")
    assert "in __getitem__" in message and "raise self.error" in message and "bad sample 3" in message
    assert next(iterator) == 4  # as in PyTorch, the loader goes on after reporting it


def test_a_failing_worker_init_fn_is_reported_at_each_batch():
    def broken(worker_id):
        raise RuntimeError(f"no shard for worker {worker_id}")

    iterator = iter(DataLoader(Numbers(4), num_workers=1, worker_init_fn=broken, timeout=LIMIT))
    for _ in range(2):  # and at every batch after it: that worker can do none
        with pytest.raises(RuntimeError, match=r"(?s)worker process 0\.\nOriginal Traceback.*no shard for worker 0"):
            next(iterator)


def test_a_batch_that_cannot_be_pickled_is_an_error_not_a_hang():
    loader = DataLoader(Numbers(4), batch_size=2, num_workers=1, collate_fn=lambda samples: lambda: samples,
                        timeout=LIMIT)
    with pytest.raises(Exception, match=r"(?s)worker process 0.*pickle"):
        next(iter(loader))


def test_a_worker_that_dies_is_reported_with_its_pid():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly \(exit code 3\)"):
        list(DataLoader(Dying(), batch_size=None, num_workers=2))


def test_timeout_bounds_the_wait_for_a_batch():
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.2 seconds$"):
        next(iter(DataLoader(Slow(), batch_size=None, num_workers=1, timeout=0.2)))


# --- lifetime ------------------------------------------------------------------------------------


def test_workers_are_reaped_when_the_loop_breaks_early_or_the_iterator_is_deleted():
    loader = DataLoader(Numbers(40), batch_size=1, num_workers=2, timeout=LIMIT)
    seen = []
    for batch in loader:
        seen.append(batch)
        if len(pids(seen)) == 2:
            break
    assert_reaped(pids(seen))
    iterator = iter(loader)
    seen = [next(iterator), next(iterator)]
    assert len(pids(seen)) == 2
    del iterator
    assert_reaped(pids(seen))


def test_workers_are_reaped_at_the_end_of_an_epoch():
    workers = pids(DataLoader(Numbers(6), batch_size=1, num_workers=2, timeout=LIMIT))
    assert len(workers) == 2
    assert_reaped(workers)


def test_persistent_workers_serve_every_epoch_and_catch_up_after_a_break():
    def epochs():
        loader = DataLoader(Numbers(10), batch_size=3, shuffle=True, generator=gl.Generator().manual_seed(2),
                            num_workers=2, persistent_workers=True, timeout=LIMIT)
        first = list(loader)
        iterator = iter(loader)
        broken_off = next(iterator)  # leave the second epoch after one batch: its prefetched tasks are stale
        return loader, first, broken_off, list(loader)

    main = list(DataLoader(Numbers(10), batch_size=3, shuffle=True, generator=gl.Generator().manual_seed(2)))
    loader, first, broken_off, third = epochs()
    assert values(first) == values(main)
    # PyTorch draws the workers' base seed once for persistent workers, so later epochs differ from
    # num_workers=0's; they are still whole permutations, and the same run after run
    assert sorted(i for batch in third for i in batch["y"].tolist()) == list(range(10)) and len(third) == 4
    again = epochs()
    assert values(again[1]) == values(first) and values([again[2]]) == values([broken_off])
    assert values(again[3]) == values(third) and values(third) != values(first)
    workers = pids(first + third)
    assert len(workers) == 2 and pids([broken_off]) <= workers  # the same two processes all along
    del loader, again
    assert_reaped(workers)


def test_spawned_workers_load_a_picklable_dataset():
    main = list(DataLoader(Numbers(7), batch_size=3, shuffle=True, generator=gl.Generator().manual_seed(1)))
    spawned = list(DataLoader(Numbers(7), batch_size=3, shuffle=True, generator=gl.Generator().manual_seed(1),
                              num_workers=1, multiprocessing_context="spawn", timeout=20))
    assert values(spawned) == values(main) and os.getpid() not in pids(spawned)


def test_a_context_object_and_pin_memory_are_accepted():
    import multiprocessing

    loader = DataLoader(Numbers(5), batch_size=2, num_workers=2, multiprocessing_context=multiprocessing.get_context(
        "fork"), pin_memory=True, timeout=LIMIT)
    assert values(loader) == values(DataLoader(Numbers(5), batch_size=2))


@pytest.mark.skipif(sys.platform == "win32", reason="needs a start method other than spawn to compare")
def test_spawn_names_what_could_not_be_pickled():
    class Local(Numbers):
        pass

    import pickle

    with pytest.raises(pickle.PicklingError, match="could not start worker 0 with the 'spawn' start method, which "
                                                    "pickles the dataset.*Define them at the top level"):
        iter(DataLoader(Local(3), num_workers=1, multiprocessing_context="spawn", timeout=LIMIT))
