"""The lazy capture: what one fused forward pass kept, and any attention map computed from it on request.

`capture(model, tokenizer, text, lazy=True)` (model/analysis/capture.py) runs the model once on its fused attention
path inside `record(model, lazy=True)`: each attention module keeps its queries and keys after RoPE (one key per
key/value head under grouped-query attention), its mask and, for ALiBi and T5's relative bias, the stack's
positional module, which gives the bias of any block of query rows (model/network/attention.py LazyAttention).
That is O(L·T·D) numbers, never O(L·H·T²). A map is then computed by the model's own score function
(`attention_weights`, the one the eager path calls) in row blocks, so at most one block of weights is held:

    cap.map(kind, layer, head)               (Tq, Tk) float32, the numbers of the eager capture's map
    cap.map_rows(kind, layer, head, rows)    some rows of it
    cap.pooled(kind, layer, head, size, how) at most size x size cells: the max or mean over blocks of cells
    cap.summary(kind)                        per-head statistics (L, H) from one streaming pass over every map
    cap.top_ids / top_log_probs / next_log_probs / distribution(position): the output side, without a (T, V) array

A switched-off head changes nothing in its own map (its output is zeroed before W^O); the later layers' queries and
keys kept here come from the real (intervened) pass, so their maps show the change.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np
import torch

from ..network.attention import LazyAttention, attention_weights

BLOCK_NUMBERS = 2**21  # weights in one block of rows (8 MB of float32), all the heads the block computes together
# positions of one block of logits at least: each block reads the whole output layer (Qwen2's 151,936 x 896: 545 MB),
# so blocks of 13 positions (8 MB) read it 315 times for 4,096 tokens; 128 read it 32 times (a block of 78 MB)
OUTPUT_ROWS = 128
POOLED_KEPT = 64  # pooled maps kept (at most 256 x 256 float32 each: 16 MB)
LEAST_POSITIVE = torch.finfo(torch.float32).smallest_normal * 2**-23  # the least positive float32 (a subnormal)
SUMMARY_NAMES = ("first_token", "previous_token", "diagonal", "mean_distance", "entropy")
CELL_OPS = 30  # operations of a map's cell beyond its scores' dot product: bias, mask, softmax, a summary's terms


def written_tokens(target_tokens: list[str], predicted_tokens: list[str]) -> list[str]:
    """T: the token each decoder row writes, the app's one row convention: row j reads decoder input
    target_tokens[j] and writes target_tokens[j + 1]; the last row writes the model's own next token
    (predicted_tokens[-1]: </s> after a finished greedy output, the token after a decoder-only model's text).
    [] without a decoder. Capture.written_tokens and LazyCapture.written_tokens."""
    if not target_tokens:
        return []
    return [*target_tokens[1:], predicted_tokens[-1] if predicted_tokens else ""]


class RowMask:
    """A boolean mask (1, Tq, Tk) kept as what it is made of: keys j <= i + offset when causal, and the keys kept
    (Tk,) (padding), or else the mask itself. rows(start, stop) -> (1, r, Tk) or None (every key visible)."""

    def __init__(self, mask: torch.Tensor | None, n_queries: int, n_keys: int):
        self.full: torch.Tensor | None = None
        self.keep: torch.Tensor | None = None
        self.offset: int | None = None  # causal: row i sees keys j <= i + offset
        self._triangles: dict[tuple[int, int], torch.Tensor] = {}
        if mask is None:
            return
        if mask.size(-2) == 1:  # key padding only
            self.keep = mask.reshape(n_keys)
            return
        offset = n_keys - n_queries
        keep = mask.reshape(n_queries, n_keys)[-1].clone()  # the last row sees every key it may see
        causal = torch.ones(n_queries, n_keys, dtype=torch.bool, device=mask.device).tril(offset)
        if torch.equal(mask.reshape(n_queries, n_keys), causal & keep):
            self.offset, self.keep = offset, keep
        else:  # any other mask: kept as it is
            self.full = mask.reshape(1, n_queries, n_keys)

    def first_hidden(self, start: int, kend: int) -> int:
        """The first key some row >= start may not see (a causal mask without padding: start + offset + 1; keys
        before it are every row's), or 0 when the mask is another kind (it then covers every key)."""
        if self.offset is None or self.full is not None or (self.keep is not None and not bool(self.keep.all())):
            return 0
        return max(0, min(kend, start + self.offset + 1))

    def triangle(self, rows: int, width: int) -> torch.Tensor:
        """(1, rows, width): row i sees column c when c < i (the keys first_hidden(start).. of a causal block),
        kept for the next block of the same shape (every layer's blocks share it)."""
        key = (rows, width)
        if key not in self._triangles:
            if len(self._triangles) >= 4:
                self._triangles.clear()
            i = torch.arange(rows)[:, None]
            self._triangles[key] = (torch.arange(width)[None, :] < i)[None]
        return self._triangles[key]

    def key_end(self, stop: int, n_keys: int) -> int:
        """Keys past this index are hidden from rows < stop (a causal mask): a block need not compute them."""
        return n_keys if self.offset is None else max(1, min(n_keys, stop + self.offset))

    def rows(self, start: int, stop: int, keys: int) -> torch.Tensor | None:
        """(1, stop - start, keys) of the first `keys` keys, or None when nothing is masked."""
        if self.full is not None:
            return self.full[:, start:stop, :keys]
        mask = None
        if self.offset is not None:
            i = torch.arange(start, stop)[:, None]
            mask = torch.arange(keys)[None, :] <= i + self.offset  # (r, keys)
        if self.keep is not None and not bool(self.keep[:keys].all()):
            mask = self.keep[None, :keys] if mask is None else mask & self.keep[None, :keys]
        return None if mask is None else mask.reshape(1, -1, keys).expand(1, stop - start, keys)


class LazyCapture:
    """What a lazy capture kept, and every map on request. Attributes as the eager `Capture` names them
    (source_tokens, target_tokens, predicted_tokens, source_ids, target_ids, source_pe, target_pe,
    source_embeddings, target_embeddings, generated, source_truncated, target_truncated, interventions; qkv,
    head_outputs and position_bias when captured with qkv=True), plus the output side:

    top_ids (N, k) int64 and top_log_probs (N, k) float32: each position's k most likely tokens (N = T decoder
    positions, or S positions of an encoder-only model's masked-LM head; (0, k) without an output layer);
    next_log_probs (N,) float32: the log-probability of the token that actually comes next (a decoder row t: input
    t + 1, NaN on the last row; a masked-LM position: its own token). `distribution(position)` gives one position's
    (V,) log-probabilities. kinds: the attention kinds this model has (decoder_self for a decoder-only model)."""

    def __init__(
        self,
        records: Mapping[tuple[str, int], LazyAttention],
        n_heads: int,
        fields: Mapping,
        hidden: torch.Tensor | None,
        head: Callable[[torch.Tensor], torch.Tensor] | None,
        actual: list[int | None],
        top_k: int = 5,
        block: int | None = None,
    ):
        self._records = dict(records)
        self._masks: dict[tuple[str, int], RowMask] = {}
        shared: dict[int, RowMask] = {}  # one RowMask per mask tensor: a stack's layers share theirs
        for key, rec in self._records.items():
            Tq, Tk = rec.q.size(1), rec.k.size(1)
            ident = id(rec.mask) if rec.mask is not None else -1
            if ident not in shared:
                shared[ident] = RowMask(rec.mask, Tq, Tk)
            self._masks[key] = shared[ident]
            self._records[key] = dataclasses.replace(rec, mask=None)  # the mask: RowMask
        self.n_heads = n_heads
        self.block = block  # rows per block (None: from BLOCK_NUMBERS)
        self.qkv: dict = {}
        self.head_outputs: dict = {}
        self.position_bias: dict = {}
        for name, value in fields.items():
            setattr(self, name, value)
        self._summaries: dict[str, dict[str, np.ndarray]] = {}
        self._pooled: dict[tuple, np.ndarray] = {}  # the last POOLED_KEPT pooled maps (small: a head switch back)
        self._hidden, self._head = hidden, head
        self._outputs(actual, top_k)

    @property
    def written_tokens(self) -> list[str]:
        """The token each decoder row writes (see written_tokens above); [] without a decoder."""
        return written_tokens(self.target_tokens, self.predicted_tokens)

    @property
    def nbytes(self) -> int:
        """Bytes this capture holds: the kept queries, keys and hidden states, its arrays and cached results."""

        def size(value) -> int:
            if isinstance(value, torch.Tensor):
                return value.numel() * value.element_size()
            if isinstance(value, np.ndarray):
                return int(value.nbytes)
            if isinstance(value, dict | list | tuple):
                items = value.values() if isinstance(value, dict) else value
                return sum(size(v) for v in items)
            return 0

        kept = sum(size(rec.q) + size(rec.k) for rec in self._records.values())
        masks = {id(m): m for m in self._masks.values()}.values()
        kept += sum(size(m.full) + size(m.keep) for m in masks if m.full is not None or m.keep is not None)
        return kept + sum(size(v) for name, v in vars(self).items() if name not in ("_records", "_masks"))

    # -- shapes ------------------------------------------------------------------------------------------------
    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(kind for kind, _ in self._records))

    def n_layers(self, kind: str) -> int:
        """Layers of this attention kind (0 when the model has none)."""
        return sum(1 for k, _ in self._records if k == kind)

    def shape(self, kind: str) -> tuple[int, int]:
        """(Tq, Tk) of this kind's maps; ValueError when the model has no such attention."""
        rec = self._record(kind, 0)
        return rec.q.size(1), rec.k.size(1)

    def map_ops(self, kind: str) -> int:
        """Operations of computing one head's map of this kind (scores, softmax, a summary's terms): what a view of
        many maps costs, counted before it runs."""
        Tq, Tk = self.shape(kind)
        return Tq * Tk * (2 * self._record(kind, 0).q.size(-1) + CELL_OPS)

    def _record(self, kind: str, layer: int) -> LazyAttention:
        rec = self._records.get((kind, layer))
        if rec is None:
            raise ValueError(f"this capture has no {kind} attention in layer {layer}")
        return rec

    def _rows_per_block(self, heads: int, keys: int) -> int:
        return self.block or max(1, BLOCK_NUMBERS // max(1, heads * keys))

    # -- maps ----------------------------------------------------------------------------------------------------
    def _keys(self, rec: LazyAttention, h0: int, h1: int) -> torch.Tensor:
        """(h1 - h0, Tk, dk): the key head each query head h0..h1 reads (grouped-query attention)."""
        groups = self.n_heads // rec.k.size(0)
        if h1 - h0 == 1:  # one head: a view of its key head, no copy
            return rec.k[h0 // groups : h0 // groups + 1]
        index = torch.arange(h0, h1) // groups
        return rec.k[index] if groups > 1 or h1 - h0 != rec.k.size(0) else rec.k

    def _block(
        self, kind: str, layer: int, h0: int, h1: int, keys: torch.Tensor, start: int, stop: int
    ) -> tuple[torch.Tensor, int]:
        """Weights (h, stop - start, kend) of heads h0..h1 and rows start..stop, in float32 or wider: the keys past
        kend are masked for every row of the block (exact zeros, left out)."""
        rec, mask = self._records[(kind, layer)], self._masks[(kind, layer)]
        Tk = keys.size(1)
        kend = mask.key_end(stop, Tk)
        dtype = torch.promote_types(rec.q.dtype, torch.float32)
        bias = None
        if rec.positions is not None:
            bias = rec.positions.bias_rows(start, stop, slice(h0, h1))[..., :kend].to(dtype)
        first = mask.first_hidden(start, kend) if rec.window is None or Tk <= rec.window else 0
        if first:  # a causal block: only its last keys need a mask, the same triangle for every block of its shape
            rows = mask.triangle(stop - start, kend - first) if first < kend else None
        else:
            rows = mask.rows(start, stop, kend)
        if rec.window is not None and Tk > rec.window:  # a local layer: the band of these rows
            query_pos = torch.arange(start, stop)[:, None] + (Tk - rec.q.size(1))  # (r, 1): cached keys come first
            band = (query_pos - torch.arange(kend)[None, :] < rec.window)[None]  # (1, r, kend), as window_mask
            rows = band if rows is None else rows & band
        weights = attention_weights(
            rec.q[h0:h1, start:stop].to(dtype), keys[:, :kend].to(dtype), rows, bias, rec.scale, rec.softcap, first
        )
        return weights, kend

    def map_rows(self, kind: str, layer: int, head: int, rows: slice) -> np.ndarray:
        """(r, Tk) float32: rows `rows` (a slice of query positions) of one head's map."""
        rec = self._record(kind, layer)
        if not 0 <= head < self.n_heads:
            raise ValueError(f"head {head} is not one of this model's {self.n_heads} heads")
        Tq, Tk = rec.q.size(1), rec.k.size(1)
        first, last, step = rows.indices(Tq)
        if step != 1:
            raise ValueError("rows must be a slice with step 1")
        keys = self._keys(rec, head, head + 1)
        size = self._rows_per_block(1, Tk)
        out = None
        with torch.no_grad():
            for start in range(first, last, size):
                stop = min(last, start + size)
                weights, kend = self._block(kind, layer, head, head + 1, keys, start, stop)
                if stop - start == last - first and kend == Tk and weights.dtype == torch.float32:
                    return weights[0].numpy()  # one block of every key: its weights are the answer, not copied
                if out is None:
                    out = np.zeros((last - first, Tk), dtype=np.float32)
                out[start - first : stop - first, :kend] = weights[0].float().cpu().numpy()
        return out if out is not None else np.zeros((0, Tk), dtype=np.float32)

    def map(self, kind: str, layer: int, head: int) -> np.ndarray:
        """(Tq, Tk) float32: one head's whole map (row = query position, column = key position), the numbers of
        the eager capture's `Capture.<kind>[layer, head]`."""
        return self.map_rows(kind, layer, head, slice(None))

    def layer_maps(self, kind: str, layer: int) -> np.ndarray:
        """(H, Tq, Tk) float32: every head of one layer (what the eager capture holds; short inputs only)."""
        rec = self._record(kind, layer)
        Tq, Tk = rec.q.size(1), rec.k.size(1)
        out = np.zeros((self.n_heads, Tq, Tk), dtype=np.float32)
        keys = self._keys(rec, 0, self.n_heads)
        size = self._rows_per_block(self.n_heads, Tk)
        with torch.no_grad():
            for start in range(0, Tq, size):
                stop = min(Tq, start + size)
                weights, kend = self._block(kind, layer, 0, self.n_heads, keys, start, stop)
                out[:, start:stop, :kend] = weights.float().cpu().numpy()
        return out

    def pooled(self, kind: str, layer: int, head: int, size: int = 256, how: str = "max") -> np.ndarray:
        """One head's map reduced to at most size x size cells, block by block (never the whole map): cell (a, b)
        is the max (how="max") or the mean (how="mean") of the weights of query rows a*fq .. (a+1)*fq - 1 and key
        columns b*fk .. (b+1)*fk - 1, fq = ceil(Tq / size), fk = ceil(Tk / size) (1: the map itself).
        Returns float32 (ceil(Tq / fq), ceil(Tk / fk))."""
        if how not in ("max", "mean"):
            raise ValueError(f"how must be 'max' or 'mean', got {how!r}")
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        key = (kind, layer, head, size, how)
        if key not in self._pooled:
            if len(self._pooled) >= POOLED_KEPT:
                self._pooled.pop(next(iter(self._pooled)))
            self._pooled[key] = self._pool(kind, layer, head, size, how)
            self._pooled[key].setflags(write=False)  # shared: a capture is cached for every session
        return self._pooled[key]

    def _pool(self, kind: str, layer: int, head: int, size: int, how: str) -> np.ndarray:
        rec = self._record(kind, layer)
        Tq, Tk = rec.q.size(1), rec.k.size(1)
        fq, fk = max(1, math.ceil(Tq / size)), max(1, math.ceil(Tk / size))
        nq, nk = math.ceil(Tq / fq), math.ceil(Tk / fk)
        out = np.zeros((nq, nk), dtype=np.float32)
        keys = self._keys(rec, head, head + 1)
        per = max(1, self._rows_per_block(1, Tk) // fq) * fq  # whole cells of rows per block
        with torch.no_grad():
            for start in range(0, Tq, per):
                stop = min(Tq, start + per)
                weights, kend = self._block(kind, layer, head, head + 1, keys, start, stop)
                w = torch.zeros(math.ceil((stop - start) / fq) * fq, nk * fk, dtype=weights.dtype)
                w[: stop - start, :kend] = weights[0]
                cells = w.reshape(-1, fq, nk, fk)
                if how == "max":
                    part = cells.amax(dim=(1, 3))
                else:
                    rows = torch.full((cells.size(0),), fq, dtype=w.dtype)
                    rows[-1] = (stop - start) - fq * (cells.size(0) - 1)
                    cols = torch.full((nk,), fk, dtype=w.dtype)
                    cols[-1] = Tk - fk * (nk - 1)
                    part = cells.sum(dim=(1, 3)) / (rows[:, None] * cols[None, :])
                out[start // fq : start // fq + part.size(0)] = part.float().numpy()
        return out

    # -- summaries -----------------------------------------------------------------------------------------------
    def summary(self, kind: str) -> dict[str, np.ndarray]:
        """Per-head statistics of every map of one kind, each numpy float32 (L, H), from one streaming pass over
        row blocks (computed once, then kept): first_token (mean over query rows of the weight on key 0: sinks),
        previous_token (mean over rows t >= 1 of the weight on key t - 1), diagonal (mean weight on key t),
        mean_distance (mean over rows of sum_j w_tj |t - j|, in positions), entropy (mean over rows of
        -sum_j w_tj ln w_tj, nats). Rows whose keys do not reach t - 1 or t (cross-attention) are left out of
        those means."""
        if kind not in self._summaries:
            self._summaries[kind] = self._summarize(kind)
            for value in self._summaries[kind].values():
                value.setflags(write=False)
        return self._summaries[kind]

    def summarized(self, kind: str) -> bool:
        """Whether summary(kind) is computed already (it then costs nothing)."""
        return kind in self._summaries

    def keep_summary(self, kind: str, values: Mapping[str, np.ndarray]) -> None:
        """Keep summary(kind) computed elsewhere (by a worker process, from this same capture)."""
        self._summaries[kind] = {name: np.array(values[name], dtype=np.float32) for name in SUMMARY_NAMES}
        for value in self._summaries[kind].values():
            value.setflags(write=False)

    def _summarize(self, kind: str) -> dict[str, np.ndarray]:
        L, H = self.n_layers(kind), self.n_heads
        sums = {name: np.zeros((L, H), dtype=np.float64) for name in SUMMARY_NAMES}
        if L == 0:
            return {name: value.astype(np.float32) for name, value in sums.items()}
        Tq, Tk = self.shape(kind)
        with torch.no_grad():
            for layer in range(L):
                rec = self._records[(kind, layer)]
                keys = self._keys(rec, 0, H)
                size = self._rows_per_block(H, Tk)
                for start in range(0, Tq, size):
                    stop = min(Tq, start + size)
                    w, kend = self._block(kind, layer, 0, H, keys, start, stop)  # (H, r, kend)
                    t = torch.arange(start, stop)
                    sums["first_token"][layer] += w[:, :, 0].sum(-1).double().numpy()
                    # row start + i, key start + i - 1 (previous) and start + i (diagonal): diagonals of the block,
                    # views over the rows whose keys reach them
                    sums["previous_token"][layer] += w.diagonal(start - 1, -2, -1).sum(-1).double().numpy()
                    sums["diagonal"][layer] += w.diagonal(start, -2, -1).sum(-1).double().numpy()
                    if self._masks[(kind, layer)].offset == 0:  # causal: every visible key j <= t, |t - j| = t - j
                        ends = self._ends(kend, w.dtype)  # (kend, 2): 1 and j
                        row_sum, moved_j = (w @ ends).unbind(-1)  # (H, r) each: one pass over the weights
                        moved = t.to(w.dtype) * row_sum - moved_j
                    else:
                        j = torch.arange(kend, dtype=w.dtype)
                        moved = (w * (t[:, None].to(w.dtype) - j[None, :]).abs()).sum(-1)
                    sums["mean_distance"][layer] += moved.sum(-1).double().numpy()
                    # w ln w, 0 where w = 0 (ln of the least positive float there, times 0), as xlogy(w, w) gives it:
                    # the same numbers at twice xlogy's speed (its kernel is not vectorized)
                    w_ln_w = w * w.clamp_min(LEAST_POSITIVE).log()
                    sums["entropy"][layer] -= w_ln_w.sum((-1, -2)).double().numpy()
        counts = {
            "previous_token": max(1, min(Tq, Tk + 1) - 1),
            "diagonal": max(1, min(Tq, Tk)),
        }
        return {name: (value / counts.get(name, max(1, Tq))).astype(np.float32) for name, value in sums.items()}

    def _ends(self, kend: int, dtype: torch.dtype) -> torch.Tensor:
        """(kend, 2): a column of ones and one of key positions 0..kend-1 (each row's sum and sum_j w_j j)."""
        j = torch.arange(kend, dtype=dtype)
        return torch.stack([torch.ones_like(j), j], dim=-1)

    # -- the output side -----------------------------------------------------------------------------------------
    def _outputs(self, actual: list[int | None], top_k: int) -> None:
        """top_ids, top_log_probs and next_log_probs from the kept hidden states, in blocks of positions."""
        n = 0 if self._hidden is None or self._head is None else self._hidden.size(0)
        self.top_ids = np.zeros((n, top_k), dtype=np.int64)
        self.top_log_probs = np.zeros((n, top_k), dtype=np.float32)
        self.next_log_probs = np.full((n,), np.nan, dtype=np.float32)
        for start, stop, logits in self._log_prob_blocks(normalized=False):
            k = min(top_k, logits.size(-1))
            total = logits.logsumexp(-1, keepdim=True)  # (r, 1): log-probabilities are logits - total
            values, ids = logits.topk(k, dim=-1)  # the largest logits are the largest log-probabilities
            self.top_ids[start:stop, :k] = ids.numpy()
            self.top_log_probs[start:stop, :k] = (values - total).float().numpy()
            for t in range(start, stop):
                if actual[t] is not None:
                    self.next_log_probs[t] = float(logits[t - start, actual[t]] - total[t - start, 0])
        for value in (self.top_ids, self.top_log_probs, self.next_log_probs):
            value.setflags(write=False)

    def _log_prob_blocks(self, normalized: bool = True):
        """(start, stop, log-probs (r, V) float32 or wider) over every position, a block at a time; normalized=False:
        the logits (in float32 or wider) instead."""
        if self._hidden is None or self._head is None:
            return
        n = self._hidden.size(0)
        with torch.no_grad():
            width = self._head(self._hidden[:1]).size(-1)
            size = max(OUTPUT_ROWS, BLOCK_NUMBERS // width)
            for start in range(0, n, size):
                stop = min(n, start + size)
                logits = self._head(self._hidden[start:stop])
                logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
                yield start, stop, logits.log_softmax(-1) if normalized else logits

    def distribution(self, position: int) -> np.ndarray:
        """(V,) float32: the log-probabilities the model gives at one position (decoder row or masked-LM position)."""
        if self._hidden is None or self._head is None:
            raise ValueError("this capture has no output distribution (a model without an output layer)")
        if not 0 <= position < self._hidden.size(0):
            raise ValueError(f"position {position} is outside 0..{self._hidden.size(0) - 1}")
        with torch.no_grad():
            logits = self._head(self._hidden[position : position + 1])[0]
            return logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1).float().numpy()

    def log_probs(self) -> np.ndarray | None:
        """(N, V) float32: every position's log-probabilities (what the eager Capture holds; short inputs only)."""
        if self._hidden is None or self._head is None:
            return None
        return np.concatenate([logp.float().numpy() for _, _, logp in self._log_prob_blocks()])

    def __getstate__(self) -> dict:
        """Pickled (a worker's answer) without the output layer: distribution() then needs attach(model)."""
        state = dict(self.__dict__)
        state["_head"] = None
        return state

    def attach(self, model) -> LazyCapture:
        """Give an unpickled capture its model's output layer back (distribution and log_probs need it)."""
        if self._hidden is not None and model.generator is not None:
            self._head = model.logits
        return self
