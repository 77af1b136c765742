"""The one error type for checkpoints and the files around them (a ValueError, so callers that catch
ValueError keep working).

Raise it with an i18n Message, `CheckpointError(M_("{name} is ...", name=...))`: str(err) is the English text, and
a page shows `i18n.error_text(err)`, the template translated into the reader's language with the values after."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message says which file and what is wrong, never its contents."""
