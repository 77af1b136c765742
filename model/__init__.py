"""The encoder-decoder Transformer, its recording hooks, decoding (greedy, beam, sampling) and checkpoints (PyTorch only).

Packages: network/ (config, the Transformer, attention, positions, recording hooks), text/ (tokenizers, input
checks), checkpoints/ (save/load, formats/: one module per imported format and their registry), analysis/
(capture, importance, attribution, Inside, budgets, exports, the lecture pack); decoding and interventions.
The demo tasks, their training and the experiments on them are the top-level package `tasks`, which builds on
this one. The names below are what scripts import from `model`; they stay here whatever moves inside.
"""

from .analysis.attribution import Attribution, attribute
from .analysis.capture import Capture, capture
from .analysis.importance import HeadImportance, head_importance
from .checkpoints.checkpoint import CheckpointError, save_checkpoint
from .checkpoints.loading import load_checkpoint
from .decoding import BeamTrace, Step, Trace, beam_search, greedy_decode, sample
from .network.config import PRESETS, TransformerConfig
from .network.positional import sinusoidal_encoding
from .network.recording import record
from .network.transformer import Transformer, build_model
from .text.tokenizer import Tokenizer, Vocab

__all__ = [
    "TransformerConfig",
    "build_model",
    "sinusoidal_encoding",
    "capture",
    "greedy_decode",
    "beam_search",
    "sample",
    "head_importance",
    "attribute",
    "positional_experiment",
    "Capture",
    "Trace",
    "BeamTrace",
    "save_checkpoint",
    "load_checkpoint",
    # also useful
    "Attribution",
    "CheckpointError",
    "HeadImportance",
    "PositionalExperiment",
    "PRESETS",
    "Step",
    "Tokenizer",
    "Transformer",
    "Vocab",
    "record",
]

_FROM_TASKS = ("positional_experiment", "PositionalExperiment")


def __getattr__(name: str):
    """`positional_experiment` and `PositionalExperiment` run on the demo tasks, so they live in tasks/; they are
    still importable from `model` (as the README shows), loaded on first use so that importing this library
    never imports `tasks` (which imports this library)."""
    if name in _FROM_TASKS:
        from tasks import pe_experiment

        return getattr(pe_experiment, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM_TASKS])
