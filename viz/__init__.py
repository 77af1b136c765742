"""Figure builders: numpy arrays and token lists in, plotly Figures (or bertviz HTML strings) out.

Nothing here imports torch or streamlit.
"""
