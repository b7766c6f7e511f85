"""Errors raised by the knowledge package; the CLI and API translate them at their edges."""


class BankError(ValueError):
    """The bank on disk is malformed; the message names file, entry id and field."""


class SearchError(ValueError):
    """A search request cannot be served (bad filter, empty query, store unreachable)."""
