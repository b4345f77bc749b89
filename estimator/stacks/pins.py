"""A stack as text: ``torch==2.4 transformers==4.44``, a requirements file or a lock file.

Parsing is pure: the CLI reads the file (or ``importlib.metadata``) and hands
the text or the pairs here, so the estimator never touches the filesystem.
Versions compare by their leading release numbers (``2.4.1+cu121`` is
``(2, 4, 1)``, ``0.6.4.post1`` is ``(0, 6, 4)``): a mechanism's range is
stated in releases, never in local or pre-release tags.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from estimator.errors import StackError

MAX_PINS: Final = 4096
MAX_TEXT: Final = 4 * 2**20
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_PIN: Final = re.compile(rf"^({_NAME})==([0-9][0-9A-Za-z.+!_-]{{0,63}})$")
_REQUIREMENT: Final = re.compile(
    rf"^({_NAME})\s*(?:\[[^\]]{{0,256}}\])?\s*(===|==|~=|>=)\s*([0-9][0-9A-Za-z.*+!_-]{{0,63}})"
)
_RELEASE: Final = re.compile(r"^(?:\d+!)?(\d{1,9}(?:\.\d{1,9}){0,7})")

Version = tuple[int, ...]


def canonical_name(name: str) -> str:
    """PEP 503's normal form: ``Text_Generation.Inference`` is ``text-generation-inference``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def release(text: str) -> Version:
    """``2.4.1+cu121`` -> ``(2, 4, 1)``; StackError for text with no release number."""
    m = _RELEASE.match(text.strip())
    if m is None:
        raise StackError(f"stack: {text[:64]!r} is not a version")
    return tuple(int(p) for p in m.group(1).split("."))


def at_least(version: Version, bound: Version) -> bool:
    """``version >= bound``, missing trailing parts read as 0 (``2.4`` equals ``2.4.0``)."""
    width = max(len(version), len(bound))
    return version + (0,) * (width - len(version)) >= bound + (0,) * (width - len(bound))


@dataclass(frozen=True)
class Stack:
    """The libraries and versions that run a job, by canonical name, in name order."""

    pins: tuple[tuple[str, str], ...] = ()

    def version(self, library: str) -> Version | None:
        """The pinned release of ``library`` (canonical name); None when it is not pinned."""
        for name, text in self.pins:
            if name == library:
                return release(text)
        return None

    def version_text(self, library: str) -> str | None:
        """The pin of ``library`` as written (``2.4.1+cu121``); None when not pinned."""
        return dict(self.pins).get(library)

    def only(self, libraries: Iterable[str]) -> Stack:
        """The stack narrowed to ``libraries``, order kept."""
        keep = set(libraries)
        return Stack(tuple(p for p in self.pins if p[0] in keep))

    def text(self) -> str:
        """The form ``parse_stack`` reads back: ``torch==2.4 transformers==4.44``."""
        return " ".join(f"{name}=={version}" for name, version in self.pins)

    def __bool__(self) -> bool:
        return bool(self.pins)


def stack_of(pairs: Iterable[tuple[str, str]]) -> Stack:
    """A Stack from (name, version) pairs; the last pin of a name wins, as pip's resolver keeps one."""
    out: dict[str, str] = {}
    for n, (name, version) in enumerate(pairs):
        if n >= MAX_PINS:
            raise StackError(f"stack: more than {MAX_PINS} pins")
        if not re.fullmatch(_NAME, name):
            raise StackError(f"stack: {name[:64]!r} is not a package name")
        release(version)
        out[canonical_name(name)] = version
    return Stack(tuple(sorted(out.items())))


def parse_stack(text: str) -> Stack:
    """``torch==2.4 transformers==4.44 peft==0.12`` (spaces or commas between pins)."""
    if len(text) > MAX_TEXT:
        raise StackError(f"stack: longer than {MAX_TEXT} characters")
    pairs = []
    for token in re.split(r"[\s,]+", text.strip()):
        if not token:
            continue
        m = _PIN.match(token)
        if m is None:
            raise StackError(f"stack: {token[:64]!r} is not NAME==VERSION (torch==2.4)")
        pairs.append((m.group(1), m.group(2)))
    return stack_of(pairs)


def parse_requirements(text: str) -> Stack:
    """A requirements file or ``pip freeze``: every ``name==version`` (also ``===``, ``~=``
    and ``>=``, read as the version they name). Options, URLs, editable installs and
    unpinned names say no version and are skipped; an environment marker is ignored."""
    if len(text) > MAX_TEXT:
        raise StackError(f"stack: longer than {MAX_TEXT} characters")
    pairs = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = _REQUIREMENT.match(line)
        if m is not None:
            pairs.append((m.group(1), m.group(3).rstrip(".*")))
    return stack_of(pairs)


def parse_lock(text: str) -> Stack:
    """A TOML lock file (``uv.lock``, ``poetry.lock``, ``pylock.toml``): its
    ``[[package]]`` tables' ``name`` and ``version``."""
    if len(text) > MAX_TEXT:
        raise StackError(f"stack: longer than {MAX_TEXT} characters")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StackError(f"stack: lock file is not TOML ({exc})") from exc
    packages = document.get("package", document.get("packages", []))
    if not isinstance(packages, list):
        raise StackError("stack: lock file has no [[package]] tables")
    pairs = [
        (p["name"], p["version"])
        for p in packages
        if isinstance(p, dict)
        and isinstance(p.get("name"), str)
        and isinstance(p.get("version"), str)
    ]
    return stack_of(pairs)
