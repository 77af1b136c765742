"""One teacher-forced pass with everything recorded: the record that crosses from model/ to viz/."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
import torch
from torch import nn

from ..decoding import greedy_ids
from ..interventions import Interventions
from ..network.recording import ATTENTION_KINDS, Recorder, record
from ..text.inputs import SourceInput, as_batch, prepare_sequence, prepare_source, prepare_target, require_eval
from ..text.tokenizer import Tokenizer
from .lazy_capture import LazyCapture, written_tokens


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
        """T: the token each decoder row writes, the app's one row convention (lazy_capture.written_tokens): row j
        reads decoder input target_tokens[j] and writes target_tokens[j + 1]; the last row the model's own next
        token. [] without a decoder."""
        return written_tokens(self.target_tokens, self.predicted_tokens)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array field by name (for .npz export; the qkv and head_outputs dicts are not included)."""
        return {k: v for k, v in vars(self).items() if isinstance(v, np.ndarray)}


def _windows(config, kinds) -> dict[str, list[int | None]]:
    """Capture.windows: each self-attention layer's sliding window, for a model with any local layer."""
    if config.sliding_window is None:
        return {}
    layers = {"encoder_self": config.n_encoder_layers, "decoder_self": config.n_decoder_layers}
    return {kind: [config.window_of(i) for i in range(layers[kind])] for kind in kinds if layers.get(kind)}


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def _stack_vectors(recorder: Recorder, kind: str, name: str) -> np.ndarray:
    """(L, H, T, dk) from the one tensor each layer recorded for probe `name`, batch item 0."""
    layers = sorted(layer for k, layer in recorder.lazy_records if k == kind)
    return _numpy(torch.stack([recorder.vectors[(kind, i, name)][-1][0] for i in layers]))


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
    lazy: bool = False,
    top_k: int = 5,
    block: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    output_ids: Sequence[int] | None = None,
) -> Capture | LazyCapture:
    """Run source (and target) through the model once, recording every attention map and PE row.

    With target=None the decoder input is the model's own greedy output for the source.
    With qkv=True also each head's queries, keys, values and outputs (Capture.qkv, Capture.head_outputs).
    Interventions change this pass only (model/interventions/): an `Interventions` value, or the keywords
    ablate=[(kind, layer, head), ...] (zeroes those heads' outputs before W^O) and positional="off" | "shuffled"
    (permutation from seed) | "shifted" (every position + shift). With target=None the decoder input stays the
    unchanged model's greedy output, so log_probs say how the change affects the probability of that output.
    Capture.interventions records what was changed.

    lazy=True returns the LazyCapture of the same pass (model/analysis/lazy_capture.py): one fused forward that
    keeps O(L·T·D) numbers, every map computed on request in row blocks of `block` rows (default: about 8 MB a
    block), each position's top_k tokens. lazy=False (default) is that capture materialized: every map and the
    (T, V) log-probabilities held at once, for short inputs. progress(done, total) is called after each attention
    module of the pass (it may raise to stop it). output_ids: the model's own output, decoded already (</s> left
    out), read instead of a target text: an encoder-decoder's decoder reads <s> + output_ids, a decoder-only model
    the text's ids then output_ids as one sequence; the capture is marked generated.
    Safe to call from many threads on one shared model: each call records only its own pass.
    """
    require_eval(model)
    # bad arguments are named before any work
    changes = Interventions.given(interventions, ablate=ablate, positional=positional, shift=shift, seed=seed)
    cap = _lazy_pass(model, tokenizer, source, target, qkv, changes, top_k, block, progress, output_ids)
    return cap if lazy else materialize(cap)


def _lazy_pass(
    model: nn.Module,
    tokenizer: Tokenizer,
    text: str,
    target: str | None,
    qkv: bool,
    changes: Interventions,
    top_k: int,
    block: int | None,
    progress: Callable[[int, int], None] | None,
    output_ids: Sequence[int] | None = None,
) -> LazyCapture:
    """The one pass of every capture: an encoder-decoder reads the source, then the target (or its own greedy
    output); a decoder-only model the text, then the target when given, as one decoder sequence; an encoder-only
    model the text as the source. The side a shape lacks is empty."""
    cfg = model.config
    H, D = cfg.n_heads, cfg.d_model
    total = sum(1 for _ in model.attention_modules())
    tell = None if progress is None else (lambda done: progress(done, total))
    vocab = tokenizer.target
    no_ids, none_pe = np.zeros((0,), dtype=np.int64), np.zeros((0, D), dtype=np.float32)
    source_cut = target_cut = 0
    generated = False
    if cfg.shape == "encoder-decoder":
        src = prepare_source(model, tokenizer, text)
        if output_ids is not None:
            room = cfg.max_len - 1
            tgt_ids, target_cut, generated = [vocab.bos_id, *output_ids[:room]], max(0, len(output_ids) - room), True
        elif target is None:
            out = greedy_ids(model, [src.ids], bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]  # fits max_len - 1
            tgt_ids, generated = [vocab.bos_id] + [i for i in out if i != vocab.eos_id], True
        else:
            tgt_ids, target_cut = prepare_target(model, vocab, target)
        src_ids, source_cut, source_tokens, target_tokens = src.ids, src.truncated, src.tokens, vocab.decode(tgt_ids)
    elif cfg.shape == "decoder-only":
        seq = prepare_sequence(model, tokenizer, text, None if output_ids is not None else target)
        if output_ids is not None:  # the text's ids, then the model's own continuation
            whole, generated = [*seq.ids, *output_ids], True
            seq = SourceInput(
                whole[: cfg.max_len], vocab.decode(whole[: cfg.max_len]), max(0, len(whole) - cfg.max_len)
            )
        src_ids, tgt_ids, target_cut, source_tokens, target_tokens = [], seq.ids, seq.truncated, [], seq.tokens
    else:
        src = prepare_source(model, tokenizer, text)
        src_ids, tgt_ids, source_cut, source_tokens, target_tokens = src.ids, [], src.truncated, src.tokens, []
    changes.check(model, (len(src_ids), len(tgt_ids)))
    with record(model, qkv=qkv, interventions=changes, lazy=True, progress=tell) as rec:
        hidden = None
        if cfg.has_encoder:
            hidden, mask = model.encode(as_batch(model, src_ids))  # (1, S, D)
        if cfg.has_decoder:
            hidden = model.decode(as_batch(model, tgt_ids), hidden, mask if cfg.has_encoder else None, hidden=True)
    head = model.logits if model.generator is not None else None
    written = tgt_ids if cfg.has_decoder else src_ids
    actual = [written[t] for t in range(len(written))] if not cfg.has_decoder else [*written[1:], None]
    pe = {side: records[-1] for side, records in rec.positional.items()}
    kinds = [kind for kind in ATTENTION_KINDS if any(k == kind for k, _ in rec.lazy_records)]
    names = ("q", "k", "v", "heads")
    vectors = {kind: [_stack_vectors(rec, kind, name) for name in names] for kind in kinds} if qkv else {}
    fields = dict(
        source_tokens=source_tokens,
        target_tokens=target_tokens,
        source_ids=np.asarray(src_ids, dtype=np.int64) if src_ids else no_ids,
        target_ids=np.asarray(tgt_ids, dtype=np.int64) if tgt_ids else no_ids,
        source_pe=_numpy(pe["source"].rows) if "source" in pe else none_pe,
        target_pe=_numpy(pe["target"].rows) if "target" in pe else none_pe,
        source_embeddings=_numpy(pe["source"].embeddings[0]) if "source" in pe else none_pe,
        target_embeddings=_numpy(pe["target"].embeddings[0]) if "target" in pe else none_pe,
        generated=generated,
        source_truncated=source_cut,
        target_truncated=target_cut,
        interventions=changes.describe(),
        windows=_windows(cfg, ("encoder_self", "decoder_self")),
        qkv={kind: tuple(arrays[:3]) for kind, arrays in vectors.items()},
        head_outputs={kind: arrays[3] for kind, arrays in vectors.items()},
    )
    records = {key: calls[-1] for key, calls in rec.lazy_records.items()}
    cap = LazyCapture(records, H, fields, None if hidden is None else hidden[0], head, actual, top_k, block)
    if qkv:  # the positional bias of each layer (the same for every layer of a stack), (L, H, Tq, Tk)
        cap.position_bias = {
            kind: np.stack([_numpy(records[(kind, i)].positions.bias) for i in range(cap.n_layers(kind))])
            for kind in kinds
            if records[(kind, 0)].positions is not None
        }
    cap.predicted_tokens = vocab.decode(cap.top_ids[:, 0].tolist()) if cfg.has_decoder and head is not None else []
    return cap


def materialize(cap: LazyCapture) -> Capture:
    """The eager Capture of a lazy one: every map of every kind and the (T, V) log-probabilities computed and held
    (memory grows with layers x heads x tokens squared: for short inputs and what needs every map)."""
    H, S, T = cap.n_heads, len(cap.source_ids), len(cap.target_ids)
    empty = {"encoder_self": (0, H, 0, 0), "decoder_self": (0, H, 0, 0), "cross": (0, H, T, S)}

    def stack(kind: str) -> np.ndarray:
        maps = [cap.layer_maps(kind, i) for i in range(cap.n_layers(kind))]
        return np.stack(maps) if maps else np.zeros(empty[kind], dtype=np.float32)

    fields = {name: getattr(cap, name) for name in CAPTURE_FIELDS}
    return Capture(
        encoder_self=stack("encoder_self"),
        decoder_self=stack("decoder_self"),
        cross=stack("cross"),
        log_probs=cap.log_probs(),
        **fields,
    )


CAPTURE_FIELDS = tuple(
    f.name for f in fields(Capture) if f.name not in ("encoder_self", "decoder_self", "cross", "log_probs")
)
