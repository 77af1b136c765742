"""The notebook widget's front end (viz/notebook_widget.js) on a plain page, for a test or a benchmark in Chromium: a
stand-in for anywidget's model (get, set, on, off, save_changes) holds the widget's state; the module is loaded from
a blob, so the page makes no request at all."""

from __future__ import annotations

import json

from viz.notebook import ESM


def widget_page(widget) -> str:
    """HTML that draws `widget` (a viz.notebook.AttentionWidget) as a notebook would; window.__state is its state,
    window.__model the stand-in (set a name and its change listeners run, as anywidget's do), window.__rendered the
    time (performance.now) the first drawing ended."""
    state = {name: getattr(widget, name) for name in ("data", "view", "kind", "layer", "head")}
    module = json.dumps(ESM.read_text(encoding="utf-8"))
    return f"""<!doctype html><html><body><div id="out"></div><script type="module">
const state = {json.dumps(state)};
const handlers = {{}};
const model = {{
  get: (k) => state[k],
  set: (k, v) => {{ state[k] = v; (handlers['change:' + k] || []).forEach(f => f()); }},
  on: (e, f) => {{ (handlers[e] = handlers[e] || []).push(f); }},
  off: () => {{}},
  save_changes: () => {{}},
}};
const url = URL.createObjectURL(new Blob([{module}], {{type: 'text/javascript'}}));
const widget = (await import(url)).default;
window.__start = performance.now();
widget.render({{ model, el: document.getElementById('out') }});
window.__rendered = performance.now();
window.__state = state;
window.__model = model;
</script></body></html>"""
