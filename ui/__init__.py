"""What the app's pages share (streamlit only here; pages/ holds the page scripts and nothing else), in three rooms.

- shell/: what every page stands in: navigation (the list of pages), run_app (app_script.py's one call), sidebar +
  model_picker + session (the model and input a page gets), url_state (each page's URL keys, declared once),
  language, presentation (how a chart is shown and downloaded), shapes (the words per model shape), safe_text, explain.
- serving/: serving a room from one process: workers (limited child processes), caches + bounded_cache + disk_cache,
  threads, long_lived, held_models (a visitor's model while a session shows it), uploads, base_path.
- views/: the helpers of single pages, and the app halves of the decoding strategies (views/decoding_views/) and the
  positional kinds (views/positional_views/).
"""

# Imported here, once, before any page draws a chart: plotly asks sys.modules for pandas without importing it, so
# while one session's thread was still importing pandas (st.dataframe does, lazily) another session's chart failed
# with "partially initialized module 'pandas' has no attribute 'Series'". Every page imports ui/ before it draws.
import pandas  # noqa: F401, E402
