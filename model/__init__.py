"""The Transformer (encoder-decoder, decoder-only, encoder-only), its recording hooks, decoding (greedy, beam,
sampling) and checkpoints (PyTorch only).

Packages: network/ (config, the Transformer, attention, positions, recording hooks), text/ (tokenizers, input
checks), checkpoints/ (save/load, formats/: one module per imported format and their registry), analysis/
(capture, importance, attribution, Inside, budgets, exports, the lecture pack); decoding and interventions.
The demo tasks, their training and the experiments on them are the top-level package `tasks`, which builds on
this one. The names below are what scripts import from `model`; they stay here whatever moves inside, and are
loaded on first use (model/lazy.py: a package that imports its children can deadlock two threads importing at once).
"""

from .lazy import exports

__getattr__, __dir__ = exports(
    __name__,
    {
        "Attribution": ".analysis.attribution",
        "attribute": ".analysis.attribution",
        "Capture": ".analysis.capture",
        "capture": ".analysis.capture",
        "LazyCapture": ".analysis.lazy_capture",
        "HeadImportance": ".analysis.importance",
        "head_importance": ".analysis.importance",
        "head_scores": ".analysis.head_scores",
        "CheckpointError": ".checkpoints.checkpoint",
        "save_checkpoint": ".checkpoints.checkpoint",
        "load_checkpoint": ".checkpoints.loading",
        "BeamTrace": ".decoding",
        "Step": ".decoding",
        "Trace": ".decoding",
        "beam_search": ".decoding",
        "greedy_decode": ".decoding",
        "sample": ".decoding",
        "PRESETS": ".network.config",
        "TransformerConfig": ".network.config",
        "sinusoidal_encoding": ".network.positional",
        "record": ".network.recording",
        "Transformer": ".network.transformer",
        "build_model": ".network.transformer",
        "Tokenizer": ".text.tokenizer",
        "Vocab": ".text.tokenizer",
        # from the demo tasks (tasks/ builds on this library): still importable from `model` as the README shows,
        # loaded on first use, so that importing this library never imports `tasks`
        "positional_experiment": "tasks.pe_experiment",
        "PositionalExperiment": "tasks.pe_experiment",
    },
    globals(),
)


__all__ = [
    "TransformerConfig",
    "build_model",
    "sinusoidal_encoding",
    "capture",
    "greedy_decode",
    "beam_search",
    "sample",
    "head_importance",
    "head_scores",
    "attribute",
    "positional_experiment",
    "Capture",
    "LazyCapture",
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
