"""The `transformer-viz` command (pyproject.toml installs it): serve the app, write a lecture pack, train a demo.

main.py    the command and its subcommands
serve.py   `streamlit run` on the installed app.py with the settings of .streamlit/config.toml
figure.py  one view as an SVG, PDF or PNG file for a paper or a slide
pack.py    the lecture pack writer (also `python -m scripts.lecture_pack` from the repository)
Training is model/train.py's own command line (`python -m model.train`).
"""
