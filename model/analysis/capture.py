"""One teacher-forced pass with everything recorded: the record that crosses from model/ to viz/."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..decoding import greedy_ids
from ..interventions import Interventions
from ..network.recording import ATTENTION_KINDS, Recorder, record
from ..text.inputs import as_batch, prepare_sequence, prepare_source, prepare_target, require_eval
from ..text.tokenizer import Tokenizer


@dataclass
class Capture:
    """Attention and positional encodings of one source (and target) through the whole model.

    S = source tokens (ending with </s>), T = decoder input tokens (starting with <s>),
    L = layers of that stack, H = heads, D = d_model. All arrays are float32 numpy.

    Decoder-only models: the text is the decoder's one sequence (T tokens as the family's tokenizer gives them,
    its BOS included when it adds one); the source side is empty (S = 0: encoder_self (0, H, 0, 0), cross
    (0, H, T, 0), source arrays of length 0). Encoder-only models: the text is the source; the decoder side is
    empty (T = 0) and log_probs is the masked-LM head's (S, V) distributions, or None without a head.
    """

    source_tokens: list[str]  # S
    target_tokens: list[str]  # T: the decoder's inputs, <s> y_1 .. y_{T-1}
    predicted_tokens: list[str]  # T: the argmax prediction at each decoder position
    source_ids: np.ndarray  # (S,)
    target_ids: np.ndarray  # (T,)
    encoder_self: np.ndarray  # (L_enc, H, S, S) row = query position, column = key position
    decoder_self: np.ndarray  # (L_dec, H, T, T) zero above the diagonal (causal mask)
    cross: np.ndarray  # (L_dec, H, T, S) decoder queries over source keys
    source_pe: np.ndarray  # (S, D) the positional rows added to the source embeddings
    target_pe: np.ndarray  # (T, D)
    source_embeddings: np.ndarray  # (S, D) token embeddings after the sqrt(d_model) scale, before PE
    target_embeddings: np.ndarray  # (T, D)
    generated: bool  # True when the target is the model's own greedy output
    source_truncated: int = 0  # typed source tokens cut to fit max_len
    target_truncated: int = 0
    # Only with capture(..., qkv=True), else empty. kind: encoder_self, decoder_self or cross; dk = D / H.
    # qkv[kind] = (q, k, v): q (L, H, Tq, dk), k and v (L, H, Tk, dk), per head after W^Q, W^K, W^V.
    qkv: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    # head_outputs[kind]: (L, H, Tq, dk) each head's softmax(q k^T / sqrt(dk)) v, before concatenation and W^O
    head_outputs: dict[str, np.ndarray] = field(default_factory=dict)
    # (T, target vocabulary) the model's log-probabilities at each decoder position (of this pass, interventions included)
    log_probs: np.ndarray | None = None
    # Only with qkv=True and a model whose positions are a bias on the scores (alibi, relative): position_bias[kind]
    # (L, H, Tq, Tk) the bias added to q.k / sqrt(dk) before the mask and softmax (encoder_self, decoder_self only).
    # For rope models the recorded q and k (Capture.qkv) are the rotated ones.
    position_bias: dict[str, np.ndarray] = field(default_factory=dict)
    # what was changed in this pass, JSON-ready: {} or e.g. {"ablate": [["cross", 1, 0]], "positional": "shifted", "shift": 3}
    interventions: dict = field(default_factory=dict)
    # the sliding window of each layer of a self-attention kind, None for a global layer (Mistral, Gemma 2/3, Phi-3):
    # windows["decoder_self"][l]; the cells outside a local layer's window are masked, not weighted 0. {} without any
    windows: dict[str, list[int | None]] = field(default_factory=dict)

    @property
    def written_tokens(self) -> list[str]:
        """T: the token each decoder row writes, the app's one row convention (issue 34): row j reads decoder input
        target_tokens[j] and writes target_tokens[j + 1]; the last row writes the model's own next token
        (predicted_tokens[-1]: </s> after a finished greedy output, the token after a decoder-only model's text).
        [] without a decoder."""
        if not self.target_tokens:
            return []
        return [*self.target_tokens[1:], self.predicted_tokens[-1] if self.predicted_tokens else ""]

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array field by name (for .npz export; the qkv and head_outputs dicts are not included)."""
        return {k: v for k, v in vars(self).items() if isinstance(v, np.ndarray)}


def _stack(recorder: Recorder, kind: str, empty: tuple[int, ...] = (0, 0, 0, 0)) -> np.ndarray:
    """(L, H, Tq, Tk) from the one map each layer recorded, batch item 0; `empty` (L = 0) for a stack the model's
    shape does not have."""
    maps = [recorder.attention[(kind, i)][-1][0] for i in recorder.layers(kind)]
    if not maps:
        return np.zeros(empty, dtype=np.float32)
    return torch.stack(maps).float().cpu().numpy()


def _windows(config, kinds) -> dict[str, list[int | None]]:
    """Capture.windows: each self-attention layer's sliding window, for a model with any local layer."""
    if config.sliding_window is None:
        return {}
    layers = {"encoder_self": config.n_encoder_layers, "decoder_self": config.n_decoder_layers}
    return {kind: [config.window_of(i) for i in range(layers[kind])] for kind in kinds if kind in layers}


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def _stack_vectors(recorder: Recorder, kind: str, name: str) -> np.ndarray:
    """(L, H, T, dk) from the one tensor each layer recorded for probe `name`, batch item 0."""
    return _numpy(torch.stack([recorder.vectors[(kind, i, name)][-1][0] for i in recorder.layers(kind)]))


@torch.no_grad()
def capture(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    target: str | None = None,
    qkv: bool = False,
    ablate: list[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    seed: int = 0,
    interventions: Interventions | None = None,
) -> Capture:
    """Run source (and target) through the model once, recording every attention map and PE row.

    With target=None the decoder input is the model's own greedy output for the source.
    With qkv=True also each head's queries, keys, values and outputs (Capture.qkv, Capture.head_outputs).
    Interventions change this pass only (model/interventions/): an `Interventions` value, or the keywords
    ablate=[(kind, layer, head), ...] (zeroes those heads' outputs before W^O) and positional="off" | "shuffled"
    (permutation from seed) | "shifted" (every position + shift). With target=None the decoder input stays the unchanged model's greedy output, so log_probs say how
    the change affects the probability of that output. Capture.interventions records what was changed.
    Safe to call from many threads on one shared model: each call records only its own pass.
    """
    require_eval(model)
    # bad arguments are named before any work
    changes = Interventions.given(interventions, ablate=ablate, positional=positional, shift=shift, seed=seed)
    if model.config.shape != "encoder-decoder":
        return _capture_one_stack(model, tokenizer, source, target, qkv, changes)
    vocab = tokenizer.target
    src = prepare_source(model, tokenizer, source)
    if target is None:
        out = greedy_ids(model, [src.ids], bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]  # fits max_len - 1
        tgt_ids, tgt_cut = [vocab.bos_id] + [i for i in out if i != vocab.eos_id], 0
    else:
        tgt_ids, tgt_cut = prepare_target(model, vocab, target)
    changes.check(model, (len(src.ids), len(tgt_ids)))
    with record(model, qkv=qkv, interventions=changes) as rec:
        memory, mask = model.encode(as_batch(model, src.ids))
        logits = model.decode(as_batch(model, tgt_ids), memory, mask)  # (1, T, V)
    src_pe, tgt_pe = rec.positional["source"][-1], rec.positional["target"][-1]
    vectors = (
        {kind: [_stack_vectors(rec, kind, name) for name in ("q", "k", "v", "heads")] for kind in ATTENTION_KINDS}
        if qkv
        else {}
    )
    return Capture(
        source_tokens=src.tokens,
        target_tokens=vocab.decode(tgt_ids),
        predicted_tokens=vocab.decode(logits[0].argmax(-1).tolist()),
        source_ids=np.asarray(src.ids),
        target_ids=np.asarray(tgt_ids),
        encoder_self=_stack(rec, "encoder_self"),
        decoder_self=_stack(rec, "decoder_self"),
        cross=_stack(rec, "cross"),
        source_pe=_numpy(src_pe.rows),
        target_pe=_numpy(tgt_pe.rows),
        source_embeddings=_numpy(src_pe.embeddings[0]),
        target_embeddings=_numpy(tgt_pe.embeddings[0]),
        generated=target is None,
        source_truncated=src.truncated,
        target_truncated=tgt_cut,
        qkv={kind: tuple(arrays[:3]) for kind, arrays in vectors.items()},
        head_outputs={kind: arrays[3] for kind, arrays in vectors.items()},
        position_bias={
            kind: _stack_vectors(rec, kind, "bias") for kind in ATTENTION_KINDS if rec.vectors.get((kind, 0, "bias"))
        },
        log_probs=_numpy(logits[0].float().log_softmax(-1)),
        interventions=changes.describe(),
        windows=_windows(model.config, ("encoder_self", "decoder_self")),
    )


def _capture_one_stack(
    model: nn.Module, tokenizer: Tokenizer, text: str, target: str | None, qkv: bool, changes: Interventions
) -> Capture:
    """capture() of a decoder-only model (the text, then the target when given, as one decoder sequence) or of
    an encoder-only model (the text as the source); the other side's arrays are empty."""
    cfg = model.config
    H, D = cfg.n_heads, cfg.d_model
    decoder = cfg.shape == "decoder-only"
    seq = prepare_sequence(model, tokenizer, text, target) if decoder else prepare_source(model, tokenizer, text)
    changes.check(model, (0, len(seq.ids)) if decoder else (len(seq.ids), 0))
    with record(model, qkv=qkv, interventions=changes) as rec:
        batch = as_batch(model, seq.ids)
        if decoder:
            logits = model.decode(batch)  # (1, T, V)
        else:
            memory, _ = model.encode(batch)
            logits = model.logits(memory) if model.generator is not None else None  # (1, S, V)
    n = len(seq.ids)
    side = rec.positional["target" if decoder else "source"][-1]
    none_pe = np.zeros((0, D), dtype=np.float32)
    kinds = ("decoder_self",) if decoder else ("encoder_self",)
    names = ("q", "k", "v", "heads")
    vectors = {kind: [_stack_vectors(rec, kind, name) for name in names] for kind in kinds} if qkv else {}
    ids = np.asarray(seq.ids)
    no_ids = np.zeros((0,), dtype=np.int64)
    tokens = seq.tokens
    predicted = tokenizer.target.decode(logits[0].argmax(-1).tolist()) if logits is not None and decoder else []
    return Capture(
        source_tokens=[] if decoder else tokens,
        target_tokens=tokens if decoder else [],
        predicted_tokens=predicted,
        source_ids=no_ids if decoder else ids,
        target_ids=ids if decoder else no_ids,
        encoder_self=_stack(rec, "encoder_self", (0, H, 0, 0)),
        decoder_self=_stack(rec, "decoder_self", (0, H, 0, 0)),
        cross=np.zeros((0, H, n, 0) if decoder else (0, H, 0, n), dtype=np.float32),
        source_pe=none_pe if decoder else _numpy(side.rows),
        target_pe=_numpy(side.rows) if decoder else none_pe,
        source_embeddings=none_pe if decoder else _numpy(side.embeddings[0]),
        target_embeddings=_numpy(side.embeddings[0]) if decoder else none_pe,
        generated=False,
        source_truncated=0 if decoder else seq.truncated,
        target_truncated=seq.truncated if decoder else 0,
        qkv={kind: tuple(arrays[:3]) for kind, arrays in vectors.items()},
        head_outputs={kind: arrays[3] for kind, arrays in vectors.items()},
        position_bias={kind: _stack_vectors(rec, kind, "bias") for kind in kinds if rec.vectors.get((kind, 0, "bias"))},
        log_probs=None if logits is None else _numpy(logits[0].float().log_softmax(-1)),
        interventions=changes.describe(),
        windows=_windows(cfg, kinds),
    )


class DecodedTarget:
    """A target vocabulary whose encode() gives ids decoded already: capture() then runs its one teacher-forced pass
    on a model's own output (an encoder-decoder's decoded target, a decoder-only model's prompt and continuation as
    one sequence) without decoding it again. Everything else is the vocabulary's."""

    def __init__(self, vocab, ids) -> None:
        self._vocab, self._ids = vocab, list(ids)

    def encode(self, text: str) -> list[int]:
        return list(self._ids)

    def __getattr__(self, name: str):
        return getattr(self._vocab, name)
