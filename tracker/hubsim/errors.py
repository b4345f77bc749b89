"""Errors of the Hub emulator.

::

    HubSimError
    ├── CorpusError      the corpus directory cannot be replayed (missing file, bad manifest entry)
    └── ScriptError      a scripting call names something the emulator does not hold

Errors that a Hub *client* sees are HTTP responses, not these: they are built in
``tracker.hubsim.responses``.
"""

from __future__ import annotations


class HubSimError(Exception):
    """Base of the emulator's own errors."""


class CorpusError(HubSimError):
    """The corpus directory is unusable; the message names the file and the entry."""


class ScriptError(HubSimError):
    """A test or the demo asked the emulator for a repo, revision or change it cannot make."""
