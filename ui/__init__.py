"""What the app's pages share (streamlit only here; pages/ holds the page scripts and nothing else).

navigation (the list of pages), run_app (app.py's one call), sidebar + model_picker + session (the model and input
a page gets), url_state (each page's URL keys, declared once), caches + bounded_cache (model calls shared by every
session), threads, uploads, safe_text, presentation, language, and the helpers of single pages (*_ui, decoding_*,
positional_*, explain).
"""

# Imported here, once, before any page draws a chart: plotly asks sys.modules for pandas without importing it, so
# while one session's thread was still importing pandas (st.dataframe does, lazily) another session's chart failed
# with "partially initialized module 'pandas' has no attribute 'Series'". Every page imports ui/ before it draws.
import pandas  # noqa: F401, E402
