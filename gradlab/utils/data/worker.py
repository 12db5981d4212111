"""What runs inside a DataLoader worker process: seed the random generators, then answer tasks.

A worker holds its own copy of the dataset. It reads tasks ``(task_id, indices)`` from its index
queue and puts ``(task_id, reply)`` on the queue it shares with the other workers, where a reply is
the pickled batch (tensors travel as numpy arrays: see ``Tensor.__reduce__``), a ``WorkerError``
carrying an exception's traceback text, or ``StreamEnded`` once an iterable dataset has run dry.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from ...random import manual_seed
from .fetch import IterableFetcher, make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

STATUS_CHECK_INTERVAL = 0.5  # seconds a process waits on a queue before checking that the other side is alive


@dataclass(frozen=True)
class WorkerInfo:
    """Who this worker is: ``id`` (0 .. num_workers - 1), ``num_workers``, the ``seed`` its random
    generators got, and ``dataset``, this process's own copy (set a shard on it in ``worker_init_fn``)."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo`` inside a DataLoader worker process; None in the main process.

    An ``IterableDataset`` reads it in ``__iter__`` to yield only its share of the stream.
    """
    return _worker_info


@dataclass(frozen=True)
class StreamEnded:
    """The reply of a worker whose copy of an iterable dataset has no samples left."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers before a new epoch; each answers with it once its old tasks are done."""


class _Verbatim(str):
    """A KeyError's message shown as written, not quoted (KeyError prints the repr of its argument)."""

    def __repr__(self):
        return str(self)


class WorkerError:
    """An exception raised in a worker, carried to the main process as its type and its traceback text."""

    def __init__(self, worker_id: int):
        exc_type, exc, tb = sys.exc_info()
        self.worker_id = worker_id
        self.text = "".join(traceback.format_exception(exc_type, exc, tb))
        try:  # a class defined inside a function can't be pickled back; its name is still in the text
            pickle.loads(pickle.dumps(exc_type))
            self.exc_type = exc_type
        except Exception:
            self.exc_type = RuntimeError

    def reraise(self):
        """Raise the worker's exception again here, its message naming the worker and the original traceback."""
        message = (f"Caught {self.exc_type.__name__} in DataLoader worker process {self.worker_id}.\n"
                   f"Original {self.text}")
        if self.exc_type is KeyError:
            raise KeyError(_Verbatim(message))
        try:
            error = self.exc_type(message)
        except Exception:  # an exception type whose constructor wants other arguments
            raise RuntimeError(message) from None
        raise error


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed gradlab's, Python's and numpy's global generators as a PyTorch worker is seeded.

    gradlab and ``random`` get ``base_seed + worker_id``; numpy's legacy generator gets the state
    PyTorch computes for it (its ``_generate_state`` is numpy's SeedSequence on these four words).
    """
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(words).generate_state(4))
    return seed


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, worker_init_fn, worker_id, num_workers):
    """The body of a worker process: set up once, then answer tasks until told to stop (None).

    The batch is pickled here rather than in the queue's background thread, so that a batch that
    can't be pickled comes back as an error instead of vanishing.
    """
    global _worker_info
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        fetcher, startup_error = None, None
        try:
            if worker_init_fn is not None:
                worker_init_fn(worker_id)
            fetcher = make_fetcher(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            startup_error = WorkerError(worker_id)  # the answer to every task, since none can be done
        stream_ended, parent = False, os.getppid()
        while os.getppid() == parent:  # a worker whose main process died stops too
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if task is None:
                break
            if isinstance(task, ResumeIteration):
                result_queue.put((task, None))
                stream_ended = False
                try:
                    fetcher = make_fetcher(dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    fetcher, startup_error = None, WorkerError(worker_id)
                continue
            if done_event.is_set() or stream_ended:
                continue
            task_id, index = task
            if fetcher is None:
                reply = startup_error
            else:
                try:
                    reply = pickle.dumps(fetcher.fetch(index), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as error:
                    if isinstance(error, StopIteration) and isinstance(fetcher, IterableFetcher):
                        reply, stream_ended = StreamEnded(worker_id), True
                    else:  # a StopIteration out of a map-style dataset is a bug in it, reported as such
                        reply = WorkerError(worker_id)
            result_queue.put((task_id, reply))
            del reply
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches every process of the group; the main process reports it
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()
