"""Training: the loss, the schedule, the loop, several processes, the record of a run (notebooks 08 and 11; §5).

- :mod:`.loss` — :class:`LabelSmoothingLoss` (§5.4), the same numbers as
  ``F.cross_entropy(label_smoothing=ε, ignore_index=PAD)``.
- :mod:`.schedule` — :func:`make_optimizer` (Adam, β1 = 0.9, β2 = 0.98, ε = 1e-9) and the learning rate, one
  function :func:`learning_rate` (the paper's Noam schedule, or the time-budgeted one), which the ``LambdaLR`` of
  :func:`make_scheduler` follows (§5.3).
- :mod:`.step` — one optimizer step's parts: :func:`loss_on_batch`, :func:`accumulation_groups`,
  :func:`optimizer_step`, :func:`validation_loss`.
- :mod:`.loop` — :func:`fit`: the loop with gradient accumulation, clipping, bf16 autocast, optional
  ``torch.compile``, progress, validation, DDP under ``torchrun``, as a few named steps.
- :mod:`.options` — :class:`RunOptions`: where a run writes, how long it runs, on what (``fit``'s settings
  beside the config).
- :mod:`.training` — what ``fit`` trains with (:class:`~.training.Training`, built by ``start_training``)
  and its sync points: the finite-value checks and ``last.pt``.
- :mod:`.state` — where a run stands (:class:`RunState`) and its checkpoints, so that it resumes exactly.
- :mod:`.ema` — :class:`~.ema.EMA`, the average of the weights ``fit`` keeps with ``Config.ema_decay``.
- :mod:`.choose` — :func:`~.choose.choose_checkpoint`: a run's best/best-ema/averaged checkpoint by validation.
- :mod:`.folder` — :func:`locked_run_folder`: one run writes to a run folder at a time.
- :mod:`.distributed` — :func:`setup_distributed` (``torchrun``'s process group).
- :mod:`.history` — history.json/.csv and the loss plot.
- :mod:`.toy` — :func:`train_toy_model`, a copy/reverse model trained on a CPU in seconds (notebooks 08–10).

Checkpoints live in :mod:`transformer_course.checkpoint` and the batch streams ``fit`` reads in
:mod:`transformer_course.data`; their names stay importable from here, where they have always been
(notebook 11 calls ``train.build_model``, notebook 10 ``train.load_checkpoint``), but ``__all__`` lists only
what this package defines: each name has one home.
"""

from ..checkpoint import (
    Checkpoint,
    CheckpointError,
    RunLockedError,
    average_checkpoints,
    epoch_checkpoints,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
    unwrap,
)
from ..config import Config, get_preset
from ..data import PAD, SPECIALS, Batch, TrainingData, Vocab, collate, multi30k_data, toy_data, toy_vocab
from ..model import Transformer, build_model, count_parameters
from ..rng import rng_states, set_rng_states
from .distributed import Distributed, all_reduce_sum, setup_distributed
from .folder import locked_run_folder
from .history import plot_history, write_history
from .loop import FitResult, fit
from .loss import LabelSmoothingLoss
from .options import RunOptions
from .schedule import learning_rate, make_optimizer, make_scheduler, noam_lambda, noam_rate
from .state import RunState
from .step import TrainingDiverged, accumulation_groups, loss_on_batch, optimizer_step, validation_loss
from .toy import train_toy_model

__all__ = [  # what train defines; the imports above from checkpoint, config, data and model are kept for old code
    "Distributed",
    "FitResult",
    "LabelSmoothingLoss",
    "RunOptions",
    "TrainingDiverged",
    "accumulation_groups",
    "all_reduce_sum",
    "fit",
    "learning_rate",
    "locked_run_folder",
    "loss_on_batch",
    "make_optimizer",
    "make_scheduler",
    "noam_lambda",
    "noam_rate",
    "optimizer_step",
    "plot_history",
    "RunState",
    "setup_distributed",
    "train_toy_model",
    "validation_loss",
    "write_history",
]
