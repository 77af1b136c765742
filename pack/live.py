"""The lecture pack's live part: a text box whose input the page runs through the model itself (no server).

`live_html(spec)` is the section with the box; `live_scripts(spec)` the scripts that run the model: onnxruntime-web
(pack/static/vendor/onnxruntime-web: its API, its Emscripten glue and its WebAssembly binary, gzipped, all inside the page),
pack_text.js (the input check and the tokenizer), pack_net.js (the model's own exported graphs, greedy decoding) and
pack_live.js (the box, and the views of the typed input, made from the first precomputed input's figures, laid out by
pack_layout.js: the app's rules for its tokens).
`live_words(spec)` are the sentences the page writes, in the pack's language: the input check's warnings use the
app's own messages (model/inputs.check_text), their values filled in by the script.
`spec` is pack.export.live_spec's dict (JSON-ready, but for a folder pack's spec["weights"]["data"]), or None:
then the section says why it is missing. A folder pack's weights go into files beside the page (`weight_files`), which
the page loads with <script src> before its own scripts.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

from i18n import M_, N_, _, ngettext
from model.text.trained_range import TRAINED_RANGE

PACK_REFUSED = N_("This pack runs no model of its own: {why}.")  # why: live_spec's Unsupported message
MISSING_WEIGHTS = N_(
    "{n} of the files {files} did not load: keep every file of this pack in the folder beside its index.html."
)  # a folder pack's page without its weight files (pack_net.js), in the pack's language

HERE = Path(__file__).resolve().parent / "static"
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def live_words(spec: dict | None) -> dict[str, str]:
    """Templates the script fills ({symbols}, {n}, ...), translated now; the input check's are the app's messages."""
    what = M_("input")
    words = {
        "heading": _("Your input: {text}"),
        "running": _("Running the model in this page…"),
        "done": _("Output: {output} · {steps} steps · {ms} ms in this page"),
        "output_line": _("Output: {output} · stopped at {stop}."),
        "length_limit": _("the length limit"),
        "space": _("space"),
        "thumb_row": _("layer {layer}, query {i}"),  # viz/overview_figs.layer_head_overview's rows and columns
        "thumb_col": _("head {h}, key {i}"),
        "failed": _("The page could not run the model: {error}"),
        "removed_one": ngettext(
            "Removed {n} control or invisible character from the {what}.",
            "Removed {n} control or invisible characters from the {what}.",
            1,
        ).format(n="{n}", what=_(what)),
        "removed_many": ngettext(
            "Removed {n} control or invisible character from the {what}.",
            "Removed {n} control or invisible characters from the {what}.",
            2,
        ).format(n="{n}", what=_(what)),
        "empty": _(M_("The {what} is empty: type some text, or pick an example.", what=what)),
        "unknown": _(M_("Not in the vocabulary, read as <unk>: {symbols}.", symbols="{symbols}")),
        "a_space": _(M_("a space")),
        "and_more": _(M_("{shown} and {n} more", shown="{shown}", n="{n}")),
        "cut": _(
            M_(
                "The {what} has {n} tokens but this model reads at most {room}: cut after “{kept}” ({dropped} tokens dropped).",
                what=what,
                n="{n}",
                room="{room}",
                kept="{kept}",
                dropped="{dropped}",
            )
        ),
    }
    # the Attention page's summary of a decoder-only and of an encoder-only model's sequence (ui/shell/shapes.py)
    words["sequence"] = _(
        "Prompt: {prompt} tokens · continuation (the model’s own greedy output): {written} tokens “{text}”"
    )
    words["encoded"] = _("Input: {n} tokens, as the model’s tokenizer writes them (its special tokens included)")
    checks = (spec or {}).get("checks", {})
    if "trained" in checks:  # model.text.trained_range.trained_range_warning, {n} filled by the script
        units = {"characters": N_("characters"), "words": N_("words"), "tokens": N_("tokens")}
        unit = checks["trained"]["unit"]
        words["trained"] = _(
            M_(
                TRAINED_RANGE,
                low=checks["trained"]["low"],
                high=checks["trained"]["high"],
                unit=M_(units[unit]) if unit in units else unit,
                n="{n}",
            )
        )
    if "ends_with" in checks:  # tasks.cards.format_warning, the same message
        words["ends_with"] = _(
            M_(
                "This model continues an input that ends with “{end}”, as in its examples ({example}): add “{end}” at "
                "the end, or its output is a guess.",
                end=checks["ends_with"]["end"],
                example=checks["ends_with"]["example"],
            )
        )
    if "grammar" in checks:  # tasks.cards.grammar_warning
        words["guess"] = _(
            "Every word is one this model knows, but the sentence follows none of the patterns it was trained on "
            "(see its examples): it learned its task's sentences, not the language, so its output here is a guess."
        )
    own = spec and spec["tokenizer"]["source"].get("level") != "subword"  # a folder's pieces: no hint, as the app
    known = sorted(set(spec["tokenizer"]["source"]["tokens"]) - set(SPECIALS)) if own else []
    hint = M_(" It knows {n} symbols, e.g. {examples}.", n=len(known), examples=" ".join(known[:20])) if known else ""
    words["none_known"] = _(
        M_(
            "None of the {what}'s symbols are in this model's vocabulary ({symbols}).{hint}",
            what=what,
            symbols="{symbols}",
            hint=hint,
        )
    )
    return words


def live_template(section: str) -> str:
    """The typed input's section, made from the first precomputed input's (`section`, its HTML) as an inert <template>
    that pack_live.js clones and fills in: its ids, figures and references renamed "live", its warnings left out."""
    s = re.sub(r'<p class="warning">.*?</p>', "", section).replace('id="in0"', 'id="live-input"', 1)
    s = s.replace('id="in0-', 'id="live-').replace('data-figure="in0-', 'data-figure="live-')
    s = re.sub(r'data-ref="0(?=[/"])', 'data-ref="live', s)
    return f'<template id="live-template">{s}</template>'


def live_html(spec: dict | None, note: str = "", first: str = "", section: str = "") -> str:
    """The live section (box, messages, the typed input's views) and, with a spec, the model and its scripts.

    The box holds `first` (the first precomputed input) from the start: the page's script never writes into it, so
    nothing a visitor types while the page loads is overwritten or doubled. `section`: the first precomputed input's
    section (HTML), the pattern of the typed input's (live_template).
    """
    heading = _esc(_("Try your own input"))
    if spec is None:
        why = _esc(_(PACK_REFUSED).format(why=_(note) if note else _("none was given")))
        return f'<section id="live"><h2>{heading}</h2><p class="warning">{why}</p></section>'
    size = f"{spec['n_bytes'] / 1e6:.1f}"
    if spec.get("weights"):
        about = _esc(
            _(
                "Type any input and press Enter: this page runs the model itself ({mb} MB of weights in float16, in the "
                "files beside this page; no server, no network), decodes greedily step by step and draws every view "
                "below for it."
            ).format(mb=size)
        )
    else:
        about = _esc(
            _(
                "Type any input and press Enter: this page runs the model itself ({mb} MB of weights inside this file, "
                "no server, no network), decodes greedily step by step and draws every view below for it."
            ).format(mb=size)
        )
    label = _esc(_("Input for the model"))
    model_json = json.dumps(public_spec(spec), ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    model_json = model_json.replace("&", "\\u0026")
    return (
        f'<section id="live"><h2>{heading}</h2><p>{about}</p>'
        f'<label class="live-box">{label} <input type="text" data-testid="pack-input" maxlength="500" '
        f'value="{_esc(first)}" autocomplete="off" spellcheck="false"></label>'
        '<p class="live-status" data-testid="pack-status"></p>'
        '<div class="live-messages"></div>'
        '<p><code data-testid="pack-output"></code></p>'
        '<div id="live-views"></div></section>'
        f"{live_template(section)}"
        f'<script type="application/json" id="pack-model">{model_json}</script>'
    )


ORT = HERE / "vendor" / "onnxruntime-web"


def _inert(text: str) -> str:
    """Vendored code as it goes inside a <script> element, which must not hold "</script" or "<!--" (the parser
    would end the element there): the vendored files hold neither; a new version that did is refused here."""
    if "</script" in text.lower() or "<!--" in text:
        raise ValueError("a vendored script holds '</script' or '<!--': it cannot be inlined as it is")
    return text


def _build(api: str, module: str, prefix: str, run: bool) -> str:
    """One onnxruntime-web build: its API (run at once, or kept as text #{prefix}-api for pack_net.js to start), and as
    inert data its Emscripten glue (#{prefix}-glue) and gzipped binary (#{prefix}-wasm)."""
    code = _inert((ORT / api).read_text(encoding="utf-8"))
    glue = _inert((ORT / f"{module}.mjs").read_text(encoding="utf-8"))
    wasm = base64.b64encode((ORT / f"{module}.wasm.gz").read_bytes()).decode("ascii")
    return (
        (f"<script>{code}</script>" if run else f'<script type="text/plain" id="{prefix}-api">{code}</script>')
        + f'<script type="text/plain" id="{prefix}-glue">{glue}</script>'
        + f'<script type="text/plain" id="{prefix}-wasm">{wasm}</script>'
    )


def runtime_scripts(webgpu: bool = False) -> str:
    """onnxruntime-web inside the page: its API, and, as inert data, the glue module and the gzipped binary that
    pack_net.js hands to it (a blob: URL and wasmBinary), so that nothing is fetched.

    webgpu: also onnxruntime's WebGPU build (its API, glue and binary as inert data, 6.6 MB gzipped), which pack_net.js
    starts instead when the browser has a GPU adapter. Folder packs carry it: their models are large enough to gain
    from a GPU, and their size allows it; a demo's one-file pack keeps the WebAssembly build alone."""
    page = _build("ort.wasm.min.js", "ort-wasm-simd-threaded", "ort", run=True)
    if webgpu:
        page += _build("ort.webgpu.min.js", "ort-wasm-simd-threaded.asyncify", "ort-webgpu", run=False)
    return page


CHUNK = 16 * 1024 * 1024  # bytes of weights per file beside a folder pack's page


def weight_files(spec: dict | None) -> dict[str, bytes]:
    """A folder pack's weights as scripts beside its page ({name: bytes}; none for a one-file pack): each file pushes
    [index, base64] onto window.PackWeights. Loaded by <script src> (a page opened from file:// may not fetch)."""
    if not spec or not spec.get("weights"):
        return {}
    data, files = spec["weights"]["data"], {}
    for i, name in enumerate(_weight_names(len(data))):
        b64 = base64.b64encode(data[i * CHUNK : (i + 1) * CHUNK]).decode("ascii")
        files[name] = f'(window.PackWeights = window.PackWeights || []).push([{i}, "{b64}"]);\n'.encode()
    return files


def _weight_names(n_bytes: int) -> list[str]:
    return [f"weights-{i:02d}.js" for i in range(max(1, -(-n_bytes // CHUNK)))]


def public_spec(spec: dict) -> dict:
    """The spec as the page reads it: a folder pack's weights named by their files (each `chunk` bytes, the last one
    shorter), not inlined, with what the page says when some did not load (in the pack's language)."""
    if not spec.get("weights"):
        return spec
    w = {k: v for k, v in spec["weights"].items() if k != "data"}
    names = _weight_names(len(spec["weights"]["data"]))
    return {**spec, "weights": {**w, "files": names, "chunk": CHUNK, "missing": _(MISSING_WEIGHTS)}}


def live_scripts(spec: dict | None) -> tuple[str, str]:
    """The scripts of the live section, or nothing without a model: (what goes right after the live section, what goes
    after lecture_pack.js).

    First (before the pack's static sections and plotly, so that the runtime starts while the rest of the page is read
    and drawn): a folder pack's weight files (their <script src> run in order), onnxruntime-web, the tokenizers' code,
    pack_text.js and pack_net.js, then a line that starts opening the model (window.PackOpening: the runtime, the
    graphs' sessions and the tokenizers). Last: pack_layout.js (the app's layout rules for a typed input's tokens) and
    pack_live.js, which draws with PackViews and awaits that opening."""
    if spec is None:
        return "", ""
    beside = "".join(
        f'<script src="{_esc(name)}"></script>' for name in public_spec(spec).get("weights", {}).get("files", [])
    )
    ours = "".join(f"<script>{(HERE / name).read_text()}</script>" for name in ("pack_text.js", "pack_net.js"))
    start = (
        "<script>window.PackOpening = (spec => Promise.all([PackNet.open(spec), PackText.open(spec.tokenizer)]))"
        '(JSON.parse(document.getElementById("pack-model").textContent));'
        " window.PackOpening.catch(() => {});</script>"  # a failure is said at the first typed input (pack_live.js)
    )
    tokenizers = _inert((HERE / "vendor" / "tokenizers" / "tokenizers.min.mjs").read_text(encoding="utf-8"))
    runtime = runtime_scripts(webgpu=bool(spec.get("weights")))  # a folder pack: the WebGPU build
    first = beside + runtime + f'<script type="text/plain" id="tokenizers-js">{tokenizers}</script>' + ours + start
    return first, "".join(
        f"<script>{(HERE / name).read_text()}</script>" for name in ("pack_layout.js", "pack_live.js")
    )
