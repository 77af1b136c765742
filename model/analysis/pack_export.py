"""The model and tokenizer for the lecture pack's text box: the model's own graphs and the tokenizer's description.

    spec = live_spec(model, tokenizer)        # a dict, JSON-ready: config, tokenizer, graphs (base64 ONNX)

The network is not described here: `graphs` are the ONNX exports of the model's own encode and teacher-forced decode
(model/analysis/onnx_export.py), every attention map a named output, which the page runs with onnxruntime-web
(viz/pack_net.js). So every model the app opens can be packed (every positional kind, gated feed-forwards, RMS norms,
embedding norms, rescaled outputs, forced first tokens) when its graphs fit the pack's budget. A model the page
cannot run raises Unsupported with a sentence saying why: the builder writes a pack without the live model then.
"""

from __future__ import annotations

import base64

from torch import nn

from i18n import M_

from ..text.tokenizer import Tokenizer, Vocab
from .onnx_export import export_graphs

# Bytes of ONNX graphs a pack may carry: base64 makes 9.3 MB of them; with plotly.js (4.7 MB), the inlined
# onnxruntime-web (4.9 MB) and the precomputed figures a pack stays under its 20 MB budget.
MAX_BYTES = 7_000_000


class Unsupported(ValueError):
    """The page cannot run this model; the message (an i18n Message) says why."""


def _side(vocab) -> dict:
    """One side's tokenizer for the page: this project's vocabulary, or a Hugging Face folder's (sentencepiece,
    byte-level BPE, a tokenizer.json of GPT-2, Llama, Qwen2 or BERT) as a tokenizer.json; Unsupported for the others."""
    if type(vocab) is Vocab:
        return {**vocab.to_dict(), "json": vocab.description()}
    from ..checkpoints.formats.hf_descriptions import pack_side
    from ..checkpoints.formats.hf_tokenizers import ByteLevelVocab, SentencePieceVocab
    from ..checkpoints.formats.marian_tokenizer import MarianVocab
    from ..checkpoints.formats.tokenizer_json import LibraryVocab

    if isinstance(vocab, (SentencePieceVocab, ByteLevelVocab, MarianVocab, LibraryVocab)):
        return pack_side(vocab)
    raise Unsupported(M_("the page runs this project's own tokenizers and those of Hugging Face folders, not this one"))


def _check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise Unsupported(
            M_(
                "its weights take {mb} MB, above the {limit} MB a pack carries",
                mb=f"{size / 1e6:.1f}",
                limit=f"{max_bytes / 1e6:.0f}",
            )  # fmt: skip
        )


def weight_bytes(model: nn.Module) -> int:
    """float32 bytes of the model's parameters, each stored tensor once."""
    return 4 * sum(int(p.numel()) for p in model.parameters())


def live_spec(model: nn.Module, tokenizer: Tokenizer, max_bytes: int = MAX_BYTES) -> dict:
    """Everything the page needs to run `model` (see the module docstring); Unsupported says why not."""
    sides = {"source": _side(tokenizer.source), "target": _side(tokenizer.target)}
    _check_size(weight_bytes(model), max_bytes)  # before the export: no graph of a model far too large is made
    graphs = export_graphs(model)
    size = sum(len(g) for g in graphs.values())
    _check_size(size, max_bytes)
    return {
        "config": {**model.config.to_dict(), "has_final_norm": model.config.has_final_norm},
        "tokenizer": sides,  # each side's tokens and its tokenizer.json (model/text/tokenizer_json.py, hf_descriptions)
        "graphs": {k: base64.b64encode(v).decode("ascii") for k, v in graphs.items()},
        "n_bytes": size,
    }
