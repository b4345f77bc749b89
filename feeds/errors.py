"""Errors the published side raises, each answered as an HTTP status a client can act on.

::

    FeedsError
    ├── RequestRefused        a request body the app will not process; ``status`` to answer
    │   │                     (feeds.limits)
    │   ├── BodyTooLarge      over its route's byte cap (413)
    │   ├── BodyTooSlow       not all sent within the body deadline (408)
    │   ├── JsonTooDeep       JSON nested deeper than the depth cap (400)
    │   └── JsonInvalid       not JSON the app can store as it was sent (400)
    ├── OsvError              a query OSV.dev would refuse, with its gRPC code and HTTP status
    ├── FeedFilterError       a feed filter (artifact, min_severity) naming nothing we publish;
    │                         ValueError
    ├── ComputeError          a plan worker gave no value (feeds.compute)
    │   ├── PoolBusy          every worker busy and the queue full; nothing was run (503)
    │   ├── OverBudget        the call passed its CPU, memory or wall budget (422)
    │   └── ComputeFailed     the function raised in the worker
    └── PasteError            what was pasted on /paste cannot be planned (400); ValueError

Classes without a module named are defined here. Errors are caught at the
edge (the app's exception handlers in feeds.app and the routes), never in
the middle; ``ValueError`` is a second base kept for callers that catch it.
"""

from __future__ import annotations


class FeedsError(Exception):
    """Base of every error the published side raises."""


class OsvError(FeedsError):
    """A request OSV.dev would refuse, with its gRPC code and HTTP status."""

    def __init__(self, message: str, code: int = 3, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.code, self.status = message, code, status


class FeedFilterError(FeedsError, ValueError):
    """A feed filter (artifact, min_severity) that names nothing we publish."""


class PasteError(FeedsError, ValueError):
    """What was pasted on /paste cannot be planned; the message says why, in one line."""


__all__ = ["FeedFilterError", "FeedsError", "OsvError", "PasteError"]
