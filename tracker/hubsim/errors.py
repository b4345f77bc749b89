"""Errors of the Hub emulator.

::

    TrackerError (tracker.errors)
    └── HubSimError
        ├── CorpusError      the corpus directory cannot be replayed (missing file, bad entry)
        ├── ScriptError      a scripting call names something the emulator does not hold
        └── ErrorAnswer      an error answer raised inside a route, carrying the Response the
                             Hub would send (tracker.hubsim.routes)

Errors that a Hub *client* sees are HTTP responses (ErrorAnswer's), not these
classes; the tracker turns them into its own HubError on the client side.
"""

from __future__ import annotations

from tracker.errors import TrackerError


class HubSimError(TrackerError):
    """Base of the emulator's own errors."""


class CorpusError(HubSimError):
    """The corpus directory is unusable; the message names the file and the entry."""


class ScriptError(HubSimError):
    """A test or the demo asked the emulator for a repo, revision or change it cannot make."""
