"""The lazy capture's API over an eager Capture, for tests and benchmarks of the views of long inputs.

The eager capture is the lazy one materialized, so this gives the numbers the lazy capture gives: `map`,
`map_rows`, `pooled`, `summary`, `shape`, `n_heads`, the token lists (and the rest of the Capture's fields, read
through). It holds every map, as the eager capture does: it stands in for the lazy capture only where that capture
is not available (`available()` says whether model.capture takes lazy=True), never in the app itself.
"""

from __future__ import annotations

import inspect

import numpy as np

from viz.pooling import causal_mask, pool


def available() -> bool:
    """Whether the library's capture() offers the lazy capture (capture(..., lazy=True))."""
    from model import capture

    return "lazy" in inspect.signature(capture).parameters


class EagerLazy:
    """capture(..., lazy=True)'s API read from an eager Capture (or any object with the same fields)."""

    def __init__(self, cap) -> None:
        self._cap = cap
        self._summaries: dict[str, dict[str, np.ndarray]] = {}

    def __getattr__(self, name: str):
        return getattr(self._cap, name)

    def _maps(self, kind: str) -> np.ndarray:
        maps = getattr(self._cap, kind)
        if not maps.shape[0]:
            raise ValueError(f"this capture has no {kind} attention")
        return maps

    @property
    def n_heads(self) -> int:
        return next(getattr(self._cap, k).shape[1] for k in ("decoder_self", "encoder_self", "cross")
                    if getattr(self._cap, k).shape[0])  # fmt: skip

    def shape(self, kind: str) -> tuple[int, int]:
        return tuple(int(n) for n in self._maps(kind).shape[2:])

    def map(self, kind: str, layer: int, head: int) -> np.ndarray:
        return np.asarray(self._maps(kind)[layer, head], dtype=np.float32)

    def map_rows(self, kind: str, layer: int, head: int, rows: slice) -> np.ndarray:
        return np.asarray(self._maps(kind)[layer, head, rows], dtype=np.float32)

    def pooled(self, kind: str, layer: int, head: int, size: int = 256, how: str = "max") -> np.ndarray:
        Tq, Tk = self.shape(kind)
        mask = causal_mask(Tq, Tk) if kind == "decoder_self" else None
        return pool(self.map(kind, layer, head), size, mask).of(how)

    def n_layers(self, kind: str) -> int:
        return int(getattr(self._cap, kind).shape[0])

    def map_ops(self, kind: str) -> int:
        from model.analysis.lazy_capture import CELL_OPS

        Tq, Tk = self.shape(kind)
        return Tq * Tk * CELL_OPS

    def summarized(self, kind: str) -> bool:
        return kind in self._summaries

    def keep_summary(self, kind: str, values) -> None:
        self._summaries[kind] = dict(values)

    def summary(self, kind: str) -> dict[str, np.ndarray]:
        """Per head, means over query rows: weight on key 0, on key t - 1 (rows t >= 1), on key t, -sum p ln p,
        and sum p |t - k| (the mean distance); one head's map at a time."""
        if kind in self._summaries:
            return self._summaries[kind]
        maps = self._maps(kind)
        L, H, Tq, Tk = maps.shape
        t, n = np.arange(Tq), min(Tq, Tk)
        distance = np.abs(t[:, None] - np.arange(Tk)[None, :])
        names = ("first_token", "previous_token", "diagonal", "entropy", "mean_distance")
        out = {name: np.zeros((L, H), dtype=np.float32) for name in names}
        for layer in range(L):
            for head in range(H):
                w = np.asarray(maps[layer, head], dtype=np.float32)
                logs = np.log(w, out=np.zeros_like(w), where=w > 0)
                entropy = -(w * logs).sum(-1, dtype=np.float64).mean()
                values = (
                    w[:, 0].mean(),
                    w[t[1:], t[1:] - 1].mean() if Tq > 1 and Tk > 1 else 0.0,
                    w[np.arange(n), np.arange(n)].mean(),
                    entropy,
                    (w * distance).sum(-1, dtype=np.float64).mean(),
                )
                for name, value in zip(names, values, strict=True):
                    out[name][layer, head] = value
        self._summaries[kind] = out
        return out


def install(monkeypatch=None) -> None:
    """Make ui.views.attention_long.session_lazy give EagerLazy over the session's eager capture (in this process): with a
    pytest monkeypatch, undone after the test; without, for the life of the process (a benchmark's server)."""
    from ui.serving import caches
    from ui.views import attention_long

    def session_lazy(session, changes=caches.NONE):
        return EagerLazy(caches.session_capture(session, changes=changes))

    if monkeypatch is not None:
        monkeypatch.setattr(attention_long, "session_lazy", session_lazy)
    else:
        attention_long.session_lazy = session_lazy
