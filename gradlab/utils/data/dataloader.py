"""``DataLoader``: batches from a dataset, in the order a sampler gives, as in ``torch.utils.data``.

The sampler (or batch sampler) runs in the main process and says which samples form each batch;
a fetcher reads and collates them. With ``num_workers=0`` that happens in the main process; with
``num_workers=N`` the main process hands the batches round-robin to N worker processes and puts
the answers back in order, so a seeded loader gives the same batches either way.
"""

from __future__ import annotations

import itertools
import pickle
import queue
import sys
import time
import weakref

from ...random import randint
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .fetch import make_fetcher
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import STATUS_CHECK_INTERVAL, ResumeIteration, StreamEnded, WorkerError, get_worker_info, worker_loop

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


class _InfiniteConstantSampler(Sampler):
    """What an IterableDataset is 'sampled' with: the stream decides when it ends."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches: ``for x, y in DataLoader(TensorDataset(X, Y), batch_size=32)``.

    ``shuffle=True`` draws a new order each epoch (from ``generator`` when given); ``sampler`` or
    ``batch_sampler`` choose the order yourself; ``batch_size=None`` yields single samples unbatched;
    ``drop_last`` drops a short final batch; ``collate_fn`` merges a list of samples into a batch.

    ``num_workers=N`` reads batches in N worker processes, each seeded from ``generator`` as PyTorch
    seeds them (see ``get_worker_info``), ``prefetch_factor`` batches ahead per worker (default 2);
    ``persistent_workers`` keeps them between epochs (their seed is drawn once, so as in PyTorch the
    later epochs shuffle differently from ``num_workers=0``); ``timeout`` (seconds) bounds the wait for one
    batch; ``in_order=False`` yields batches as they arrive. Workers start by ``fork`` on Linux (fast,
    and a dataset defined in a notebook needs no pickling) and by the platform's default elsewhere;
    ``multiprocessing_context="spawn"`` starts fresh interpreters instead, for a picklable dataset,
    and is the safe choice when other threads hold locks the dataset needs (fork copies one thread).
    ``pin_memory`` and ``pin_memory_device`` are accepted and have no effect: gradlab's host arrays
    are ordinary numpy memory, there is no page-locked memory to copy into.
    """

    _frozen = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and timeout > 0:
            raise ValueError(f"timeout option bounds the wait for a worker's batch, so it needs num_workers > 0 "
                             f"(got timeout={timeout}, num_workers=0)")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        elif num_workers > 0 and prefetch_factor == 0:  # PyTorch fails later, on an assertion
            raise ValueError("prefetch_factor=0 would give the workers no batch to read; it counts the batches each "
                             "worker loads ahead, so use 1 or more (the default is 2)")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        self._initialized = True

    def __setattr__(self, name, value):
        if name in self._frozen and getattr(self, "_initialized", False):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        object.__setattr__(self, name, value)

    @property
    def multiprocessing_context(self):
        """How workers start: None (fork on Linux), a start method's name, or a multiprocessing context."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            import multiprocessing.context  # only loaders with workers need it: `import gradlab` stays light

            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        object.__setattr__(self, "_multiprocessing_context", context)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIterator(self)
        if not self.persistent_workers:
            return _MultiProcessIterator(self)
        if self._iterator is None or not self._iterator._shutdown.alive:  # first epoch, or its workers failed
            self._iterator = _MultiProcessIterator(self)
        else:
            self._iterator._reset()
        return self._iterator


class _BaseIterator:
    """One pass over a DataLoader: the sampler's order, and the base seed the workers are seeded from.

    The seed is drawn from the loader's generator before the sampler draws, whether or not there
    are workers, so the sampler's numbers do not depend on ``num_workers``.
    """

    def __init__(self, loader: DataLoader):
        self._dataset, self._index_sampler = loader.dataset, loader._index_sampler
        self._auto_collation, self._collate_fn = loader._auto_collation, loader.collate_fn
        self._drop_last = loader.drop_last
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = randint(0, 2**63 - 1, (), generator=loader.generator).item()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)


class _SingleProcessIterator(_BaseIterator):
    """Fetch each batch in the main process, when it is asked for."""

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        self._fetcher = make_fetcher(self._dataset, self._auto_collation, self._collate_fn, self._drop_last)

    def __next__(self):
        return self._fetcher.fetch(next(self._sampler_iter))  # either may raise StopIteration: the pass is over


def _start_context(context):
    """The multiprocessing context workers start from: the loader's, else fork on Linux, else the default."""
    if context is not None:
        return context
    import multiprocessing

    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)


def _shutdown_workers(workers, index_queues, result_queue, done_event):
    """Stop the workers and reap them (no zombies): ask politely, wait a little, then terminate."""
    done_event.set()
    for index_queue in index_queues:
        index_queue.put(None)
    for worker in workers:
        worker.join(timeout=2 * STATUS_CHECK_INTERVAL)
    for worker in workers:
        if worker.is_alive():  # stuck in a slow __getitem__: its batch is not wanted any more
            worker.terminate()
            worker.join()
    for q in (*index_queues, result_queue):
        q.cancel_join_thread()
        q.close()


class _MultiProcessIterator(_BaseIterator):
    """Hand batches to worker processes round-robin, ``prefetch_factor`` per worker ahead, and return
    their answers in the order the sampler gave them (or as they arrive, with ``in_order=False``).

    Task ids count the batches sent this epoch. A worker whose stream has ended answers one task
    with ``StreamEnded`` and skips the rest it was sent, so those are passed over, never waited for.
    """

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        self._num_workers, self._prefetch_factor = loader.num_workers, loader.prefetch_factor
        self._timeout, self._in_order = loader.timeout, loader.in_order
        self._persistent = loader.persistent_workers
        context = _start_context(loader.multiprocessing_context)
        self._result_queue, self._done_event = context.Queue(), context.Event()
        self._index_queues, self._workers = [], []
        # The finalizer holds the processes and queues, not self: deleting the iterator (or breaking
        # out of a for loop) shuts the workers down at once, and so does the end of the interpreter.
        self._shutdown = weakref.finalize(self, _shutdown_workers, self._workers, self._index_queues,
                                          self._result_queue, self._done_event)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            process = context.Process(target=worker_loop, daemon=True, args=(
                self._dataset, index_queue, self._result_queue, self._done_event, self._auto_collation,
                self._collate_fn, self._drop_last, self._base_seed, loader.worker_init_fn, worker_id,
                self._num_workers))
            try:
                process.start()
            except (TypeError, AttributeError, pickle.PicklingError) as error:
                self._shutdown()
                raise pickle.PicklingError(
                    f"DataLoader: could not start worker {worker_id} with the {context.get_start_method()!r} start "
                    f"method, which pickles the dataset, collate_fn and worker_init_fn: {error}. Define them at "
                    f"the top level of a module, or use multiprocessing_context='fork'") from error
            self._index_queues.append(index_queue)
            self._workers.append(process)
        self._start_epoch()

    def _reset(self):
        """A new epoch on the same (persistent) workers: wait until each has finished the old one."""
        self._sampler_iter = iter(self._index_sampler)
        for index_queue in self._index_queues:
            index_queue.put(ResumeIteration())
        waiting = self._num_workers
        while waiting:
            task_id, _ = self._get_reply()  # answers to the old epoch's tasks are dropped here
            waiting -= isinstance(task_id, ResumeIteration)
        self._start_epoch()

    def _start_epoch(self):
        self._sent = self._next_to_return = 0
        self._owner = {}  # task id -> worker, for each task sent and not yet returned
        self._early = {}  # task id -> reply that came before the ones in front of it (in order only)
        self._streaming = [True] * self._num_workers  # False once a worker's stream has ended
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._send_task()

    def _send_task(self):
        """Give the sampler's next batch to the next worker that still has data, if there is one."""
        if not any(self._streaming):
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        worker = next(w for w in self._worker_cycle if self._streaming[w])
        self._index_queues[worker].put((self._sent, index))
        self._owner[self._sent] = worker
        self._sent += 1

    def __next__(self):
        if not self._shutdown.alive:  # after the last batch, or after a worker died
            raise StopIteration
        while True:
            self._pass_over_unanswerable()
            if self._next_to_return == self._sent:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            if self._in_order and self._next_to_return in self._early:
                return self._deliver(self._next_to_return, self._early.pop(self._next_to_return))
            task_id, reply = self._get_reply()
            if isinstance(reply, StreamEnded):
                self._streaming[reply.worker_id] = False
                del self._owner[task_id]
                self._send_task()
            elif self._in_order and task_id != self._next_to_return:
                self._early[task_id] = reply
            else:
                return self._deliver(task_id, reply)

    def _pass_over_unanswerable(self):
        """Move the next task to return past tasks already returned and tasks no worker will answer."""
        while self._next_to_return < self._sent:
            task_id = self._next_to_return
            worker = self._owner.get(task_id)
            if worker is not None and (self._streaming[worker] or task_id in self._early):
                return
            self._owner.pop(task_id, None)
            self._next_to_return += 1

    def _deliver(self, task_id, reply):
        del self._owner[task_id]
        self._send_task()
        if isinstance(reply, WorkerError):
            reply.reraise()
        return pickle.loads(reply)

    def _get_reply(self):
        """The next ``(task_id, reply)`` from any worker; an error if one died or ``timeout`` passed."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
            try:
                return self._result_queue.get(timeout=max(wait, 0))
            except queue.Empty:
                pass
            dead = [w for w in self._workers if not w.is_alive()]
            if dead:
                self._shutdown()
                raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(str(w.pid) for w in dead)}) exited "
                                   f"unexpectedly (exit code {dead[0].exitcode})")
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
