"""Attention rollout and attention flow through the whole encoder-decoder (numpy and networkx, no model).

Both read the same layered graph (Abnar & Zuidema 2020), built from the recorded attention maps:

    encoder layer l:  Â_l = 0.5 I + 0.5 Ā_l             Ā_l: layer l's self-attention, heads averaged (S, S)
    decoder layer l:  self step  Â_l = 0.5 I + 0.5 Ā_l  over the decoder positions (T, T), causal
                      cross step each decoder position keeps 0.5 of what it held (the residual) and takes
                                 0.5 Ā^x_l (T, S) from the encoder's output positions

Heads switched off (an intervention) are left out of the average; a layer with every head off is the residual alone
(Â = I, or the cross step keeps everything). The residual counted as 0.5 I + 0.5 A and the heads averaged are
Abnar & Zuidema's rule; the cross step follows Chefer et al. 2021 (eq. 11): what a decoder position gains through
cross-attention is the cross-attention map times the encoder's relevance R^ss, added to what it already holds.

Rollout: the sum over paths of the products of edge weights, i.e. the matrix products
    R^ss = Â_Le ... Â_1                                      (S, S) encoder rollout
    R^tt = I, R^ts = 0;  for each decoder layer l:
        R^tt <- Â_l R^tt,  R^ts <- Â_l R^ts                   self step
        R^tt <- 0.5 R^tt,  R^ts <- 0.5 R^ts + 0.5 Ā^x_l R^ss  cross step
    scores = R^ts with each row divided by its sum.
Chefer et al.'s left factor (R̄^tt)ᵀ on the cross term is not applied: the decoder self steps already carry R^tt
forward (R^ts <- Â_l R^ts), and its transpose would let a causal decoder position draw on later ones.
Flow: the maximum flow (networkx) from the decoder's last node of output position t to the input node of source
token s, with the edge weights above as capacities; each row divided by its sum.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

EPS = 1e-12  # capacities below this are left out of the flow graph


def head_mean(weights: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """(L, H, Q, K) -> (L, Q, K): each layer's average over the heads kept (keep: (L, H) bool); zeros where none."""
    weights = np.asarray(weights, dtype=np.float64)
    if keep is None:
        return weights.mean(axis=1)
    keep = np.asarray(keep, dtype=np.float64)  # (L, H)
    n = keep.sum(axis=1)  # (L,)
    total = np.einsum("lhqk,lh->lqk", weights, keep)
    return np.divide(total, n[:, None, None], out=np.zeros_like(total), where=n[:, None, None] > 0)


def _layers(
    encoder: np.ndarray, decoder: np.ndarray, cross: np.ndarray, keep: dict[str, np.ndarray] | None
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[float]]:
    """Per layer: encoder Â (S, S), decoder self Â (T, T), cross edges 0.5 Ā^x (T, S) and the residual weight."""
    keep = keep or {}
    S, T = encoder.shape[-1], decoder.shape[-1]
    if cross.shape[-2:] != (T, S) or len(decoder) != len(cross):
        raise ValueError(
            f"cross-attention {cross.shape} does not fit decoder {decoder.shape} and encoder {encoder.shape}"
        )
    enc = []
    for li, a in enumerate(head_mean(encoder, keep.get("encoder_self"))):
        on = keep.get("encoder_self") is None or keep["encoder_self"][li].any()
        enc.append(0.5 * np.eye(S) + 0.5 * a if on else np.eye(S))
    dec, crs, res = [], [], []
    for li, (a, x) in enumerate(zip(head_mean(decoder, keep.get("decoder_self")), head_mean(cross, keep.get("cross")))):
        on = keep.get("decoder_self") is None or keep["decoder_self"][li].any()
        dec.append(0.5 * np.eye(T) + 0.5 * a if on else np.eye(T))
        on = keep.get("cross") is None or keep["cross"][li].any()
        crs.append(0.5 * x if on else np.zeros((T, S)))
        res.append(0.5 if on else 1.0)
    return enc, dec, crs, res


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    total = m.sum(axis=-1, keepdims=True)
    return np.divide(m, total, out=np.zeros_like(m), where=total > 0)


def rollout(
    encoder: np.ndarray, decoder: np.ndarray, cross: np.ndarray, keep: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    """(T, S) attention rollout of every decoder position over the source tokens, rows summing to 1.

    encoder (Le, H, S, S), decoder (Ld, H, T, T), cross (Ld, H, T, S): recorded attention (Capture's arrays);
    keep: optional {kind: (L, H) bool}, False for heads switched off. The rule is in the module docstring.
    """
    enc, dec, crs, res = _layers(encoder, decoder, cross, keep)
    S, T = encoder.shape[-1], decoder.shape[-1]
    r_ss = np.eye(S)
    for a in enc:
        r_ss = a @ r_ss  # (S, S)
    r_ts = np.zeros((T, S))
    for a, x, r in zip(dec, crs, res):
        r_ts = r * (a @ r_ts) + x @ r_ss  # self step, then the cross step (T, S)
    return _normalise_rows(r_ts)


def flow_graph(encoder: np.ndarray, decoder: np.ndarray, cross: np.ndarray, keep: dict[str, np.ndarray] | None = None):
    """The layered attention graph as a networkx DiGraph (edges point from a position to what it reads).

    Nodes: ("e", l, s) encoder position s after layer l (l = 0: the source token); ("ds", l, t) decoder position t
    after layer l's self step, ("dx", l, t) after its cross step (("dx", 0, t): the decoder input token).
    Edge attribute "capacity": the weights of the module docstring.
    """
    import networkx as nx

    enc, dec, crs, res = _layers(encoder, decoder, cross, keep)
    g = nx.DiGraph()
    for li, a in enumerate(enc, start=1):
        for i, j in zip(*np.nonzero(a > EPS)):
            g.add_edge(("e", li, int(i)), ("e", li - 1, int(j)), capacity=float(a[i, j]))
    top = len(enc)
    for li, (a, x, r) in enumerate(zip(dec, crs, res), start=1):
        for i, j in zip(*np.nonzero(a > EPS)):
            g.add_edge(("ds", li, int(i)), ("dx", li - 1, int(j)), capacity=float(a[i, j]))
        for t in range(a.shape[0]):
            g.add_edge(("dx", li, t), ("ds", li, t), capacity=r)
        for t, s in zip(*np.nonzero(x > EPS)):
            g.add_edge(("dx", li, int(t)), ("e", top, int(s)), capacity=float(x[t, s]))
    return g


def flow(
    encoder: np.ndarray,
    decoder: np.ndarray,
    cross: np.ndarray,
    keep: dict[str, np.ndarray] | None = None,
    rows: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """(rows, S) attention flow: max flow from each decoder output node to each source token node, rows summing to 1.

    rows: how many decoder positions to compute (the first `rows`; default all T). progress(done, total) after each row.
    """
    import networkx as nx
    from networkx.algorithms.flow import build_residual_network, preflow_push

    g = flow_graph(encoder, decoder, cross, keep)
    S, T, L = encoder.shape[-1], decoder.shape[-1], len(decoder)
    rows = T if rows is None else rows
    out = np.zeros((rows, S))
    # one residual network for every pair: preflow_push resets its flows at each call (the same values; building it
    # anew for each of the T x S flows took two thirds of the time)
    residual = build_residual_network(g, "capacity")
    for t in range(rows):
        start = ("dx", L, t)
        for s in range(S):
            sink = ("e", 0, s)
            if start in g and sink in g:
                out[t, s] = nx.maximum_flow_value(
                    g, start, sink, capacity="capacity", flow_func=preflow_push, residual=residual
                )
        if progress is not None:
            progress(t + 1, rows)
    return _normalise_rows(out)


# -- one stack: a decoder-only or an encoder-only model -----------------------------------------------


def sequence_layers(maps: np.ndarray, keep: np.ndarray | None = None) -> list[np.ndarray]:
    """Per layer Â_l = 0.5 I + 0.5 Ā_l (N, N) of one stack's self-attention maps (L, H, N, N), heads kept averaged
    (keep: (L, H) bool); a layer with every head off is the residual alone (I)."""
    N = maps.shape[-1]
    out = []
    for li, a in enumerate(head_mean(maps, keep)):
        on = keep is None or keep[li].any()
        out.append(0.5 * np.eye(N) + 0.5 * a if on else np.eye(N))
    return out


def sequence_rollout(maps: np.ndarray, keep: np.ndarray | None, queries: list[int], keys: list[int]) -> np.ndarray:
    """(len(queries), len(keys)) rollout through one stack: R = Â_L ... Â_1 over its N positions (the same rule as
    the encoder's R^ss), row q of R restricted to the key positions and divided by its sum.

    A decoder-only model: queries are the positions that write the scored tokens, keys the prompt's: the share that
    reaches the continuation's own tokens (inputs held fixed, as an encoder-decoder's decoder inputs, which its
    R^ts leaves out) is not counted. An encoder-only model: every position over every position."""
    r = np.eye(maps.shape[-1])
    for a in sequence_layers(maps, keep):
        r = a @ r  # (N, N)
    return _normalise_rows(r[np.ix_(queries, keys)])


def sequence_flow_graph(maps: np.ndarray, keep: np.ndarray | None = None):
    """The layered graph of one stack: node ("s", l, i) is position i after layer l (l = 0: the token), an edge
    from ("s", l, i) to ("s", l - 1, j) with capacity Â_l[i, j]."""
    import networkx as nx

    g = nx.DiGraph()
    for li, a in enumerate(sequence_layers(maps, keep), start=1):
        for i, j in zip(*np.nonzero(a > EPS)):
            g.add_edge(("s", li, int(i)), ("s", li - 1, int(j)), capacity=float(a[i, j]))
    return g


def sequence_flow(
    maps: np.ndarray,
    keep: np.ndarray | None,
    queries: list[int],
    keys: list[int],
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """(len(queries), len(keys)) attention flow through one stack: the maximum flow from position q's last node to
    key k's token node, each row divided by its sum over the keys. progress(done, total) after each row."""
    import networkx as nx
    from networkx.algorithms.flow import build_residual_network, preflow_push

    g = sequence_flow_graph(maps, keep)
    L = len(maps)
    out = np.zeros((len(queries), len(keys)))
    residual = build_residual_network(g, "capacity")  # one for every pair, as in `flow`
    for row, q in enumerate(queries):
        for col, k in enumerate(keys):
            start, sink = ("s", L, q), ("s", 0, k)
            if start in g and sink in g and start != sink:
                out[row, col] = nx.maximum_flow_value(
                    g, start, sink, capacity="capacity", flow_func=preflow_push, residual=residual
                )
        if progress is not None:
            progress(row + 1, len(queries))
    return _normalise_rows(out)
