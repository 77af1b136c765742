"""The app half of each decoding strategy in the page's menu: `ui/decoding_views/NAME.py` (NAME: the library
module's name in model/decoding/) with `view(session, strategy, changes)`. ui/decoding_strategy.py finds them."""
