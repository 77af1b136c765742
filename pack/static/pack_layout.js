// The app's layout of a token axis and a map, for the tokens typed into the lecture pack (pack_live.js), from the
// rules' numbers and character classes the pack carries (G: viz/attention_figs.geometry_rules):
//   const {plain, shown, labelPx, tokenTicks, setTicks, geometry, range} = PackLayout(G)
// tests/test_pack_layout.py holds it equal to viz/tokens and viz/attention_figs on random tokens.
const PackLayout = G => {
  "use strict";
  const range = n => Array.from({length: n}, (_, i) => i), within = PackText.within;
  const plain = (t, max = G.plain_chars) => {  // viz/tokens.plain_token
    const s = t in G.visible ? G.visible[t] : t, a = Array.from(s);
    return a.length <= max ? s : a.slice(0, max - 1).join("") + "…";
  };
  const shown = (t, max) => plain(t, max).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  function labelPx(text, size = G.tick_px) {  // viz/tokens.label_px: a label's width from its characters' classes
    let at14 = 0;
    for (const ch of text) {
      const cp = ch.codePointAt(0);
      at14 += G.narrow.includes(ch) ? G.px.narrow : within(cp, G.wide) ? G.px.wide
        : G.broad.includes(ch) || within(cp, G.upper) ? G.px.broad : G.px.average;
    }
    return at14 * size / 14;
  }
  // viz/tokens.token_ticks for an axis whose tokens are px apart: labels at least min_gap apart (every step-th); x
  // labels (horizontal) turn upright when neighbours do not fit side by side, unless most are single characters (then
  // fewer are labelled). {vals, text, angle, step}
  function tokenTicks(tokens, px, horizontal = true, size = G.tick_px) {
    const n = tokens.length, widths = tokens.map(t => labelPx(plain(t), size));
    const gap = horizontal ? G.min_gap + G.label_box * (size - G.tick_px) / G.tick_px : Math.max(G.min_gap, size);
    let step = n ? Math.max(1, Math.ceil(gap / Math.max(px, 1e-6))) : 1, angle = 0;
    const singles = tokens.filter(t => Array.from(plain(t)).length === 1).length;
    const fits = st => range(n).every(i => i % st || i + st >= n || (widths[i] + widths[i + st]) / 2 + 3 <= px * st);
    if (horizontal && n && !fits(step)) {
      if (2 * singles >= n) { while (step < n && !fits(step)) step++; } else angle = -90;
    }
    const vals = range(n).filter(i => i % step === 0);
    return {vals, text: vals.map(i => shown(tokens[i])), angle, step};
  }
  const setTicks = (axis, t) =>  // an axis given ticks {vals, text, angle}
    Object.assign(axis, {tickmode: "array", tickvals: t.vals, ticktext: t.text, tickangle: t.angle});
  const roundHalfEven = v => { const r = Math.round(v); return Math.abs(v % 1) === 0.5 && r % 2 ? r - 1 : r; };
  // viz/attention_figs.heatmap_geometry at its default sizes: square cells as large as fit (wider where that labels
  // every key), the height from the rows (rounded as Python rounds). {cell, height, x, y, ratio}
  function geometry(q, k, extra) {
    const nq = Math.max(1, q.length), nk = Math.max(1, k.length);
    let labelRow = G.label_row_px, chrome, cell, x;
    for (let attempt = 0; attempt < 2; attempt++) {  // once more with room for upright x labels, if they need it
      chrome = G.title_px + G.axis_title_px + labelRow;
      cell = Math.max(1, Math.min(G.max_cell, (G.max_height - chrome) / nq, G.max_width / nk));
      x = tokenTicks(k, cell);
      if (x.angle === 0 || labelRow > G.label_row_px) break;
      const longest = Math.max(...x.vals.map(i => Array.from(plain(k[i])).length));
      labelRow = Math.floor(Math.min(120, longest * G.char_px + 10));
    }
    let ratio = 1;
    if (x.step > 1) {  // labels dropped: the narrowest wider cells that label every key, upright if that fits too
      let found = null;
      for (const r of G.wider) {
        const wider = tokenTicks(k, cell * r);
        if (wider.step === 1 && nk * cell * r <= G.max_width) {
          found = wider.angle === 0 || !found ? [wider, r] : found;
          if (wider.angle === 0) break;
        }
      }
      if (found) [x, ratio] = found;
    }
    return {cell, height: roundHalfEven(nq * cell + chrome + extra), x, y: tokenTicks(q, cell, false), ratio};
  }
  return {plain, shown, labelPx, tokenTicks, setTicks, geometry, range};
};
