"""The registry entry of one architecture family and the request it builds from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from estimator.architecture import Architecture, HeadKind
from estimator.config import Config


@dataclass(frozen=True)
class Request:
    """What describe() resolved before handing the config to a family."""

    model_type: str
    architecture: str
    head: HeadKind
    supported: bool = True


@dataclass(frozen=True)
class Family:
    """``class_prefix`` recognises configs without model_type (``BertForMaskedLM``)."""

    name: str
    class_prefix: str
    default_architecture: str
    heads: frozenset[HeadKind]
    build: Callable[[Config, Request], Architecture]
