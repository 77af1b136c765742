"""The lecture pack lays out a typed input's token axes and maps in the page (pack/static/pack_layout.js) by the app's
rules (viz/tokens.token_ticks, label_px, plain_token; viz/attention_figs.heatmap_geometry), from the numbers and
character classes the pack carries (geometry_rules). Here both run on the same random token lists, in Chromium and in
this Python, and must agree: what the page's copy of the rules has to keep equal, checked on inputs nobody picked."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from viz.attention_figs import geometry_rules, heatmap_geometry
from viz.tokens import label_px, plain_token, token_ticks

STATIC = Path(__file__).resolve().parents[1] / "pack" / "static"

# Tokens of every class the rules tell apart: narrow, broad and upper-case letters, wide (CJK) characters, astral
# characters (two UTF-16 units), whitespace made visible, markup escaped, special tokens, pieces and long words
MARKS = [*"ilj.,;:!|'IWMmw@%"]  # narrow and broad Latin characters
LETTERS = [*"aAbBzZÉéßǅΣσЖж"]  # letters of several scripts, cased and not
CJK = [*"的一是在人中国语言。，！（）"]
OTHERS = [
    *("😀", "𝔘", "🇫🇷", "👩‍💻", "\u0301", "\u200b"),
    *(" ", "\t", "\n", "", "&", "<", ">", "&amp;", "<b>"),
    *("<unk>", "</s>", "<s>", "<pad>", "<id 4>", "▁the", "▁", "##ing", "Ġworld"),
    *("the", "cat", "sat", "Transformer", "attention", "positional", "supercalifragilisticexpialidocious"),
    *("注意力机制", "位置编码", "Zürich", "naïve", "ＡＢＣ", "x" * 40, "日" * 20),
]
POOL = MARKS + LETTERS + CJK + OTHERS
# what one input mostly holds: single Latin characters, single letters and CJK characters, longer tokens, anything
KINDS = [MARKS + LETTERS, LETTERS + CJK, OTHERS, POOL]


def _tokens(rng: random.Random, n: int) -> list[str]:
    """n tokens: mostly one kind (single characters, words or CJK), as a real input is, with others mixed in."""
    kind = rng.choice(KINDS)
    return [rng.choice(kind if rng.random() < 0.8 else POOL) for _ in range(n)]


def _cases(seed: int = 20261129, n: int = 300) -> list[dict]:
    rng = random.Random(seed)
    lengths = [1, 2, 3, 5, 8, 13, 21, 40, 64, 100, 160]
    cases = []
    for _ in range(n):
        q, k = _tokens(rng, rng.choice(lengths)), _tokens(rng, rng.choice(lengths))
        cases.append(
            {"q": q, "k": k, "px": rng.choice([1.5, 4, 7.3, 11, 16, 22.5, 30, 48, 64]), "extra": rng.choice([0, 28])}
        )
    return cases


def _ticks(t) -> dict:
    return {"vals": t.vals, "text": t.text, "angle": t.angle, "step": t.step}


def _python(case: dict) -> dict:
    geo = heatmap_geometry(case["q"], case["k"], extra_height=case["extra"])
    return {
        "widths": [label_px(plain_token(t)) for t in case["k"]],
        "ticks": [_ticks(token_ticks(case["k"], case["px"], horizontal=h)) for h in (True, False)],
        "geometry": {
            "cell": geo.cell,
            "height": geo.height,
            "ratio": geo.ratio,
            "x": _ticks(geo.x),
            "y": _ticks(geo.y),
        },
    }


_IN_PAGE = """([G, cases]) => {
  const L = PackLayout(G), ticks = t => ({vals: t.vals, text: t.text, angle: t.angle, step: t.step});
  return cases.map(c => {
    const g = L.geometry(c.q, c.k, c.extra);
    return {widths: c.k.map(t => L.labelPx(L.plain(t))), ticks: [true, false].map(h => ticks(L.tokenTicks(c.k, c.px, h))),
      geometry: {cell: g.cell, height: g.height, ratio: g.ratio, x: ticks(g.x), y: ticks(g.y)}};
  });
}"""


@pytest.fixture(scope="module")
def page(browser):  # conftest's Chromium of this module
    page = browser.new_page()
    scripts = "".join(
        f"<script>{(STATIC / n).read_text(encoding='utf-8')}</script>" for n in ("pack_text.js", "pack_layout.js")
    )
    page.set_content(f"<!doctype html><meta charset='utf-8'>{scripts}")
    yield page
    page.close()


def test_the_pages_token_ticks_and_map_geometry_are_the_apps_on_random_tokens(page):
    cases = _cases()
    # the page reads the rules as the pack carries them: JSON
    got = page.evaluate(_IN_PAGE, [json.loads(json.dumps(geometry_rules())), cases])
    kinds = {"upright": 0, "widened": 0, "stepped": 0}
    for case, js in zip(cases, got, strict=True):
        want = _python(case)
        assert js["widths"] == pytest.approx(want["widths"], rel=1e-12), case
        assert js["ticks"] == want["ticks"], case
        assert js["geometry"]["cell"] == pytest.approx(want["geometry"]["cell"], rel=1e-12), case
        assert {k: v for k, v in js["geometry"].items() if k != "cell"} == {
            k: v for k, v in want["geometry"].items() if k != "cell"
        }, case
        kinds["upright"] += want["geometry"]["x"]["angle"] == -90
        kinds["widened"] += want["geometry"]["ratio"] != 1
        kinds["stepped"] += want["geometry"]["x"]["step"] > 1
    assert min(kinds.values()) >= 10, kinds  # the cases reach every branch of the rules
