"""The TOML file and the environment, read by pydantic-settings into one ``Settings``.

Each table of the file is a model refusing keys it does not define, so a typo
(``[server] prot``, a ``[sever]`` table, a misspelt ``database_url`` that would
silently fall back to SQLite) is one line naming the file, the table and the key
with difflib's nearest field name, never a default used in silence.
deploy/neurarch-trace.example.toml names every setting. Durations are seconds or
a number with a unit (``"90s"``, ``"30m"``, ``"1h"``, ``"1d"``). ``[[subscriptions]]``
tables are checked by tracker.alerts.spec and stored at start by
tracker.alerts.registry.sync_configured.

pydantic-settings merges the environment over the file (its
``TomlConfigSettingsSource``) over the defaults of tracker.settings' dataclasses.
Ours are ``EnvironmentSource``, because its own environment source spells a
table's setting ``PREFIX_TABLE__KEY`` while our variables are flat names of one
setting each (``ENVIRONMENT_KEYS``; ``HF_ENDPOINT`` is the Hub client's own), and
``_one_line``, because a ValidationError lists every error and the CLI prints one.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from tracker.alerts.egress import AllowList, AllowListError
from tracker.errors import ConfigFileError, RepoIdError
from tracker.hub.budget import HubBudget
from tracker.settings import (
    DEFAULT_HF_ENDPOINT,
    AlertsConfig,
    DaemonConfig,
    HubSettings,
    RepoConfig,
    Settings,
)

if TYPE_CHECKING:
    from storage import RepoId

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)\s*$")


def parse_duration(value: object) -> float:
    """Seconds from a number or a string like ``"30m"``."""
    seconds = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match["n"]) * _UNITS[match["unit"] or "s"]
    if seconds is None:
        raise ValueError(f'expected a duration such as 3600 or "1h", got {value!r}')
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    return seconds


def _refusing(test: Callable[[str], bool], rule: str) -> AfterValidator:
    """A check pydantic has no constraint for, named in its error as ``rule``."""

    def check(value: str) -> str:
        if not test(value):
            raise ValueError(f"{rule}, got {value!r}")
        return value

    return AfterValidator(check)


def _repo_id(value: Any) -> str:
    # Here, not at the top: the repo id rules live in storage, which `plan` never loads.
    from tracker.hub.repo_id import validate_repo_id

    try:
        return validate_repo_id(str(value))
    except RepoIdError as exc:
        raise ValueError(str(exc)) from None


Duration = Annotated[float, BeforeValidator(parse_duration)]
PositiveInt = Annotated[int, Field(strict=True, ge=1)]
PositiveNumber = Annotated[float, Field(strict=True, gt=0)]
Port = Annotated[int, Field(strict=True, ge=0, le=65535)]
Secret = Annotated[str, Field(strict=True, min_length=1), _refusing(str.isascii, "ASCII only")]
ApiToken = Annotated[str, Field(strict=True, min_length=16)]
Instance = Annotated[
    str, Field(strict=True, min_length=1), _refusing(lambda name: "/" not in name, "no '/'")
]
Endpoint = Annotated[str, AfterValidator(lambda url: url.rstrip("/"))]


class Table(BaseModel):
    """A table of the file: only the keys it defines."""

    model_config = ConfigDict(extra="forbid", frozen=True)


DEFAULTS = DaemonConfig()
ALERTS = AlertsConfig()


class StorageTable(Table):
    database_url: str | None = None


class HubTable(Table):
    endpoint: Endpoint = DEFAULT_HF_ENDPOINT


class DaemonTable(Table):
    interval: Duration = DEFAULTS.interval_s
    max_backoff: Duration = DEFAULTS.max_backoff_s
    workers: PositiveInt = DEFAULTS.workers
    tick: Duration = DEFAULTS.tick_s
    discovery: Duration = DEFAULTS.discovery_s
    requests_per_second: PositiveNumber = DEFAULTS.requests_per_second
    hub_budget: object = None
    lease: Duration = DEFAULTS.lease_s
    hub_timeout: Duration = DEFAULTS.hub_timeout_s
    instance: Instance | None = None


class ServerTable(Table):
    host: str = DEFAULTS.host
    port: Port = DEFAULTS.port
    public_url: str | None = None
    webhook_secret: Secret | None = None
    api_token: ApiToken | None = None


class AlertsTable(Table):
    tick: Duration = ALERTS.tick_s
    retry_base: Duration = ALERTS.retry_base_s
    retry_max_delay: Duration = ALERTS.retry_max_delay_s
    give_up_after: Duration = ALERTS.give_up_after_s
    allow: Annotated[list[str], Field(strict=True)] = []


class RepoTable(Table):
    id: Annotated[str, BeforeValidator(_repo_id)]
    interval: Duration | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_id(cls, value: Any) -> Any:
        """``repos = ["org/name"]`` is short for ``[[repos]] id = "org/name"``."""
        return {"id": value} if isinstance(value, str) else value


TABLES: Mapping[str, type[Table]] = {
    "storage": StorageTable,
    "hub": HubTable,
    "daemon": DaemonTable,
    "server": ServerTable,
    "alerts": AlertsTable,
    "repos": RepoTable,
}
"""Every table of the file (``[[subscriptions]]`` tables are checked by tracker.alerts.spec)."""
SUBSCRIPTIONS = "subscriptions"
FILE_SETTINGS = tuple(
    f"{name}.{key}" for name, table in TABLES.items() for key in table.model_fields
)
"""Every key of the TOML file; deploy/neurarch-trace.example.toml shows each, and the docs
test checks README names each."""

ENVIRONMENT_KEYS: Mapping[str, tuple[str, str]] = {
    "NEURARCH_DATABASE_URL": ("storage", "database_url"),
    "HF_ENDPOINT": ("hub", "endpoint"),
    "NEURARCH_API_TOKEN": ("server", "api_token"),
    "NEURARCH_ALERTS_ALLOW": ("alerts", "allow"),
}
"""The variables that stand over a setting of the file: variable -> (table, key)."""


class ConfigFile(BaseSettings):
    """The file's tables, each a model, with the environment merged over them."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    storage: StorageTable = StorageTable()
    hub: HubTable = HubTable()
    daemon: DaemonTable = DaemonTable()
    server: ServerTable = ServerTable()
    alerts: AlertsTable = AlertsTable()
    repos: list[RepoTable] = []
    subscriptions: list[Any] = []

    @model_validator(mode="after")
    def _repos_once(self) -> ConfigFile:
        seen: set[str] = set()
        for repo in self.repos:
            if repo.id in seen:
                raise ValueError(f"repo {repo.id!r} is listed twice")
            seen.add(repo.id)
        return self

    def over(self, base: Settings, source: str, environ: Mapping[str, str]) -> Settings:
        """``base`` with these tables over it; ``source`` names the file in errors."""
        where = _namer(source, environ)
        return replace(
            base,
            storage=replace(
                base.storage, database_url=self.storage.database_url or base.storage.database_url
            ),
            hub=replace(base.hub, endpoint=self.hub.endpoint),
            daemon=self.daemon_config(where),
        )

    def daemon_config(self, where: Callable[[str, str], str]) -> DaemonConfig:
        """The ``serve`` sections; ``where(table, key)`` names a setting in errors."""
        daemon, server, alerts = self.daemon, self.server, self.alerts
        try:
            allow = AllowList.parse(alerts.allow, where("alerts", "allow"))
        except AllowListError as exc:
            raise ConfigFileError(str(exc)) from None
        return DaemonConfig(
            # cast, not a second check: _repo_id made each id with storage's constructor
            repos=tuple(RepoConfig(cast("RepoId", repo.id), repo.interval) for repo in self.repos),
            interval_s=daemon.interval,
            max_backoff_s=daemon.max_backoff,
            workers=daemon.workers,
            tick_s=daemon.tick,
            discovery_s=daemon.discovery,
            requests_per_second=daemon.requests_per_second,
            hub_budget=None
            if daemon.hub_budget is None
            else HubBudget.parse(daemon.hub_budget, where("daemon", "hub_budget")),
            lease_s=daemon.lease,
            hub_timeout_s=daemon.hub_timeout,
            host=server.host,
            port=server.port,
            webhook_secret=server.webhook_secret,
            api_token=server.api_token,
            instance=daemon.instance,
            public_url=server.public_url,
            subscriptions=parse_subscriptions(self.subscriptions, where("", SUBSCRIPTIONS)),
            alerts=AlertsConfig(
                alerts.tick, alerts.retry_base, alerts.retry_max_delay, alerts.give_up_after, allow
            ),
        )


class EnvironmentSource(PydanticBaseSettingsSource):
    """``ENVIRONMENT_KEYS`` read from ``environ`` into the tables they stand over.

    An unset or blank variable leaves the file's value; ``NEURARCH_ALERTS_ALLOW``
    holds entries separated by commas or spaces.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: the whole environment is read at once by ``__call__``."""
        return None, field_name, False  # every value comes from __call__

    def __call__(self) -> dict[str, Any]:
        """The settings the environment sets, as ``{table: {key: value}}`` (``ENVIRONMENT_KEYS``)."""
        tables: dict[str, Any] = {}
        for name, (table, key) in ENVIRONMENT_KEYS.items():
            value = (self.environ.get(name) or "").strip()
            if value:
                words = value.replace(",", " ").split()
                tables.setdefault(table, {})[key] = words if key == "allow" else value
        return tables


def read_settings(base: Settings, path: Path | None, environ: Mapping[str, str]) -> Settings:
    """``base`` under the file at ``path`` (None: no file) and then ``environ``."""
    sources: list[PydanticBaseSettingsSource] = [EnvironmentSource(ConfigFile, environ)]
    source = "environment"
    if path is not None:
        source = str(path)
        if not path.is_file():
            raise ConfigFileError(f"{path}: configuration file not found")
        try:
            sources.append(TomlConfigSettingsSource(ConfigFile, toml_file=path))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None
    try:
        # BaseSettings' documented argument for sources built per call (this file, this
        # environment); the pydantic mypy plugin's signature of __init__ leaves it out.
        loaded = ConfigFile(_build_sources=(tuple(sources), {}))  # type: ignore[call-arg]
    except ValidationError as exc:
        raise _one_line(exc, source, _namer(source, environ)) from None
    settings = loaded.over(base, source, environ)
    token = (environ.get("HF_TOKEN") or "").strip() or None
    return replace(settings, hub=HubSettings(settings.hub.endpoint, token), config_file=path)


def parse_document(document: Mapping[str, Any], source: str = "config") -> ConfigFile:
    """A parsed TOML document checked table by table; errors name ``source``."""
    try:
        return ConfigFile.model_validate(document)
    except ValidationError as exc:
        raise _one_line(exc, source, _namer(source, {})) from None


def parse_daemon_config(document: Mapping[str, Any], source: str = "config") -> DaemonConfig:
    """The ``serve`` sections of a parsed TOML document."""
    return parse_document(document, source).daemon_config(_namer(source, {}))


def load_daemon_config(path: Path | None) -> DaemonConfig:
    """The ``serve`` sections of the file at ``path`` (None: the defaults), no environment."""
    if path is None:
        return DaemonConfig()
    return read_settings(Settings.in_dir(Path()), path, {}).daemon


def parse_subscriptions(entries: list[Any], where: str) -> tuple[Any, ...]:
    """The ``[[subscriptions]]`` tables; errors name ``subscriptions[i]`` and the field."""
    if not entries:
        return ()
    # Only now: the spec loads the estimator and storage, which `plan` and --help never need.
    from tracker.alerts.spec import SubscriptionError, SubscriptionSpec, parse_subscription

    specs: list[SubscriptionSpec] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        at = f"{where}[{index}]"
        try:
            spec = parse_subscription(entry, source=at)
        except SubscriptionError as exc:
            raise ConfigFileError(str(exc)) from None
        if spec.name in seen:
            raise ConfigFileError(
                f"{at}: name {spec.name!r} is already used by subscriptions[{seen[spec.name]}]"
            )
        seen[spec.name] = index
        specs.append(spec)
    return tuple(specs)


def _namer(source: str, environ: Mapping[str, str]) -> Callable[[str, str], str]:
    """How an error names a setting: the variable that set it, else the file and the key."""
    variables = {place: name for name, place in ENVIRONMENT_KEYS.items()}

    def where(table: str, key: str) -> str:
        variable = variables.get((table, key))
        if variable and (environ.get(variable) or "").strip():
            return variable
        return f"{source}: {table}.{key}" if table else f"{source}: {key}"

    return where


_SHAPES = {
    "model_type": "[{}] must be a table",
    "model_attributes_type": "[{}] must be a table",
    "list_type": "{0} must be an array of tables ([[{0}]])",
}


def _one_line(
    error: ValidationError, source: str, where: Callable[[str, str], str]
) -> ConfigFileError:
    """The error a person fixes first, in one line: an unknown table or key before any value."""
    errors = error.errors()
    unknown = sorted(
        (e for e in errors if e["type"] == "extra_forbidden"), key=lambda e: str(e["loc"])
    )
    first = unknown[0] if unknown else errors[0]
    loc = first["loc"]
    if unknown:
        return ConfigFileError(f"{source}: {_unknown(loc)}")
    if len(loc) == 1 and first["type"] in _SHAPES:
        return ConfigFileError(f"{source}: {_SHAPES[first['type']].format(loc[0])}")
    named = where(str(loc[0]), str(loc[1])) if len(loc) == 2 else f"{source}{_path(loc)}"
    return ConfigFileError(f"{named}: {_message(first)}")


def _unknown(loc: tuple[int | str, ...]) -> str:
    """``[table] has no setting 'key' (did you mean ...)``, or the same of a table."""
    *inside, word = (str(part) for part in loc)
    if not inside:
        return f"[{word}] is not a table of the configuration file{_suggestion(word, [*TABLES, SUBSCRIPTIONS])}"
    table = inside[0]
    place = f"{table}[{inside[1]}]" if len(inside) > 1 else f"[{table}]"
    return f"{place} has no setting {word!r}{_suggestion(word, list(TABLES[table].model_fields))}"


def _suggestion(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(choices)})"


def _path(loc: tuple[int | str, ...]) -> str:
    """``: repos[0].interval`` from pydantic's ``("repos", 0, "interval")``; ``()``: ``""``."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    return f": {text[1:]}" if text else ""


def _message(error: ErrorDetails) -> str:
    """Our own validators' words as written; pydantic's with the value it was given."""
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ValueError):
        return str(cause)
    return error["msg"] if error["type"] == "missing" else f"{error['msg']}, got {error['input']!r}"


__all__ = [
    "ENVIRONMENT_KEYS",
    "FILE_SETTINGS",
    "TABLES",
    "ConfigFile",
    "ConfigFileError",
    "EnvironmentSource",
    "load_daemon_config",
    "parse_daemon_config",
    "parse_document",
    "parse_duration",
    "read_settings",
]
