"""The lecture pack's decoding section opened by its link, and stepped before its charts are drawn (issue 21).

Its own file: tests/test_lecture_pack_browser.py holds one browser open for its module. This module too holds one
browser (`browser`), each test in its own context; the translate pack whose drawing two tests read is opened once.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import numpy as np
import pytest

from pack.page import lecture_pack_html
from tests.browser_helpers import VIEWPORT, chromium, wait_until
from tests.i18n_helpers import msgid
from tests.test_lecture_pack import H, fake_records


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def demo_pack(tmp_path, name: str, inputs: list[str]):
    """(model, tokenizer, path): the pack of a shipped demo with `inputs` precomputed, written under tmp_path."""
    from model import load_checkpoint
    from model.checkpoints.demos import list_demos
    from pack.records import pack_records

    model, tok = load_checkpoint(next(d.path for d in list_demos() if d.name == name))
    path = tmp_path / "pack.html"
    path.write_text(lecture_pack_html(pack_records(model, tok, inputs)), encoding="utf-8")
    return model, tok, path


@contextmanager
def new_page(browser, errors: list, *init_scripts: str):
    """A page in a new context of `browser` with `init_scripts` run before its own; its errors collected in `errors`."""
    context = browser.new_context(viewport=VIEWPORT)
    for script in init_scripts:
        context.add_init_script(script)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield page
    finally:
        context.close()


@contextmanager
def warm_pack(browser, path, errors: list):
    """The pack at `path` open in headless Chromium, its warm-up run done; the page's errors collected in `errors`."""
    with new_page(browser, errors) as page:
        page.goto(path.as_uri(), wait_until="load", timeout=60_000)
        wait_until(page, "document.getElementById('live').dataset.warm === '1'", errors)
        yield page


@contextmanager
def opened_and_drawn(browser, path, errors: list, *init_scripts: str):
    """The pack at `path` open in headless Chromium with `init_scripts` run before its own, once its own charts are
    drawn and its warm-up run is done; the page's errors collected in `errors`."""
    with new_page(browser, errors, *init_scripts) as page:
        page.goto(path.as_uri(), wait_until="load", timeout=60_000)
        wait_until(page, "document.body.dataset.drawn !== undefined", errors)
        wait_until(page, "document.getElementById('live').dataset.warm === '1'", errors)
        yield page


def test_decoding_is_drawn_on_open_and_next_before_drawing_raises_nothing(browser, tmp_path):
    """Issue 21: the decoding section of the last input, opened by its link, shows its step and charts; Next pressed
    before any chart is drawn moves the step without a page error, and the charts then show that step."""
    records = fake_records(2)
    path = tmp_path / "pack.html"
    path.write_text(lecture_pack_html(records), encoding="utf-8")
    trace = records.inputs[1].trace
    errors = []
    with new_page(browser, errors) as page:
        page.goto(path.as_uri() + "#in1-decoding", wait_until="domcontentloaded", timeout=60_000)
        box = page.locator(".decoding").nth(1)
        assert box.locator(".token").text_content() == trace.steps[0].token  # the words at once, before any chart
        box.locator(".next").click()
        assert box.locator(".step-label").text_content() == f"Step 2 of {len(trace.steps)}"
        wait_until(page, "document.querySelectorAll('.decoding')[1].dataset.shown === '1'", errors)
        cross = np.array(page.evaluate("document.querySelectorAll('.decoding .cross-rows')[1].data[0].z"), dtype=float)
        L, _, S = trace.steps[1].cross.shape
        np.testing.assert_allclose(cross, trace.steps[1].cross.reshape(L * H, S), atol=1e-5)
        assert box.locator(".token").text_content() == trace.steps[1].token
        wait_until(page, "document.body.dataset.drawn !== undefined", errors)
        assert page.evaluate("document.body.dataset.drawn") != "error"
    assert errors == []


def test_a_chinese_pack_writes_the_apps_chinese_warning_for_a_typed_input(browser, tmp_path):
    """--lang zh: the pack's own text in Chinese, and the warnings the page writes for a typed input are the app's."""
    from i18n import _, language_scope
    from model import greedy_decode, load_checkpoint
    from model.checkpoints.demos import list_demos
    from model.text.inputs import check_text
    from pack.records import pack_records

    model, tok = load_checkpoint(next(d.path for d in list_demos() if d.name == "reverse"))
    records = pack_records(model, tok, ["abc"])
    text = "ab§c"
    with language_scope("zh"):
        page_html = lecture_pack_html(records)
        expected = [_(w) for w in check_text(text, tok.source, model.config.max_len - 1).warnings]
        refused = [_(e) for e in check_text("§§", tok.source, model.config.max_len - 1).errors]
        heading = _("Try your own input")
    assert heading != msgid("Try your own input") and heading in page_html and 'lang="zh-CN"' in page_html
    path = tmp_path / "pack.html"
    path.write_text(page_html, encoding="utf-8")
    errors = []
    with new_page(browser, errors) as page:
        page.goto(path.as_uri(), wait_until="load", timeout=60_000)
        box = page.locator('[data-testid="pack-input"]')
        box.fill(text)
        box.press("Enter")
        wait_until(page, "document.getElementById('live').dataset.drawn === '1'", errors)
        shown = page.locator("#live .live-messages .warning").all_text_contents()
        assert shown == expected and len(expected) == 1 and "§" in expected[0]
        assert box.input_value() == text  # what was typed stays in the box
        # the typed input's decoding steps (its charts redrawn for it before Next touches them)
        trace = greedy_decode(model, tok, check_text(text, tok.source, model.config.max_len - 1).text)
        page.locator("#live-views .decoding .next").click()
        wait_until(page, "document.querySelector('#live-views .decoding').dataset.shown === '1'", errors)
        cross = page.evaluate("document.querySelector('#live-views .decoding .cross-rows').data[0].z")
        L, H_, S = trace.steps[1].cross.shape
        np.testing.assert_allclose(np.array(cross), trace.steps[1].cross.reshape(L * H_, S), atol=1e-4)
        output = page.text_content('[data-testid="pack-output"]')
        box.fill("§§")  # nothing the model knows: the app's error, nothing run, the last output kept
        box.press("Enter")
        wait_until(page, "document.getElementById('live').dataset.drawn === '2'", errors)
        assert page.locator("#live .live-messages .error").all_text_contents() == refused and len(refused) == 1
        assert page.text_content('[data-testid="pack-output"]') == output and box.input_value() == "§§"
        assert page.text_content('[data-testid="pack-status"]') == ""  # no "running" left behind
    assert errors == []


def test_what_is_in_the_box_while_the_pack_loads_is_the_visitors(browser, tmp_path):
    """The box holds the first example from the start and the warm-up run never writes into it: a box emptied (or
    typed into) before the warm-up ends keeps what the visitor left there. (CI saw "stressed" typed into a box the
    warm-up had just refilled become "stressedstressed".)"""
    path = demo_pack(tmp_path, "reverse", ['a<b"c'])[2]
    errors = []
    with new_page(browser, errors) as page:
        # The visitor empties the box as soon as it is there: when the page is parsed, its scripts run, and the
        # warm-up waits for the pack's charts, drawn later (a machine at any load keeps this order).
        page.add_init_script(
            """document.addEventListener("DOMContentLoaded", () => {
                const box = document.querySelector('[data-testid="pack-input"]');
                window.firstValue = box.value;
                box.value = "";
                window.warmBefore = document.getElementById("live").dataset.warm || null;
            });"""
        )
        page.goto(path.as_uri(), wait_until="domcontentloaded", timeout=60_000)
        assert page.evaluate("window.firstValue") == 'a<b"c'  # the first example, quotes and all, from the HTML
        assert page.evaluate("window.warmBefore") is None  # emptied before the warm-up ran
        wait_until(page, "document.getElementById('live').dataset.warm === '1'", errors)
        assert page.locator('[data-testid="pack-input"]').input_value() == ""

    assert errors == []


def test_a_typed_input_with_longer_tokens_gets_margins_that_hold_its_labels(browser, tmp_path):
    """A typed input's charts keep their margins from the last drawing (lecture_pack.js): an input whose tokens are
    longer than every one before still gets every tick label inside its chart, none past the left or bottom edge; and
    its labels are laid out for its own tokens (pack_live.js, as viz/tokens.token_ticks): no x label runs into the
    next (they turn upright when they would), nor into the chart's legend."""
    from model import load_checkpoint
    from model.checkpoints.demos import list_demos

    tok = load_checkpoint(next(d.path for d in list_demos() if d.name == "translate"))[1]
    words = sorted((t for t in tok.source.tokens if t.isalpha()), key=len)
    short, long, many = " ".join(words[:3]), " ".join(words[-5:]), " ".join(words[-16:])
    assert len(words[-1]) >= 2 * len(words[0])
    path = demo_pack(tmp_path, "translate", [short])[2]
    errors = []
    outside = """() => PackViews.flush(document.getElementById('live-views')).then(() => {
        const out = [];
        for (const div of PackViews.charts(document.getElementById('live-views'))) {
          const box = div.getBoundingClientRect();
          for (const t of div.querySelectorAll('.xtick text, .ytick text')) {
            const r = t.getBoundingClientRect();
            if (r.width && (r.left < box.left - 0.5 || r.bottom > box.bottom + 0.5)) out.push([div.dataset.figure, t.textContent]);
          }
          const xs = [...div.querySelectorAll('.xtick text')].map(t => t.getBoundingClientRect()).filter(r => r.width)
            .sort((a, b) => a.left - b.left);  // no x label runs into the next
          xs.forEach((r, i) => { if (i && xs[i - 1].right > r.left + 1) out.push([div.dataset.figure, 'overlap', i]); });
          const legend = div.querySelector('.legend'), g = legend && legend.getBoundingClientRect();  // nor the legend
          if (g) xs.forEach((r, i) => { if (r.left < g.right && g.left < r.right && r.top < g.bottom && g.top < r.bottom) out.push([div.dataset.figure, 'legend', i]); });
        }
        return out;
    })"""
    with warm_pack(browser, path, errors) as page:
        box = page.locator('[data-testid="pack-input"]')
        for n, text in enumerate([short, long, many], start=1):  # many: the step and PE charts' labels turn upright
            box.fill(text)
            box.press("Enter")
            wait_until(page, f"document.getElementById('live').dataset.drawn === '{n}'", errors)
            assert page.evaluate(outside) == [], text
        labels = page.evaluate("document.querySelector('[data-figure=\"live-encoder_self\"]').layout.yaxis.ticktext")
        assert labels[:16] == words[-16:]  # the last input's own tokens are the labels checked
        angles = page.evaluate(
            "['cross-rows', 'pe-source'].map(k => document.querySelector(`[data-figure=\"live-${k}\"]`).layout.xaxis.tickangle)"
        )
        assert angles == [-90, -90]
    assert errors == []


def test_a_run_gives_up_between_steps_when_asked(browser, tmp_path):
    """PackNet.run awaits giveUp() before each decoder step (the page's warm-up run gives way to a typed input so):
    true after two steps gives null having asked three times; never true gives the whole run, the same as without."""
    path = demo_pack(tmp_path, "reverse", ["stressed"])[2]
    errors = []
    with warm_pack(browser, path, errors) as page:
        stopped, asked, whole, plain = page.evaluate(
            """async () => {
                const net = await PackNet.open(JSON.parse(document.getElementById('pack-model').textContent));
                const ids = window.packResult().source_ids;
                let asked = 0, never = 0;
                const stopped = await PackNet.run(net, ids, async () => ++asked > 2);
                const whole = await PackNet.run(net, ids, async () => { never++; return false; });
                const plain = await PackNet.run(net, ids);
                return [stopped, asked, [whole.out, never], plain.out];
            }"""
        )
    assert stopped is None and asked == 3
    assert whole[0] == plain and len(plain) >= 3 and whole[1] == len(plain)  # asked once per step taken
    assert errors == []


def test_the_decoder_keys_named_at_a_step_are_those_written_when_a_long_output_labels_every_other(browser, tmp_path):
    """The step view's decoder self-attention names only the keys written so far. A long output labels every n-th key
    (viz/tokens.token_ticks): the labels shown at step t are those of the labelled positions up to t, in the pack's
    own input and in a typed one."""
    from model import load_checkpoint
    from model.checkpoints.demos import list_demos

    tok = load_checkpoint(next(d.path for d in list_demos() if d.name == "copy"))[1]
    symbols = [t for t in tok.source.tokens if len(t) == 1 and t.isalpha()]
    text, typed = ("".join(symbols[i % len(symbols)] for i in range(n)) for n in (40, 30))  # 34 and 31 steps
    path = demo_pack(tmp_path, "copy", [text])[2]
    errors, t = [], 9
    shown = """([ref, t]) => { const box = document.querySelector(`.decoding[data-ref="${ref}"]`), s = box.querySelector('input.step');
        s.value = String(t); s.dispatchEvent(new Event('input')); }"""
    axis = 'ref => (a => ({vals: a.tickvals, text: a.ticktext}))(document.querySelector(`.decoding[data-ref="${ref}"] .self-rows`).layout.xaxis)'
    with warm_pack(browser, path, errors) as page:
        box = page.locator('[data-testid="pack-input"]')
        box.fill(typed)
        box.press("Enter")
        wait_until(page, "document.getElementById('live').dataset.drawn === '1'", errors)
        for ref in ("0", "live"):
            page.locator(f'.decoding[data-ref="{ref}"]').scroll_into_view_if_needed()
            page.evaluate(shown, [ref, t])
            wait_until(page, f"document.querySelector('.decoding[data-ref=\"{ref}\"]').dataset.shown === '{t}'", errors)
            a = page.evaluate(axis, ref)
            assert a["vals"][1] - a["vals"][0] >= 2, ref  # every other key (or fewer) labelled
            assert [v for v, x in zip(a["vals"], a["text"], strict=True) if x] == [v for v in a["vals"] if v <= t], ref
    assert errors == []


# plotly's count of the drawings its automargin starts again (a private field of its full layout): counted here
# (window.__redraws: the id of the chart, once per drawing started again)
_COUNT_REDRAWS = """(() => { window.__redraws = []; const seen = new WeakMap();
  Object.defineProperty(Object.prototype, '_redrawFromAutoMarginCount', {configurable: true,
    get() { return seen.get(this) || 0; },
    set(v) {
      const chart = this._container.node().closest('[data-figure]');  // (none: a chart drawn by the test)
      if (v > (seen.get(this) || 0)) window.__redraws.push(chart && chart.dataset.figure);
      seen.set(this, v); } }); })();"""

# {chart id: its margins [l, b, r, t]} of the pack's own charts as drawn
_MARGINS = """() => Object.fromEntries([...document.querySelectorAll('#static .js-plotly-plot')].map(gd =>
    [gd.dataset.figure, ['l', 'b', 'r', 't'].map(k => gd._fullLayout._size[k])]))"""


@pytest.fixture(scope="module")
def translate_drawn(browser, tmp_path_factory):
    """A translate pack of three inputs, opened at its top and drawn, as it is and without the sibling's margins
    (native.html: every chart from its figure's own): {page name: ((the charts drawn again by plotly's automargin,
    every chart drawn in order), {chart: its margins}, the pages' errors)}."""
    path = demo_pack(
        tmp_path_factory.mktemp("translate"),
        "translate",
        ["the red car sees a small dog", "my old cats eat the green apples", "a dog"],
    )[2]
    page_html = path.read_text(encoding="utf-8")
    assert page_html.count("lastOfKind.get(upright) || lastOfKind.get(kind)") == 1
    native = path.parent / "native.html"
    native.write_text(page_html.replace("lastOfKind.get(upright) || lastOfKind.get(kind)", "undefined"), "utf-8")
    drawn = {}
    for pack in (path, native):
        errors = []
        with opened_and_drawn(browser, pack, errors, _COUNT_REDRAWS, _RECORD_DRAWS) as page:
            drawn[pack.name] = page.evaluate("[window.__redraws, window.__draws]"), page.evaluate(_MARGINS), errors
    return drawn


def test_the_packs_own_charts_after_the_first_of_their_kind_are_drawn_once_with_plotlys_margins(translate_drawn):
    """plotly's automargin draws a chart again (and again) until its margins hold its labels. The pack's own charts
    start from the margins of the last chart of their kind, moved by their labels' width: most of them are drawn once,
    and every chart's margins are within 4 px of those plotly's automargin gives it from the figure's own (the same
    page without the sibling's margins)."""
    ((redraws, order), margins, errors), ((native_redraws, _), native_margins, native_errors) = (
        translate_drawn["pack.html"],
        translate_drawn["native.html"],
    )
    ids = [i for i in dict.fromkeys(order) if re.match(r"^(in\d+|live)-", i)]  # the inputs' charts, as first drawn
    assert set(ids) <= set(native_redraws)  # from the figure's own margins, every chart is drawn again
    first = {re.sub(r"^(in\d+|live)-", "", i): i for i in reversed(ids)}.values()  # the first drawn of each kind
    assert set(first) <= set(redraws)
    later = [i for i in ids if i not in first]
    again = [i for i in later if i in redraws]  # (a chart whose labels lie flat after upright ones: twice)
    assert len(later) >= 24 and len(again) <= len(later) / 4, (again, later)
    assert margins.keys() == native_margins.keys()
    far = {
        i: (m, native_margins[i]) for i, m in margins.items() if max(map(abs, np.subtract(m, native_margins[i]))) > 4
    }
    assert far == {} and errors == [] and native_errors == []


# every chart drawn (Plotly.newPlot, Plotly.react), in order: window.__draws, the figure ids
_RECORD_DRAWS = """(() => { let plotly; window.__draws = [];
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotly, set: value => {
    plotly = value;
    for (const name of ['newPlot', 'react']) {
      const draw = value[name];
      value[name] = function (gd) { window.__draws.push(gd.dataset.figure); return draw.apply(this, arguments); };
    } } }); })();"""


def test_the_page_model_runs_and_their_charts_come_before_the_packs_own_charts_off_screen(translate_drawn):
    """The page's own charts are drawn one at a time after it opens; the model's first run in the page and its charts
    (the warm-up: every chart of the box's example drawn, then drawn again) come before those of them off screen, so
    that the box's section is ready sooner, and a student's input does not share the page with them."""
    (_, draws), _, errors = translate_drawn["pack.html"]  # opened at the top: the box's section fills the screen
    live = [i for i, fid in enumerate(draws) if fid.startswith("live-")]
    assert len(live) >= 2 * 12  # every chart of the box's section drawn, then drawn again
    between = [fid for fid in draws[live[0] : live[-1]] if not fid.startswith("live-")]
    assert len(between) <= 1, between  # (one may have been under way when the model's run began)
    assert any(not fid.startswith("live-") for fid in draws[live[-1] :])  # the page's own charts came after
    assert errors == []


# JavaScript: [figure id, axis, the range drawn, the range its figure asks for] of every chart of the typed input whose
# drawn range is not its figure's (every chart drawn first)
_RANGES_DRAWN = """() => PackViews.flush(document.getElementById('live-views')).then(() =>
    PackViews.charts(document.getElementById('live-views')).flatMap(div => {
        const layout = PackViews.DATA.figures[div.dataset.figure].layout;
        return Object.keys(layout).filter(k => /^[xy]axis\\d*$/.test(k) && Array.isArray(layout[k].range))
            .map(k => [div.dataset.figure, k, div._fullLayout[k].range, layout[k].range])
            .filter(([, , drawn, asked]) => drawn.some((v, i) => Math.abs(v - asked[i]) > 1e-9));
    }))"""

# JavaScript: {figure id: figure} of the typed input's figures ("live-...") and those of precomputed input n ("in<n>-")
_FIGURES = """n => Object.fromEntries(Object.entries(PackViews.DATA.figures)
    .filter(([k]) => k.startsWith('live-') || k.startsWith(`in${n}-`)))"""


def _differences(pack, app, path: str = "") -> list[tuple[str, object, object]]:
    """Where two figure layouts (JSON) differ: (path, the pack's value, the app's)."""
    if isinstance(pack, dict) and isinstance(app, dict):
        return [d for k in sorted(set(pack) | set(app)) for d in _differences(pack.get(k), app.get(k), f"{path}.{k}")]
    if (
        isinstance(pack, list)
        and isinstance(app, list)
        and len(pack) == len(app)
        and any(isinstance(v, dict) for v in app)
    ):
        return [d for i, (a, b) in enumerate(zip(pack, app, strict=True)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if pack == app else [(path, pack, app)]


@pytest.mark.parametrize("name", ["translate", "copy", "reverse_decoder_rope"])
def test_a_typed_inputs_charts_are_laid_out_as_the_apps_for_the_same_input(name, browser, tmp_path):
    """The pack lays out a typed input's charts in the page (pack_live.js); the app lays out the same input's with
    viz/attention_figs, decoding_figs and positional_figs, as the pack does for its precomputed inputs. Each generated
    input precomputed and then typed: every layout the same (heights, which tokens are labelled, upright or flat,
    cells widened to label every key, ranges, titles, margins) and the maps' labels the same. translate: word labels
    that stand upright, and maps at the height limit; copy: single characters, cells widened; reverse_decoder_rope: a
    decoder-only model. Every chart is drawn in its figure's ranges: the maps of an input shorter than the one before
    kept the old one (Plotly.react), a grey band beside them."""
    from model import load_checkpoint
    from model.checkpoints.checkpoint import load_card
    from model.checkpoints.demos import list_demos
    from tests.test_pack_parity_browser import generated_inputs

    path = next(d.path for d in list_demos() if d.name == name)
    example, _random, unknown, long, odd = generated_inputs(name, load_checkpoint(path)[1], load_card(path))
    texts = [example, unknown, long, odd]  # (random symbols: shorter than the long one, nothing it does not show)
    pack = demo_pack(tmp_path, name, texts)[2]
    errors, widened, upright = [], 0, 0
    with warm_pack(browser, pack, errors) as page:
        box = page.locator('[data-testid="pack-input"]')
        for n, text in enumerate(texts, start=1):
            box.fill(text)
            box.press("Enter")
            wait_until(page, f"document.getElementById('live').dataset.drawn === '{n}'", errors)
            assert page.evaluate(_RANGES_DRAWN) == [], text
            figures = page.evaluate(_FIGURES, n - 1)
            typed = sorted(k.removeprefix("live-") for k in figures if k.startswith("live-"))
            assert typed and typed == sorted(k.removeprefix(f"in{n - 1}-") for k in figures if k.startswith("in")), text
            for kind in typed:
                live, app = figures[f"live-{kind}"], figures[f"in{n - 1}-{kind}"]
                assert _differences(live["layout"], app["layout"]) == [], (text, kind)
                if live["data"][0]["type"] == "heatmap" and isinstance(app["data"][0].get("y"), list):
                    assert [t.get("x") for t in live["data"]] == [t.get("x") for t in app["data"]], (text, kind)
                    assert [t.get("y") for t in live["data"]] == [t.get("y") for t in app["data"]], (text, kind)
                x = live["layout"].get("xaxis", {})
                widened += x.get("scaleratio", 1) != 1
                upright += x.get("tickangle") == -90
    assert errors == []
    assert {"translate": upright, "copy": widened}.get(name, 1) > 0  # the layouts compared include those cases
