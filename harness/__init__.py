"""What the tests and the benchmarks share: a development package, not installed by pyproject.toml.

browser.py      headless Debian Chromium, a `streamlit run app.py` server process, a watch on every page
charts.py       the page's plotly charts as drawn: ticks, titles, data, label layout, a click on a point
random_attention.py  softmax attention in the Capture layout, no model (figure builders' tests and benchmarks)
view_checks.py  a view's signature (two windows showing the same view), glyphs a font draws as empty boxes
apptest.py      app pages run headless with streamlit.testing.v1.AppTest
stream_client.py  sessions over Streamlit's websocket protocol, without a browser
proxy.py        nginx in front of several app processes
reference/      independent reference models of the checkpoint formats the importers read

Nothing here imports pytest or tests/: tests/browser_helpers.py and tests/apptest_helpers.py wrap these
for pytest (a missing browser skips a test, and fails it under CI).
"""
