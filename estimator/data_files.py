"""The estimator's data files (cards, rules, recipes, engines, mechanisms, accuracy), read in place.

They sit in ``estimator/data/`` beside the modules, as every install of the package
(wheel or editable) leaves them, so they are read by path. ``importlib.resources`` would
read them the same way and also serve a zipped package, which nothing installs; importing
it (zipfile, tempfile, shutil and the compressors behind them) cost ``plan CONFIG`` about a
sixth of its start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

DATA: Final = Path(__file__).resolve().parent / "data"


def data_path(name: str) -> Path:
    """The data file ``name`` (``cards.json``, ``recipes/peft.json``...)."""
    return DATA / name


def data_text(name: str) -> str:
    """The text of the data file ``name``, as UTF-8."""
    return data_path(name).read_text("utf-8")


__all__ = ["DATA", "data_path", "data_text"]
