"""The app half of each decoding strategy in the page's menu: a module with `view(session, strategy, changes)`,
named by its library module's APP (model/decoding/NAME.py); the strategies' registry finds it."""
