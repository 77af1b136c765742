"""The model's own graph for the lecture pack: torch.onnx export of encode and teacher-forced decode.

    graphs = export_graphs(model)          # {"encoder": bytes, "decoder": bytes}: the graphs of the model's shape
    report = check_graphs(model, graphs, [ids, ...])  # onnxruntime against the PyTorch model, per output

Both graphs are traced through `Transformer.encode` / `Transformer.decode` inside a `record` block, so every
attention map the app records comes out of the graph under a name (the recording hooks' tensors become graph
outputs); nothing here repeats the network. Names and shapes (batch 1, sequence axes dynamic):

    encoder  in:  source_ids (1, S) int64
             out: memory (1, S, D); source_embeddings (1, S, D); source_positions (S, D);
                  encoder_self.{l} (1, H, S, S) for every encoder layer l
    decoder  in:  target_ids (1, T) int64 (<s> y_1 .. y_{T-1}), memory (1, S, D), source_ids (1, S) (its <pad> mask),
                  pad_mask (1,) bool: mask the <pad> keys of target_ids (True: as capture's teacher-forced pass) or not
                  (False: as each step of the app's cached greedy decoding, whose mask is causal only)
             out: log_probs (1, T, V) (log-softmax of the logits, as Capture.log_probs);
                  target_embeddings (1, T, D); target_positions (T, D);
                  decoder_self.{l} (1, H, T, T), cross.{l} (1, H, T, S) for every decoder layer l

A decoder-only model has the decoder graph alone, over its one sequence (no memory, no source, no pad_mask: its
mask is causal only), an encoder-only model the encoder graph alone (no memory; log_probs (1, S, V) first when it
has a masked-LM head), as model.capture records them:

    decoder (decoder-only)  in: target_ids (1, T)  out: log_probs, target_embeddings, target_positions, decoder_self.{l}
    encoder (encoder-only)  in: source_ids (1, S)  out: [log_probs,] source_embeddings, source_positions, encoder_self.{l}

The teacher-forced decoder graph is what check_graphs compares with the model. The page decodes an encoder-decoder
with export_step_graphs' two graphs (a one-file pack and a folder pack alike): the encoder with every decoder layer's
cross-attention keys and values, and a one-token step with the key/value cache as inputs and outputs. Both mask <pad>
keys as the model does (a typed "<pad>", a greedy output that writes one): the mask is passed to Transformer.decode
(self_mask), built from the model's own target_mask.

The graphs the page runs also give what it draws, so that its script reshapes nothing: each kind's maps as the pack
stores an input's (`encoder_self`, `decoder_self`, `cross`: (L, H + 1, Tq, Tk), the head average last, masked cells
NaN: _view), the newest position's `top_ids` / `top_probs` (TOP_K, greedy's choice first, the forced first token at a
first step: _top) and a step's rows as the decoding slider shows them (`step_self`, `step_cross`: (L * H, K)).
"""

from __future__ import annotations

import copy
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from model.network.recording import record

OPSET = 17
MAX_ABS = 1e-4  # the parity tolerance of log-probs and attention maps (float32 on both sides)
TOP_K = 5  # the candidates each decoding step shows (model.decoding.greedy_decode's top_k)


def _view(model: nn.Module, kind: str, maps: Sequence[torch.Tensor]) -> torch.Tensor:
    """One kind's maps (each (1, H, Tq, Tk)) in the layout the pack stores an input's maps in: (L, H + 1, Tq, Tk), the
    head average last, masked cells NaN (drawn grey, not weight 0): a decoder's keys after its query and, in a local
    layer, those outside its sliding window. A cached step's one query is the newest position (key Tk - 1)."""
    z = torch.cat(list(maps)).float()
    z = torch.cat([z, z.mean(1, keepdim=True)], 1)
    if kind != "decoder_self":
        return z
    queries = torch.arange(z.size(2)) + (z.size(3) - z.size(2))
    behind = queries.unsqueeze(-1) - torch.arange(z.size(3))  # (Tq, Tk): how far each key is behind its query
    cfg = model.config
    windows = [cfg.window_of(i) for i in range(len(maps))]
    masked = behind < 0
    if any(w is not None for w in windows):
        window = torch.tensor([2**31 if w is None else w for w in windows]).view(-1, 1, 1, 1)
        masked = masked | (behind >= window)  # (L, 1, Tq, Tk)
    return z.masked_fill(masked, float("nan"))


def _top(model: nn.Module, log_probs: torch.Tensor, first: torch.Tensor | None = None) -> tuple:
    """The newest position's TOP_K most likely next tokens (largest first, ties: the lower id) and their
    probabilities, as greedy decoding chooses and shows them. first (a bool tensor: a cached step reading the first
    token): the forced first token (BART, mBART; model.decoding.core.DecoderSession.step) has probability 1."""
    lp = log_probs[0, -1]
    forced = model.config.forced_bos_id
    if forced is not None and first is not None:
        only = torch.full_like(lp, float("-inf")).masked_fill(torch.arange(lp.size(0)) == forced, 0.0)
        lp = torch.where(first, only, lp)
    values, ids = lp.topk(min(TOP_K, model.config.tgt_vocab_size))
    return ids, values.exp()


def output_names(model: nn.Module) -> dict[str, list[str]]:
    """The names of each graph's outputs, in order (see the module docstring)."""
    cfg = model.config
    if cfg.shape == "decoder-only":
        return {
            "decoder": ["log_probs", "target_embeddings", "target_positions"]
            + [f"decoder_self.{i}" for i in range(cfg.n_decoder_layers)]
            + ["decoder_self", "top_ids", "top_probs"]
        }
    if cfg.shape == "encoder-only":
        head = ["log_probs"] if cfg.output_head != "none" else []
        return {
            "encoder": head
            + ["source_embeddings", "source_positions"]
            + [f"encoder_self.{i}" for i in range(cfg.n_encoder_layers)]
            + ["encoder_self"]
        }
    return {
        "encoder": ["memory", "source_embeddings", "source_positions"]
        + [f"encoder_self.{i}" for i in range(cfg.n_encoder_layers)],
        "decoder": ["log_probs", "target_embeddings", "target_positions"]
        + [f"decoder_self.{i}" for i in range(cfg.n_decoder_layers)]
        + [f"cross.{i}" for i in range(cfg.n_decoder_layers)],
    }


class _Encoder(nn.Module):
    """encode() with every recorded map as an output (the hooks' tensors, in layer order). Use it in eval mode:
    torch.onnx.export restores the wrapper's mode on everything inside it when it is done."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, source_ids: torch.Tensor):
        with record(self.model) as rec:
            memory, _ = self.model.encode(source_ids)
        pe = rec.positional["source"][0]
        maps = [rec.attention[("encoder_self", i)][0] for i in rec.layers("encoder_self")]
        return (memory, pe.embeddings, pe.rows, *maps)


class _Decoder(nn.Module):
    """Teacher-forced decode() over the whole prefix, log-softmax of the logits, every recorded map."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, target_ids: torch.Tensor, memory: torch.Tensor, source_ids: torch.Tensor, pad_mask: torch.Tensor):
        model = self.model
        # The model's own mask both ways: of these ids (their <pad> keys masked, as a teacher-forced pass), and of ids
        # without a <pad> (causal only: what a cached greedy step masks); pad_mask (1,) picks one.
        other = torch.full_like(target_ids, (model.config.pad_id + 1) % model.config.tgt_vocab_size)
        mask = (pad_mask & model.target_mask(target_ids)) | (~pad_mask & model.target_mask(other))
        with record(model) as rec:
            logits = model.decode(target_ids, memory, model.source_mask(source_ids), self_mask=mask)
        pe = rec.positional["target"][0]
        selfs = [rec.attention[("decoder_self", i)][0] for i in rec.layers("decoder_self")]
        cross = [rec.attention[("cross", i)][0] for i in rec.layers("cross")]
        return (logits.float().log_softmax(-1), pe.embeddings, pe.rows, *selfs, *cross)


class _OneStack(nn.Module):
    """A decoder-only model's decode() over its whole sequence, or an encoder-only model's encode() and its
    masked-LM head: log-probs (when there are some), the side's embeddings and positions, every recorded map."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor):
        model = self.model
        decoder = model.config.shape == "decoder-only"
        with record(model) as rec:
            if decoder:
                logits = model.decode(ids)  # (1, T, V)
            else:
                memory, _ = model.encode(ids)
                logits = model.logits(memory) if model.generator is not None else None  # (1, S, V)
        kind, side = ("decoder_self", "target") if decoder else ("encoder_self", "source")
        pe = rec.positional[side][0]
        maps = [rec.attention[(kind, i)][0] for i in rec.layers(kind)]
        head = () if logits is None else (logits.float().log_softmax(-1),)
        top = _top(model, head[0]) if decoder else ()  # the page's greedy continuation reads the last position's
        return (*head, pe.embeddings, pe.rows, *maps, _view(model, kind, maps), *top)


def _export(module: nn.Module, args: tuple, inputs: list[str], outputs: list[str], axes: dict) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python values (sizes, the padding checks)
        torch.onnx.export(
            module,
            args,
            buf,
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
    return _drop_noop_casts(buf.getvalue())


def _drop_noop_casts(graph_bytes: bytes) -> bytes:
    """Remove Cast nodes whose input already has the target type (RMSNorm's x.float() on float32). Such chains are
    valid ONNX, but onnxruntime's graph optimizer drops one of them and leaves its consumers reading a missing name."""
    import onnx

    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(graph_bytes))
    graph = proto.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.value_info, *graph.output)}
    types.update({t.name: t.data_type for t in graph.initializer})
    outputs = {o.name for o in graph.output}
    rename: dict[str, str] = {}
    keep = []
    for node in graph.node:
        node.input[:] = [rename.get(x, x) for x in node.input]
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if (
            node.op_type == "Cast"
            and to is not None
            and types.get(node.input[0]) == to
            and node.output[0] not in outputs
        ):
            rename[node.output[0]] = node.input[0]
            continue
        keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)
    return proto.SerializeToString()


def export_graphs(model: nn.Module) -> dict[str, bytes]:
    """The encoder and decoder graphs of `model` (eval mode, on the CPU) as ONNX bytes.

    The trace runs on a copy: tracing sets the module's mode, which other sessions of a server sharing the model must
    never see."""
    if model.training:
        raise ValueError("export a model in eval mode (dropout off)")
    model = copy.deepcopy(model)
    names = output_names(model)
    cfg = model.config
    if cfg.shape != "encoder-decoder":
        return _export_one_stack(model, names)
    # Traced on ids holding a <pad> on both sides and at a length > 1: the model's masks are None when nothing is
    # padded (a decision on the ids that a trace would freeze); here its padding and causal masks are built, so the
    # graph computes them from the ids it is given (all true without a <pad>: the same numbers).
    S = T = max(3, min(5, cfg.max_len))
    src = torch.full((1, S), 4 % cfg.src_vocab_size, dtype=torch.long)
    src[0, 1] = cfg.pad_id
    tgt = torch.full((1, T), 4 % cfg.tgt_vocab_size, dtype=torch.long)
    tgt[0, 0], tgt[0, 2] = cfg.bos_id, cfg.pad_id
    on = torch.ones(1, dtype=torch.bool)
    seq = {"source_ids": {1: "S"}, "memory": {1: "S"}, "source_embeddings": {1: "S"}, "source_positions": {0: "S"}}
    seq.update({n: {2: "S", 3: "S"} for n in names["encoder"][3:]})
    with torch.no_grad():
        memory = model.encode(src)[0]
        encoder = _export(_Encoder(model).eval(), (src,), ["source_ids"], names["encoder"], seq)
        axes = {"target_ids": {1: "T"}, "memory": {1: "S"}, "log_probs": {1: "T"}}
        axes.update({"target_embeddings": {1: "T"}, "target_positions": {0: "T"}})
        axes.update({n: {2: "T", 3: "T"} for n in names["decoder"] if n.startswith("decoder_self.")})
        axes.update({n: {2: "T", 3: "S"} for n in names["decoder"] if n.startswith("cross.")})
        axes["source_ids"] = {1: "S"}
        inputs = ["target_ids", "memory", "source_ids", "pad_mask"]
        decoder = _export(_Decoder(model).eval(), (tgt, memory, src, on), inputs, names["decoder"], axes)
    return {"encoder": encoder, "decoder": decoder}


def _export_one_stack(model: nn.Module, names: dict[str, list[str]]) -> dict[str, bytes]:
    """The one graph of a decoder-only or encoder-only model (traced on ids holding a <pad>, as export_graphs)."""
    cfg = model.config
    ((graph, outputs),) = names.items()
    decoder = graph == "decoder"
    n = max(3, min(5, cfg.max_len))
    ids = torch.full((1, n), 4 % cfg.src_vocab_size, dtype=torch.long)
    ids[0, 0], ids[0, 1] = cfg.bos_id, cfg.pad_id
    axis, inp = ("T", "target_ids") if decoder else ("S", "source_ids")
    emb, pos = ("target_embeddings", "target_positions") if decoder else ("source_embeddings", "source_positions")
    axes = {inp: {1: axis}, emb: {1: axis}, pos: {0: axis}, "log_probs": {1: axis}}
    axes.update({n: {2: axis, 3: axis} for n in outputs if "_self" in n})
    with torch.no_grad():
        return {graph: _export(_OneStack(model).eval(), (ids,), [inp], outputs, axes)}


class _Step(nn.Module):
    """One cached step of the decoder (decode(..., cache, last_only=True)): the newest token, the keys and values of
    the tokens before it, each layer's cross-attention keys and values (Transformer.cross_cache, computed once by the
    encoder graph). The cache is rebuilt from the flat tensors: its key positions are 0 .. P-1 (those a fresh
    DecoderCache accumulates over P tokens). The step's self-attention mask is the last row of the model's own
    target_mask over key_ids (every token so far, the newest last): with their <pad> keys masked (pad_mask True, as
    the capture's teacher-forced pass) or causal only (False, as each step of the app's cached greedy decoding)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, target_ids, key_ids, pad_mask, source_ids, *past_and_cross: torch.Tensor):
        from model.network.attention import KVCache
        from model.network.transformer import DecoderCache, LayerCache

        model = self.model
        n = len(model.decoder.layers)
        past, cross = past_and_cross[: 2 * n], past_and_cross[2 * n :]
        cache = DecoderCache(
            [
                LayerCache(KVCache(past[2 * i], past[2 * i + 1]), KVCache(cross[2 * i], cross[2 * i + 1]))
                for i in range(n)
            ]
        )
        cache.positions = torch.arange(past[0].size(2), device=target_ids.device)  # (P,) the cached keys' positions
        # the newest query's row of the model's own mask over every key so far: (1, 1, 1, P + 1)
        other = torch.full_like(key_ids, (model.config.pad_id + 1) % model.config.tgt_vocab_size)
        masked, causal = model.target_mask(key_ids)[:, :, -1:], model.target_mask(other)[:, :, -1:]
        mask = (pad_mask & masked) | (~pad_mask & causal)
        with record(model) as rec:
            logits = model.decode(
                target_ids, None, model.source_mask(source_ids), cache, last_only=True, self_mask=mask
            )
        pe = rec.positional["target"][0]
        selfs = [rec.attention[("decoder_self", i)][0] for i in rec.layers("decoder_self")]
        crosses = [rec.attention[("cross", i)][0] for i in rec.layers("cross")]
        present = [t for layer in cache.layers for t in (layer.self_attn.k, layer.self_attn.v)]
        log_probs = logits.float().log_softmax(-1)
        # the page's views: the step's maps as the capture's rows, its rows as the decoding slider's, its candidates
        views = (_view(model, "decoder_self", selfs), _view(model, "cross", crosses))
        rows = (torch.cat(selfs)[:, :, 0].flatten(0, 1), torch.cat(crosses)[:, :, 0].flatten(0, 1))  # (L * H, K)
        top = _top(model, log_probs, torch.ones_like(key_ids).sum() == 1)
        return (log_probs, pe.embeddings, pe.rows, *selfs, *crosses, *present, *views, *rows, *top)


class _CrossEncoder(nn.Module):
    """encode() as _Encoder, then every decoder layer's cross-attention keys and values of the memory
    (Transformer.cross_cache): the encoder graph of a pack that decodes with the step graph."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, source_ids: torch.Tensor):
        out = _Encoder(self.model)(source_ids)
        kv = [t for pair in self.model.cross_cache(out[0]) for t in pair]
        return (*out, *kv, _view(self.model, "encoder_self", out[3:]))


def cross_names(model: nn.Module) -> list[str]:
    """The cross-attention keys and values the step encoder outputs and the step graph reads, in order."""
    return [f"cross_{w}.{i}" for i in range(model.config.n_decoder_layers) for w in ("key", "value")]


def step_names(model: nn.Module) -> tuple[list[str], list[str]]:
    """(inputs, outputs) of the step graph, in order."""
    n = model.config.n_decoder_layers
    past = [f"past_{w}.{i}" for i in range(n) for w in ("key", "value")]
    outputs = ["log_probs", "target_embeddings", "target_positions"]
    outputs += [f"decoder_self.{i}" for i in range(n)] + [f"cross.{i}" for i in range(n)]
    outputs += [f"present_{w}.{i}" for i in range(n) for w in ("key", "value")]
    outputs += ["decoder_self", "cross", "step_self", "step_cross", "top_ids", "top_probs"]
    return ["target_ids", "key_ids", "pad_mask", "source_ids", *past, *cross_names(model)], outputs


def export_step_graphs(model: nn.Module) -> dict[str, bytes]:
    """An encoder-decoder's graphs for cached decoding (the pack of a model too large to rerun the whole prefix at
    every step), {"encoder": bytes, "step": bytes}:

    encoder  in:  source_ids (1, S)
             out: the encoder graph's outputs (memory, source_embeddings, source_positions, encoder_self.{l}), then
                  cross_key.{l}, cross_value.{l} (1, H_kv, S, dk): Transformer.cross_cache(memory), computed once
    step     in:  target_ids (1, 1) the newest token, key_ids (1, P + 1) every token so far (the newest last),
                  pad_mask (1,) bool (see _Step), source_ids (1, S) (its <pad> mask),
                  past_key.{l}, past_value.{l} (1, H_kv, P, dk) the self-attention keys and values of the P tokens
                  before, cross_key.{l}, cross_value.{l} from the encoder graph
             out: log_probs (1, 1, V), target_embeddings (1, 1, D), target_positions (1, D),
                  decoder_self.{l} (1, H, 1, P + 1) and cross.{l} (1, H, 1, S): the step's attention rows,
                  present_key.{l}, present_value.{l} (1, H_kv, P + 1, dk): the cache for the next step

    The first step passes P = 0. Over <s> y_1 .. y_n, step t's rows are row t of the teacher-forced pass's maps and
    log-probs when pad_mask is True (or when no y is <pad>)."""
    if model.training:
        raise ValueError("export a model in eval mode (dropout off)")
    if model.config.shape != "encoder-decoder":
        raise ValueError("the step graph is an encoder-decoder's")
    model = copy.deepcopy(model)
    cfg = model.config
    inputs, outputs = step_names(model)
    enc_names = output_names(model)["encoder"] + cross_names(model) + ["encoder_self"]
    S = max(3, min(5, cfg.max_len))
    src = torch.full((1, S), 4 % cfg.src_vocab_size, dtype=torch.long)
    src[0, 1] = cfg.pad_id  # a <pad> in the trace: the graph builds the source mask from the ids it is given
    seq = {"source_ids": {1: "S"}, "memory": {1: "S"}, "source_embeddings": {1: "S"}, "source_positions": {0: "S"}}
    seq.update({n: {2: "S", 3: "S"} for n in enc_names if n.startswith("encoder_self")})
    seq.update({n: {2: "S"} for n in cross_names(model)})
    with torch.no_grad():
        encoder = _export(_CrossEncoder(model).eval(), (src,), ["source_ids"], enc_names, seq)
        memory, mask = model.encode(src)
        cache = model.new_cache(memory)
        model.decode(torch.tensor([[cfg.bos_id, 4 % cfg.tgt_vocab_size]]), memory, mask, cache)  # P = 2 traced
        past = [t for layer in cache.layers for t in (layer.self_attn.k, layer.self_attn.v)]
        cross = [t for layer in cache.layers for t in (layer.cross_attn.k, layer.cross_attn.v)]
        # key_ids hold a <pad> (not first) in the trace, so the graph builds the model's padding mask from them
        keys = torch.tensor([[cfg.bos_id, cfg.pad_id, 5 % cfg.tgt_vocab_size]])
        axes = {"source_ids": {1: "S"}, "key_ids": {1: "P1"}}
        axes.update({n: {2: "P"} for n in inputs if n.startswith("past_")})
        axes.update({n: {2: "S"} for n in inputs if n.startswith("cross_")})
        axes.update({n: {3: "P1"} for n in outputs if n.startswith("decoder_self.")})
        axes.update({n: {3: "S"} for n in outputs if n.startswith("cross.")})
        axes.update({n: {2: "P1"} for n in outputs if n.startswith("present_")})
        axes.update({"decoder_self": {3: "P1"}, "cross": {3: "S"}, "step_self": {1: "P1"}, "step_cross": {1: "S"}})
        new = torch.tensor([[5 % cfg.tgt_vocab_size]])
        on = torch.ones(1, dtype=torch.bool)
        step = _export(_Step(model).eval(), (new, keys, on, src, *past, *cross), inputs, outputs, axes)
    return {"encoder": encoder, "step": step}


@dataclass
class Parity:
    """The largest absolute difference of each output over the checked inputs, and whether all are within `tol`."""

    worst: dict[str, float]
    tol: float

    @property
    def ok(self) -> bool:
        return all(v <= self.tol for v in self.worst.values())


def sessions(graphs: dict[str, bytes]) -> dict:
    """onnxruntime sessions of the two graphs (CPU, one thread)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return {k: ort.InferenceSession(v, opts, providers=["CPUExecutionProvider"]) for k, v in graphs.items()}


def run_graphs(
    runs: dict, source: Sequence[int], target: Sequence[int], pad_mask: bool = True
) -> dict[str, np.ndarray]:
    """Every output of both graphs for one source and one decoder input, by name (pad_mask: see the docstring).
    A decoder-only model's graph reads `target` (its whole sequence), an encoder-only model's `source`."""
    if len(runs) == 1:
        ((graph, run),) = runs.items()
        feed = {"source_ids": source} if graph == "encoder" else {"target_ids": target}
        feeds = {k: np.array([v], dtype=np.int64) for k, v in feed.items()}
        return dict(zip([o.name for o in run.get_outputs()], run.run(None, feeds)))
    enc = runs["encoder"]
    out = dict(
        zip([o.name for o in enc.get_outputs()], enc.run(None, {"source_ids": np.array([source], dtype=np.int64)}))
    )
    dec = runs["decoder"]
    feeds = {"target_ids": np.array([target], dtype=np.int64), "memory": out["memory"]}
    feeds["source_ids"] = np.array([source], dtype=np.int64)
    feeds["pad_mask"] = np.array([pad_mask])
    out.update(zip([o.name for o in dec.get_outputs()], dec.run(None, feeds)))
    return out


def torch_outputs(model: nn.Module, source: Sequence[int], target: Sequence[int]) -> dict[str, np.ndarray]:
    """The same outputs from the PyTorch model (its own encode/decode, recorded)."""
    src = torch.tensor([list(source)], dtype=torch.long)
    tgt = torch.tensor([list(target)], dtype=torch.long)
    names = output_names(model)
    if model.config.shape != "encoder-decoder":
        ((graph, outputs),) = names.items()
        with torch.no_grad():
            out = _OneStack(model).eval()(tgt if graph == "decoder" else src)
        return {n: t.numpy() for n, t in zip(outputs, out)}
    with torch.no_grad():
        enc = _Encoder(model).eval()(src)
        dec = _Decoder(model).eval()(tgt, enc[0], src, torch.ones(1, dtype=torch.bool))
    return {n: t.numpy() for n, t in zip(names["encoder"] + names["decoder"], (*enc, *dec))}


def check_graphs(
    model: nn.Module,
    graphs: dict[str, bytes],
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    tol: float = MAX_ABS,
) -> Parity:
    """Run every (source ids, decoder input ids) pair through onnxruntime and through `model`: the largest absolute
    difference per output name (memory, log-probs, every attention map)."""
    runs = sessions(graphs)
    worst: dict[str, float] = {}
    for source, target in pairs:
        got, want = run_graphs(runs, source, target), torch_outputs(model, source, target)
        for name, value in want.items():
            if got[name].shape != value.shape:
                raise AssertionError(f"{name}: shape {got[name].shape} != {value.shape}")
            gap = np.abs(got[name].astype(np.float64) - value.astype(np.float64))
            gap[np.isnan(got[name]) & np.isnan(value)] = 0.0  # a masked cell on both sides
            diff = float(np.max(gap, initial=0.0))
            worst[name] = max(worst.get(name, 0.0), diff)
    return Parity(worst, tol)
