"""The one error type for checkpoints and the files around them (a ValueError, so callers that catch
ValueError keep working)."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message says which file and what is wrong, never its contents."""
