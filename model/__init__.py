"""The encoder-decoder Transformer, its recording hooks, decoding (greedy, beam, sampling) and checkpoints (PyTorch only)."""

from .attribution import Attribution, attribute
from .capture import Capture, capture
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .config import PRESETS, TransformerConfig
from .decoding import BeamTrace, Step, Trace, beam_search, greedy_decode, sample
from .importance import HeadImportance, head_importance
from .pe_experiment import PositionalExperiment, positional_experiment
from .positional import sinusoidal_encoding
from .recording import record
from .tokenizer import Tokenizer, Vocab
from .transformer import Transformer, build_model

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
