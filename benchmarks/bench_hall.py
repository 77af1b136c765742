"""The hall sweep: every view of every page, for the three model shapes, at 1366x768 and 1920x1080, in both
languages, with present=1, in headless Chromium against `streamlit run app.py`.

    python -m benchmarks.bench_hall [--pages attention,model] [--shapes decoder-only] [--langs en] [--shots DIR]

Shapes: the encoder-decoder demo (reverse), the decoder-only demo (reverse_decoder_rope) and an encoder-only BERT
folder with its masked-LM head built tiny here with transformers. Each view is opened at 1366x768, measured, then
the window is made 1920x1080 and measured again (harness/hall.py). The table: where the first chart ends against
the window's height (1366 and 1920), the share of the content's width it takes at 1920 (in columns: "cols"), the
lowest caption contrast, and what a hall would not see right (the first chart cut, a chart standing alone under
60% of the width at 1920, a caption under 4.5:1, a label cut short). --shots saves a PNG of each window.
Needs /usr/bin/chromium and playwright.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from harness.browser import WAIT_S, AppServer, Watch, chromium  # noqa: E402
from harness.hall import SAME_FOR_EVERY_MODEL, SCREENS, VIEWS, measure, problems, wait_still  # noqa: E402

TEXT = {"encoder-decoder": "stressed", "decoder-only": "stressed=", "encoder-only": "the cat sat on a mat"}


def bert_folder(root: Path) -> Path:
    """A tiny random BERT with its masked-LM head (2 layers of 32, 4 heads) and a WordPiece tokenizer trained here,
    written as a Hugging Face folder with transformers (the tests build theirs in tests/hf_one_stack.py)."""
    import torch
    import transformers
    from tokenizers import BertWordPieceTokenizer, processors

    folder = root / "bert-mlm-tiny"
    folder.mkdir()
    tok = BertWordPieceTokenizer(lowercase=True)
    tok.train_from_iterator(
        [TEXT["encoder-only"], "birds sang while the dog ran to the red house"] * 20, vocab_size=120
    )
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tok.save(str(folder / "tokenizer.json"))
    config = transformers.BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=40,
    )  # fmt: skip
    torch.manual_seed(0)
    transformers.BertForMaskedLM(config).save_pretrained(str(folder))
    return folder


def sweep(server: AppServer, watch: Watch, models: dict, views, langs, shots: Path | None) -> list[list]:
    rows = []
    for shape, model in models.items():
        for page, params in views:
            # the shape's model and text, unless the view names its own model (then with that model's example)
            own = {"model": model, "text": TEXT[shape]} if "model" not in params else {}
            params = {**own, **params}
            if shape != "encoder-decoder" and (
                params["model"] != model or params.get("pe_view") in SAME_FOR_EVERY_MODEL
            ):
                continue  # a view of another model (RoPE's demo), or of the paper's sinusoids alone: once
            for lang in langs:
                watch.page.set_viewport_size(SCREENS[0])
                t0 = time.perf_counter()
                watch.goto(server.url(page, present="1", lang=lang, **params))
                watch.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=WAIT_S * 1000)
                wait_still(watch.page, WAIT_S * 1000)
                seen, found = [], []
                for screen in SCREENS:
                    watch.page.set_viewport_size(screen)
                    shown = measure(watch.page, screen, WAIT_S * 1000)
                    seen.append(shown)
                    found += [f"{screen['width']}: {p}" for p in problems(shown, screen)]
                    if shots:
                        view = "-".join(str(v) for k, v in params.items() if k not in own)
                        name = f"{page}-{view or 'page'}-{shape}-{lang}-{screen['width']}.png"
                        watch.page.screenshot(path=str(shots / name.replace(":", "_").replace(" ", "_")))
                small, large = seen
                first = large["first"]
                share = (
                    "-"
                    if first is None
                    else "cols"
                    if first["inColumns"]
                    else f"{first['width'] / large['content']:.0%}"
                )
                bottoms = [
                    f"{s['first']['bottom']:.0f}/{sc['height']}" if s["first"] else "-" for s, sc in zip(seen, SCREENS)
                ]
                contrast = min((s["contrast"] for s in seen if s["contrast"] is not None), default=None)
                errors = watch.tracebacks()
                rows.append([
                    page, " ".join(f"{k}={v}" for k, v in params.items() if k not in own) or "-",
                    shape, lang, *bottoms, share, "-" if contrast is None else f"{contrast:.1f}",
                    "; ".join(found + [f"traceback {e[:60]!r}" for e in errors]) or "ok",
                    f"{time.perf_counter() - t0:.1f}",
                ])  # fmt: skip
                print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="", help="comma-separated pages (default: every page)")
    parser.add_argument("--shapes", default="encoder-decoder,decoder-only,encoder-only")
    parser.add_argument("--langs", default="en,zh")
    parser.add_argument("--shots", type=Path, default=None, help="a folder for a PNG of each view and window")
    args = parser.parse_args()
    pages = [p for p in args.pages.split(",") if p]
    views = [v for v in VIEWS if not pages or v[0] in pages]
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        from model.checkpoints.serving import ENV

        os.environ[ENV] = str(tmp)  # the server may open the BERT folder built here
        os.environ.setdefault("VIZ_CACHE_DIR", str(tmp / "cache"))  # results computed, not read from home
        models = {"encoder-decoder": "demo:reverse", "decoder-only": "demo:reverse_decoder_rope",
                  "encoder-only": f"path:{bert_folder(tmp)}"}  # fmt: skip
        models = {k: v for k, v in models.items() if k in args.shapes.split(",")}
        server = AppServer(tmp)
        try:
            with chromium() as browser:
                server.first_visit(browser)
                watch = Watch(browser, server.origin)
                rows = sweep(server, watch, models, views, args.langs.split(","), args.shots)
                watch.close()
        finally:
            server.stop()
    print()
    print(table(
        ["page", "view", "shape", "lang", "first chart bottom 1366", "first chart bottom 1920", "width share 1920",
         "caption contrast", "problems", "s"],
        rows, title="The hall: every view, present=1 (bottom: px / window height)",
    ))  # fmt: skip
    bad = sum(r[-2] != "ok" for r in rows)
    print(f"\n{len(rows)} views x 2 screens, {bad} with problems; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
