"""Optimizers and learning-rate schedules, as ``torch.optim``: ``optim.SGD(model.parameters(), lr=0.1)``."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lion import Lion
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Adamax", "Lion", "NAdam", "Optimizer", "RAdam", "RMSprop", "SGD",
           "lr_scheduler"]
