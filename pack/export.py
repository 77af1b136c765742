"""The model and tokenizer for the lecture pack's text box: the model's own graphs and the tokenizer's description.

    spec = live_spec(model, tokenizer)        # a dict, JSON-ready: config, tokenizer, graphs (base64 ONNX)

The network is not described here: `graphs` are the ONNX exports of the model's own encode and cached decoding step
(an encoder-decoder) or of its one stack (pack/onnx_graphs.py), every attention map a named output, which
the page runs with onnxruntime-web (pack/static/pack_net.js). So every model the app opens can be packed (every positional
kind, gated feed-forwards, RMS norms, embedding norms, rescaled outputs, forced first tokens, sliding windows) when its
graphs fit the pack's budget. A model the page cannot run raises Unsupported with a sentence saying why: the builder
writes a pack without the live model then.
An encoder-decoder above the budget may go as a folder pack (live_spec(..., folder=True)): the same step graphs
(onnx_export.export_step_graphs) and their float16 weights stored once beside the page (pack_weights).
"""

from __future__ import annotations

import base64

from torch import nn

from i18n import M_, N_
from model.decoding.core import limit_rule
from model.text.inputs import check_limits, text_room
from model.text.tokenizer import ListVocab, Tokenizer, Vocab, clean_classes
from pack.onnx_graphs import export_graphs, export_step_graphs
from pack.weights import WEIGHTS, half_rounded, shared_weights

# Bytes of ONNX graphs a pack may carry: base64 makes 9.3 MB of them; with plotly.js (4.7 MB), the inlined
# onnxruntime-web (4.9 MB) and the precomputed figures a pack stays under its 20 MB budget.
MAX_BYTES = 7_000_000
# Bytes of float16 weights a folder pack carries beside its page (an encoder-decoder above MAX_BYTES, when asked):
# the opus-mt-en-de shape (74M parameters) takes 148 MB.
FOLDER_MAX_BYTES = 400_000_000


# why a model with typed token ids (IdVocab: a checkpoint without its vocabulary) gets no model in its pack
NO_TOKEN_LIST = N_("this model has no token list (its input is typed as token ids), and the page reads text only")


class Unsupported(ValueError):
    """The page cannot run this model; the message (an i18n Message) says why."""


def _side(vocab) -> dict:
    """One side's tokenizer for the page as a tokenizer.json: this project's vocabulary, someone else's token list
    (ListVocab), or a Hugging Face folder's (sentencepiece, byte-level BPE, a tokenizer.json of GPT-2, Llama, Qwen2 or
    BERT); Unsupported for a model without a token list (IdVocab)."""
    if type(vocab) in (Vocab, ListVocab):  # the special tokens' ids: 0..3 (this project's), or where the list has them
        roles = {role: getattr(vocab, role) for role in ("pad_id", "bos_id", "eos_id", "unk_id")}
        return {
            **vocab.to_dict(),
            **roles,
            "prepend_bos": getattr(vocab, "prepend_bos", False),
            "json": vocab.description(),
        }
    from model.checkpoints.formats.hf_descriptions import pack_side
    from model.checkpoints.formats.hf_tokenizers import ByteLevelVocab, SentencePieceVocab
    from model.checkpoints.formats.marian_tokenizer import MarianVocab
    from model.checkpoints.formats.tokenizer_json import LibraryVocab

    if isinstance(vocab, (SentencePieceVocab, ByteLevelVocab, MarianVocab, LibraryVocab)):
        return pack_side(vocab)
    raise Unsupported(M_(NO_TOKEN_LIST))


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


def folder_pack(model: nn.Module, folder: bool, max_bytes: int | None = None) -> bool:
    """Whether `model`'s pack is a folder (index.html and its weights beside it): an encoder-decoder whose weights are
    above what one HTML file carries (max_bytes, default MAX_BYTES), when the caller can write a folder."""
    limit = MAX_BYTES if max_bytes is None else max_bytes
    return folder and model.config.shape == "encoder-decoder" and weight_bytes(model) > limit


def _config(model: nn.Module) -> dict:
    """The model's configuration as the page reads it, with what it derives: the final norm and how many tokens of the
    typed text the model reads (text_room: the app's check, the same number). The graphs mark a sliding window's
    band as masked themselves (onnx_graphs._view)."""
    cfg = model.config
    return {**cfg.to_dict(), "has_final_norm": cfg.has_final_norm, "text_room": text_room(cfg)}


def live_spec(model: nn.Module, tokenizer: Tokenizer, max_bytes: int | None = None, folder: bool = False) -> dict:
    """Everything the page needs to run `model` (see the module docstring); Unsupported says why not.

    folder: a model above max_bytes may go as a folder pack (folder_pack): its parameters rounded to float16
    (pack_weights.half_rounded: pass the rounded model, as pack_records does, so that the pack's own inputs agree),
    the encoder and cached step graphs (onnx_export.export_step_graphs) without their weights, and
    spec["weights"]["data"]: the one float16 file that holds them (ONNX external data), written beside the page."""
    # each side's tokens and its tokenizer.json (model/text/tokenizer_json.py, hf_descriptions), and the input check's
    # classes of characters (model/text/tokenizer.clean_classes) and numbers (inputs.check_limits); the step limit's
    # numbers (model/decoding/core.limit_rule): the page checks and decodes by the app's own rules
    sides = {"source": _side(tokenizer.source), "target": _side(tokenizer.target), "clean": clean_classes()}
    common = {
        "config": _config(model),
        "tokenizer": {**sides, "limits": check_limits()},
        "decoding": limit_rule(model.config),
    }
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    if folder_pack(model, folder, max_bytes):
        _check_size(weight_bytes(model) // 2, FOLDER_MAX_BYTES)
        graphs, blob = shared_weights(export_step_graphs(half_rounded(model)))
        return {
            **common,
            "graphs": {k: base64.b64encode(v).decode("ascii") for k, v in graphs.items()},
            "weights": {"location": WEIGHTS, "bytes": len(blob), "data": blob},
            "n_bytes": len(blob),
        }
    _check_size(weight_bytes(model), max_bytes)  # before the export: no graph of a model far too large is made
    # an encoder-decoder decodes by cached steps (the page's one way), a one-stack model by passes over its sequence
    graphs = export_step_graphs(model) if model.config.shape == "encoder-decoder" else export_graphs(model)
    size = sum(len(g) for g in graphs.values())
    _check_size(size, max_bytes)
    return {**common, "graphs": {k: base64.b64encode(v).decode("ascii") for k, v in graphs.items()}, "n_bytes": size}
