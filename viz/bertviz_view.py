"""bertviz's head view and model view of an encoder-decoder, as one self-contained HTML page.

Arrays in (as in `model.analysis.capture.Capture`), an HTML string out; the page runs in an iframe
(Streamlit's `components.html`) and as a downloaded .html file.

Stock bertviz's Python functions want torch tensors, and importing the `bertviz` package imports
torch, which viz/ never does. So this module uses only bertviz's front end: it reads the installed
`head_view.js` / `model_view.js` as text (locating the package without importing it) and fills their
`PYTHON_PARAMS` marker with the params bertviz's `head_view.py` / `model_view.py` build for an
encoder-decoder model (attention kinds "Encoder", "Decoder", "Cross"). Two things differ from stock:

- compact: weights are rounded to `decimals` and written as whole units of 10^-decimals ("123" for
  0.123, "0", "1000") with no spaces, then divided back in the page before bertviz's script reads
  them; stock writes every float32 digit, twice. A 128-token page is about a tenth of stock's;
- offline (the default): stock pages load require.js, d3 5.7.0 and jQuery 2.0.0 from a public CDN
  and stay blank without internet. Here d3 v5 (shipped by the mpld3 package) and jQuery (shipped by
  xstatic-jquery) are inlined, and a few lines of JavaScript answer the views' `require.config(...)`
  and `requirejs([...], callback)` calls with those inlined globals. With offline=False the page
  loads require.js from the CDN, as stock does. The JavaScript read from those packages, and
  BertvizAssetError when one is missing: viz/bertviz_assets.py.

Token strings go into the page only as JSON inside a script (with <, > and & escaped), so a token
such as "</script>" stays a token. The page's own words (menus, hints, the model view's axis names) are in
the current language (i18n).
"""

from __future__ import annotations

import json
import operator
import uuid
from collections.abc import Sequence

import numpy as np

from i18n import N_, _, language

from .bertviz_assets import PARAMS_MARKER, REQUIRE_JS_URL, offline_libraries, view_js

__all__ = ["head_view_html", "model_view_html", "prettify", "weights_json"]

KINDS = ("Encoder", "Decoder", "Cross")  # attention kinds, in bertviz's order; the filter select's values are 0, 1, 2
KIND_NAMES = {"Encoder": N_("Encoder"), "Decoder": N_("Decoder"), "Cross": N_("Cross")}  # shown in the menu
FONT = (  # bertviz's font stack, then CJK fonts for Chinese
    "'Helvetica Neue', Helvetica, Arial, 'Noto Sans CJK SC', 'Source Han Sans SC', 'WenQuanYi Micro Hei', "
    "'Microsoft YaHei', 'PingFang SC', sans-serif"
)
MAX_DECIMALS = 10

# Turns the integer weights back into fractions before bertviz's script sees them.
_DECODE_JS = """function bertvizDecode(params, scale) {
  function divide(x) { return Array.isArray(x) ? x.map(divide) : x / scale; }
  params.attention.forEach(function (entry) { entry.attn = divide(entry.attn); });
  return params;
}"""

_HINTS = {  # marked only: translated in _page
    "head": N_(
        "Hover over a token to see where it attends. Click a coloured square to show or hide a head; "
        "double-click to show that head alone."
    ),
    "model": N_("Rows are layers, columns heads. Click a thumbnail to enlarge it; hover over a token on its left."),
}
# Words bertviz's model view writes itself: (its JavaScript, a function giving the same with translated words).
_MODEL_VIEW_WORDS = (
    ('.text("Heads")', lambda: ".text(" + json.dumps(_("Heads")) + ")"),
    ('.text("Layers")', lambda: ".text(" + json.dumps(_("Layers")) + ")"),
    (
        """.text('Layer ' + config.layers[layerIndex] + ", Head " + config.heads[headIndex])""",
        lambda: (
            ".text({}.replace('{{layer}}', config.layers[layerIndex]).replace('{{head}}', config.heads[headIndex]))".format(
                json.dumps(_("Layer {layer}, Head {head}"))
            )
        ),
    ),
)


# ---------------------------------------------------------------------------------------------- public API


def head_view_html(
    encoder_self: np.ndarray,
    decoder_self: np.ndarray,
    cross: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    decimals: int = 3,
    offline: bool = True,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    kind: str = "Encoder",
    kinds: Sequence[str] = KINDS,
    only_layer: bool = False,
    menus: bool = True,
    fill: bool = False,
    written: Sequence[str] | None = None,
) -> str:
    """bertviz's head view (tokens left and right, one line per weight) as a full HTML document.

    encoder_self (L_enc, H, S, S), decoder_self (L_dec, H, T, T), cross (L_dec, H, T, S): rows are
    query positions, columns key positions; S = len(source_tokens), T = len(target_tokens).
    layer: the layer shown first (default 0); heads: the heads shown first (default all);
    kind: the attention shown first, "Encoder", "Decoder" or "Cross" (both views).
    kinds: the kinds bertviz's Attention menu offers (both views): a one-stack model's maps passed as all three
    arrays are one kind, its own, and the menu names no stack it lacks.
    only_layer: send only `layer`'s weights (its menu then lists that layer alone): a page a sixth of the
    size for a 6-layer model, for hosts that choose the layer themselves.
    The layer menu lists max(L_enc, L_dec) layers; a stack with fewer layers shows no lines there
    (its missing layers are sent as zeros), where stock bertviz would fail.
    decimals: weights are rounded to this many decimals. offline: inline d3 and jQuery (no network).
    menus: False keeps bertviz's own Layer and Attention menus out of sight (both views) for a host whose own
    controls choose the layer and the kind: two sets of menus would disagree, and only the host's are in its link.
    fill: the drawing grows (at most 2.5x) until it fills its frame's width or height (presentation mode); without
    it, it only shrinks to fit the frame's width.
    written: the token each decoder row writes (Capture.written_tokens, the app's row convention), shown on the
    left of Decoder and Cross instead of the decoder inputs (which stay the keys on the right); None: the inputs.
    Raises ValueError naming the mismatch when shapes and token counts disagree.
    """
    arrays, source, target = _validated(encoder_self, decoder_self, cross, source_tokens, target_tokens)
    rows = _written(written, target)
    decimals = _decimals(decimals)
    n_layers, n_heads = max(a.shape[0] for a in arrays), arrays[0].shape[1]
    if layer is not None:
        layer = _index(layer, n_layers, "layer")
    shown = None if heads is None else _heads(heads, n_heads)
    padded = [_pad_layers(a, n_layers) for a in arrays]  # the head view's one layer menu serves all three kinds
    layers = list(range(n_layers))
    if only_layer:
        layers = [0 if layer is None else layer]
        padded = [a[layers[0] : layers[0] + 1] for a in padded]  # (1, H, Q, K)
    vis_id = _vis_id()
    params = _params_json(
        _attention_entries(padded, source, target, decimals, rows),
        default_filter=_kind_filter(kind),
        root_div_id=vis_id,
        layer=layer,
        heads=shown,
        include_layers=layers,
    )
    controls = _("Layer:") + f' <select id="layer"></select> {_filter_select(kind, kinds)}'
    return _page("head", vis_id, controls, params, decimals, offline, _("Attention: head view"), menus, fill)


def model_view_html(
    encoder_self: np.ndarray,
    decoder_self: np.ndarray,
    cross: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    decimals: int = 3,
    offline: bool = True,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    kind: str = "Encoder",
    kinds: Sequence[str] = KINDS,
    menus: bool = True,
    fill: bool = False,
    written: Sequence[str] | None = None,
) -> str:
    """bertviz's model view (a thumbnail per layer and head, light theme) as a full HTML document.

    Arrays, tokens and `written` as in `head_view_html`. The model view has no "current" layer or heads, so
    layer=k shows only layer k (every stack must have it) and heads=[...] only those heads
    (bertviz's include_layers / include_heads); both also make the page smaller.
    """
    arrays, source, target = _validated(encoder_self, decoder_self, cross, source_tokens, target_tokens)
    rows = _written(written, target)
    decimals = _decimals(decimals)
    n_layers, n_heads = max(a.shape[0] for a in arrays), arrays[0].shape[1]
    if layer is None:
        layers = list(range(n_layers))
    else:
        layer = _index(layer, n_layers, "layer")
        for name, a in zip(("encoder_self", "decoder_self"), arrays):
            if layer >= a.shape[0]:
                raise ValueError(f"layer {layer} does not exist in {name}, which has {a.shape[0]} layers")
        layers = [layer]
    include_heads = list(range(n_heads)) if heads is None else _heads(heads, n_heads)
    chosen = [a if layer is None else a[layer : layer + 1] for a in arrays]
    chosen = [a[:, include_heads] for a in chosen]  # (layers shown, heads shown, Q, K)
    vis_id = _vis_id()
    params = _params_json(
        _attention_entries(chosen, source, target, decimals, rows),
        default_filter=_kind_filter(kind),
        display_mode="light",
        root_div_id=vis_id,
        include_layers=layers,
        include_heads=include_heads,
        total_heads=n_heads,
    )
    title = _("Attention: model view")
    return _page("model", vis_id, _filter_select(kind, kinds), params, decimals, offline, title, menus, fill)


# ---------------------------------------------------------------------------------------------- checks


def _kind_filter(kind: str) -> str:
    """The filter select's value for an attention kind ("Encoder", "Decoder" or "Cross"): shown first."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return str(KINDS.index(kind))


def _validated(encoder_self, decoder_self, cross, source_tokens, target_tokens):
    """(encoder_self, decoder_self, cross) as float64 arrays, and the two token lists as str lists."""
    source = _tokens(source_tokens, "source_tokens")
    target = _tokens(target_tokens, "target_tokens")
    names = ("encoder_self", "decoder_self", "cross")
    axes = {  # what the query and key axes hold: (side name, its tokens)
        "encoder_self": (("source", source), ("source", source)),
        "decoder_self": (("target", target), ("target", target)),
        "cross": (("target", target), ("source", source)),
    }
    arrays = []
    for name, value in zip(names, (encoder_self, decoder_self, cross)):
        a = np.asarray(value)
        if a.ndim != 4:
            raise ValueError(f"{name} must be 4-D (layers, heads, query positions, key positions), got shape {a.shape}")
        if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
            raise ValueError(f"{name} must hold real numbers, got dtype {a.dtype}")
        layout = f"(layers, heads, {axes[name][0][0]}, {axes[name][1][0]})"
        for axis, (side, tokens) in zip((2, 3), axes[name]):
            if a.shape[axis] != len(tokens):
                raise ValueError(
                    f"{name} has {a.shape[axis]} {side} positions but {len(tokens)} {side} tokens "
                    f"(shape {a.shape} is {layout})"
                )
        if a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(f"{name} needs at least one layer and one head, got shape {a.shape} {layout}")
        a = a.astype(np.float64)
        if not np.isfinite(a).all():
            raise ValueError(f"{name} holds NaN or infinite weights")
        arrays.append(a)
    enc, dec, crs = arrays
    for name, a in (("decoder_self", dec), ("cross", crs)):
        if a.shape[1] != enc.shape[1]:
            raise ValueError(f"{name} has {a.shape[1]} heads but encoder_self has {enc.shape[1]}")
    if crs.shape[0] != dec.shape[0]:
        raise ValueError(
            f"cross has {crs.shape[0]} layers but decoder_self has {dec.shape[0]} (both come from the decoder)"
        )
    return arrays, source, target


def _written(written, target: list[str]) -> list[str]:
    """The decoder rows' labels: `written` checked against the decoder inputs' count, or the inputs themselves."""
    if written is None:
        return target
    rows = _tokens(written, "written")
    if len(rows) != len(target):
        raise ValueError(f"written has {len(rows)} tokens but there are {len(target)} decoder inputs")
    return rows


def _tokens(tokens, name: str) -> list[str]:
    if isinstance(tokens, (str, bytes)):
        raise ValueError(f"{name} must be a list of token strings, not one string")
    out = [str(t) for t in tokens]
    if not out:
        raise ValueError(f"{name} is empty: the view needs at least one token on each side")
    return out


def _index(value, size: int, name: str) -> int:
    i = operator.index(value)
    if not 0 <= i < size:
        raise ValueError(f"{name} {i} is out of range: there are {size} {name}s (0 to {size - 1})")
    return i


def _heads(heads: Sequence[int], n_heads: int) -> list[int]:
    """Sorted distinct head indices, each checked against n_heads."""
    if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
        raise ValueError(f"heads must be a list of head indices, got {heads!r}")
    chosen = sorted({_index(h, n_heads, "head") for h in heads})
    if not chosen:
        raise ValueError("heads is empty: name at least one head (or pass None for all)")
    return chosen


def _decimals(decimals) -> int:
    d = operator.index(decimals)
    if not 0 <= d <= MAX_DECIMALS:
        raise ValueError(f"decimals must be between 0 and {MAX_DECIMALS}, got {d}")
    return d


def _pad_layers(a: np.ndarray, n_layers: int) -> np.ndarray:
    """(L, H, Q, K) -> (n_layers, H, Q, K), zeros for the missing layers."""
    if a.shape[0] == n_layers:
        return a
    return np.concatenate([a, np.zeros((n_layers - a.shape[0], *a.shape[1:]))])


# ---------------------------------------------------------------------------------------------- params


def prettify(tokens: Sequence[str]) -> list[str]:
    """Word-piece markers made readable, as bertviz does: 'Ġ' and '▁' become a space, '</w>' goes."""
    return [t.replace("</w>", "").translate(_PRETTY) for t in tokens]


_PRETTY = str.maketrans({"Ġ": " ", "▁": " "})


def _attention_entries(arrays, source: list[str], target: list[str], decimals: int, rows: list[str]) -> str:
    """The JSON list bertviz's encoder-decoder views take: Encoder, Decoder, Cross (left = queries, labelled `rows`:
    the tokens the decoder's rows write)."""
    src, tgt, out = prettify(source), prettify(target), prettify(rows)
    sides = ((src, src), (out, tgt), (out, src))
    entries = [
        "{"
        f'"name":{_json(name)},"attn":{weights_json(a, decimals)},'
        f'"left_text":{_json(left)},"right_text":{_json(right)}'
        "}"
        for name, a, (left, right) in zip(KINDS, arrays, sides)
    ]
    return "[" + ",".join(entries) + "]"


def _params_json(attention: str, **rest) -> str:
    """bertviz's params object, key order as in bertviz, with the attention list already in JSON."""
    return '{"attention":' + attention + "".join(f",{_json(k)}:{_json(v)}" for k, v in rest.items()) + "}"


def weights_json(weights: np.ndarray, decimals: int) -> str:
    """A nested JSON list of the weights rounded to `decimals`, as whole units of 10^-decimals.

    Dividing the printed integers by 10**decimals gives exactly np.round(weights.astype(float64), decimals)
    (0.1234 -> "123" at 3 decimals); the page does that division before bertviz reads them.
    """
    a = np.asarray(weights, dtype=np.float64)
    units = np.rint(a.ravel() * 10.0**decimals).astype(np.int64)  # the rounded weights in whole units
    values, where = np.unique(units, return_inverse=True)
    items: list[str] = np.array([str(v) for v in values.tolist()], dtype=object)[where.ravel()].tolist()
    for size in reversed(a.shape):  # innermost axis first: join runs of `size` items into one list
        items = ["[" + ",".join(items[i : i + size]) + "]" for i in range(0, len(items), size)]
    return items[0]


def _json(value) -> str:
    """Compact JSON that is safe inside a <script>: '<', '>' and '&' only ever appear escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _vis_id() -> str:
    return f"bertviz-{uuid.uuid4().hex}"


# ---------------------------------------------------------------------------------------------- page


def _filter_select(kind: str, kinds: Sequence[str] = KINDS) -> str:
    """bertviz's "Attention:" menu of `kinds` (its values their places in KINDS), opened on the kind that is drawn
    first (stock bertviz always shows "Encoder")."""
    options = "".join(
        f'<option value="{i}"{" selected" if name == kind else ""}>{_(KIND_NAMES[name])}</option>'
        for i, name in enumerate(KINDS)
        if name in kinds
    )
    return _("Attention:") + f' <select id="filter">{options}</select>'


_STYLE = f"""html,body{{margin:0;background:#fff;color:#222}}
body{{padding:10px 12px;font-family:{FONT};font-size:15px;line-height:1.4}}
select{{font:inherit;font-size:14px;padding:1px 4px;margin-right:14px;color:#222;background:#fff;
  border:1px solid #bbb;border-radius:4px}}
.hint{{margin:6px 0 4px;color:#666;font-size:13px}}
svg text{{font-family:{FONT}}}"""


def _page(
    view: str,
    vis_id: str,
    controls: str,
    params: str,
    decimals: int,
    offline: bool,
    title: str,
    menus: bool = True,
    fill: bool = False,
) -> str:
    """The full document: controls (hidden without `menus`: bertviz's script still reads them) and the drawing area
    inside the root div, then the scripts."""
    script = view_js(view, offline).replace(PARAMS_MARKER, f"bertvizDecode({params}, {10**decimals})", 1)
    if view == "model" and language() != "en":  # after the cache of the script: the words follow the language
        for stock, translated in _MODEL_VIEW_WORDS:
            script = script.replace(stock, translated(), 1)
    if offline:
        libraries = "".join(f"<script>{js}</script>\n" for js in offline_libraries())
    else:
        libraries = f'<script src="{REQUIRE_JS_URL}"></script>\n'
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{language()}">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n<style>\n{_STYLE}\n</style>\n"
        f"{libraries}</head>\n<body>\n"
        f'<div id="{vis_id}" style="font-family:{FONT};">\n'
        f'<span class="menus" style="user-select:none"{"" if menus else " hidden"}>{controls}</span>\n'
        f'<div class="hint">{_(_HINTS[view])}</div>\n'
        "<div id='vis'></div>\n</div>\n"
        f"<script>\n{_DECODE_JS}\n</script>\n"
        f'<script type="text/javascript">\n{script}\n{_FIT_JS % ("true" if fill else "false")}</script>\n'
        "</body>\n</html>\n"
    )


# The model view draws a fixed-size thumbnail per head: wider than its frame (8 heads beside the sidebar at 1366 px),
# the last column was cut off. Once drawn, and whenever the frame changes width, the page is zoomed to fit it.
# With `fill` (presentation mode: a hall reads bertviz's 12 px words from far away) a smaller drawing also grows
# until it fills the frame's width or height, at most 2.5 times.
_FIT_JS = """(function (fill) {
  const root = document.body.firstElementChild;  // the drawing's own box (shrink-wrapped when filling)
  if (fill) root.style.display = 'inline-block';
  const fit = () => {
    const body = document.body;
    body.style.zoom = 1;
    const box = root.getBoundingClientRect(), room = window.innerWidth, high = window.innerHeight;
    const over = document.documentElement.scrollWidth, wide = Math.max(box.right + 12, over > room + 1 ? over : 0);
    const tall = box.bottom + 10;
    let zoom = wide > room + 1 ? room / wide : 1;
    if (fill) zoom = Math.max(zoom, Math.min(room / wide, high / tall, 2.5));
    if (Math.abs(zoom - 1) > 0.01) body.style.zoom = zoom.toFixed(3);
  };
  new ResizeObserver(fit).observe(document.getElementById('vis'));
  window.addEventListener('resize', fit);
})(%s);"""
