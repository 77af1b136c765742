"""Captured attention and decoding traces as downloadable files (.npz and JSON).

Rows follow the app's one convention: decoder row j reads target_tokens[j] (its decoder input) and writes
written_tokens[j] (Capture.written_tokens); a decoding's step writes its "token" from its "input"."""

from __future__ import annotations

import io
import json

import numpy as np

from ..decoding import Trace
from .capture import Capture


def capture_npz(capture: Capture) -> bytes:
    """Every array of the capture plus the token lists (as string arrays), in one compressed .npz."""
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        **capture.arrays(),
        source_tokens=np.array(capture.source_tokens, dtype=str),
        target_tokens=np.array(capture.target_tokens, dtype=str),
        written_tokens=np.array(capture.written_tokens, dtype=str),  # the token decoder row j writes
        predicted_tokens=np.array(capture.predicted_tokens, dtype=str),
        interventions=np.array(json.dumps(capture.interventions)),  # what was changed: "{}" for nothing
    )
    return buf.getvalue()


def qkv_npz(capture: Capture) -> bytes:
    """Q, K, V and head outputs of a capture made with qkv=True, in one compressed .npz.

    Names: {kind}_q (L, H, Tq, dk), {kind}_k and {kind}_v (L, H, Tk, dk), {kind}_head_outputs (L, H, Tq, dk)
    for kind in encoder_self, decoder_self, cross; plus the attention weights and the token lists.
    """
    if not capture.qkv:
        raise ValueError("this capture has no Q, K, V: record it with capture(..., qkv=True)")
    arrays = {}
    for kind, (q, k, v) in capture.qkv.items():
        arrays.update(
            {
                f"{kind}_q": q,
                f"{kind}_k": k,
                f"{kind}_v": v,
                f"{kind}_head_outputs": capture.head_outputs[kind],
                f"{kind}_weights": getattr(capture, kind),
            }
        )
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        **arrays,
        source_tokens=np.array(capture.source_tokens, dtype=str),
        target_tokens=np.array(capture.target_tokens, dtype=str),
        written_tokens=np.array(capture.written_tokens, dtype=str),
    )
    return buf.getvalue()


def _rounded(a: np.ndarray, decimals: int) -> list:
    return np.round(a.astype(np.float64), decimals).tolist()


def capture_json(capture: Capture, decimals: int = 5) -> str:
    """The capture as JSON: tokens, shapes and nested lists of weights rounded to `decimals`."""
    data = {
        "source_tokens": capture.source_tokens,
        "target_tokens": capture.target_tokens,  # the decoder inputs: row j reads target_tokens[j] ...
        "written_tokens": capture.written_tokens,  # ... and writes written_tokens[j]
        "predicted_tokens": capture.predicted_tokens,
        "generated": capture.generated,
        "source_truncated": capture.source_truncated,
        "interventions": capture.interventions,
        "shapes": {k: list(v.shape) for k, v in capture.arrays().items()},
    }
    for name, arr in capture.arrays().items():
        data[name] = arr.tolist() if arr.dtype.kind == "i" else _rounded(arr, decimals)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def trace_json(trace: Trace, decimals: int = 5, interventions: dict | None = None) -> str:
    """A greedy decoding as JSON: one entry per step with candidates and attention rows; `interventions` (the
    describe() of what was changed while decoding) is written as it is, {} for nothing."""
    steps = [
        {
            "index": s.index,
            "input": trace.decoder_inputs(s.index)[-1],  # the decoder input that wrote `token`
            "token": s.token,
            "token_id": s.token_id,
            "prob": round(s.prob, decimals),
            "forced": s.forced,
            "top_tokens": s.top_tokens,
            "top_ids": s.top_ids.tolist(),
            "top_probs": _rounded(s.top_probs, decimals),
            "decoder_self": _rounded(s.decoder_self, decimals),
            "cross": _rounded(s.cross, decimals),
        }
        for s in trace.steps
    ]
    return json.dumps(
        {
            "source_tokens": trace.source_tokens,
            "text": trace.text,
            "stop_reason": trace.stop_reason,
            "interventions": interventions if interventions is not None else trace.interventions,
            "steps": steps,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def pe_npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def pe_json(decimals: int = 6, **arrays: np.ndarray) -> str:
    """Named arrays as JSON: {"name": {"shape": [...], "values": nested lists rounded to `decimals`}}."""
    return json.dumps(
        {k: {"shape": list(v.shape), "values": _rounded(v, decimals)} for k, v in arrays.items()}, separators=(",", ":")
    )
