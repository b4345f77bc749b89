"""Settings precedence: defaults, then the TOML file, then the environment, read once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tracker.cli import main
from tracker.config_file import FILE_SETTINGS, ConfigFileError
from tracker.hub.budget import HubBudget
from tracker.settings import Settings, SettingsError

TOKEN = "file-token-0123456789"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_environment_overrides_the_file_which_overrides_the_defaults(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        f'[storage]\ndatabase_url = "sqlite:///x.db"\n[server]\napi_token = "{TOKEN}"\n',
    )
    base = {"NEURARCH_DATA_DIR": str(tmp_path)}
    defaults = Settings.load(None, base)
    assert defaults.daemon.api_token is None
    assert defaults.storage.database_url == f"sqlite:///{tmp_path / 'neurarch-trace.db'}"
    assert defaults.hub.endpoint == "https://huggingface.co"
    from_file = Settings.load(config, base)
    assert (from_file.storage.database_url, from_file.daemon.api_token) == ("sqlite:///x.db", TOKEN)
    env = {**base, "NEURARCH_API_TOKEN": "env-token-abcdefghij", "HF_ENDPOINT": "http://h:1/"}
    from_env = Settings.load(config, env)
    assert (from_env.daemon.api_token, from_env.hub.endpoint) == (
        "env-token-abcdefghij",
        "http://h:1",
    )


def test_one_load_fills_every_section_from_one_file(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        '[hub]\nendpoint = "http://hub.local:1"\n'
        '[daemon]\ninterval = "30m"\nworkers = 2\n'
        '[server]\nport = 9000\npublic_url = "https://trace.example"\n'
        '[alerts]\nretry_base = "1m"\nallow = ["10.0.0.0/8"]\n'
        '[[repos]]\nid = "org/model"\n',
    )
    settings = Settings.load(
        None, {"NEURARCH_DATA_DIR": str(tmp_path), "NEURARCH_CONFIG": str(config)}
    )
    assert settings.config_file == config
    assert settings.hub.endpoint == "http://hub.local:1"
    daemon = settings.daemon
    assert (daemon.interval_s, daemon.workers, daemon.port) == (1800.0, 2, 9000)
    assert daemon.public_url == "https://trace.example"
    assert (daemon.alerts.retry_base_s, daemon.alerts.allow.entries) == (60.0, ("10.0.0.0/8",))
    assert [repo.repo_id for repo in daemon.repos] == ["org/model"]


def test_the_hub_token_comes_only_from_the_environment(tmp_path: Path) -> None:
    base = {"NEURARCH_DATA_DIR": str(tmp_path)}
    assert Settings.load(None, base).hub.token is None
    assert Settings.load(None, {**base, "HF_TOKEN": "hf_abc"}).hub.token == "hf_abc"


@pytest.mark.parametrize("value", ['"short"', "12345678901234567890", "true"])
def test_an_unusable_api_token_in_the_file_is_refused(tmp_path: Path, value: str) -> None:
    config = write(tmp_path / "c.toml", f"[server]\napi_token = {value}\n")
    with pytest.raises(SettingsError, match=r"server\.api_token"):
        Settings.load(config, {"NEURARCH_DATA_DIR": str(tmp_path)})


@pytest.mark.parametrize(
    ("text", "named"),
    [("storage = 3\n", r"\[storage\] must be a table"), ("[daemon\n", "not valid TOML")],
)
def test_a_broken_file_is_one_settings_error_naming_it(
    tmp_path: Path, text: str, named: str
) -> None:
    config = write(tmp_path / "c.toml", text)
    with pytest.raises(SettingsError, match=named):
        Settings.load(config, {"NEURARCH_DATA_DIR": str(tmp_path)})
    with pytest.raises(ConfigFileError, match="not found"):
        Settings.load(tmp_path / "absent.toml", {"NEURARCH_DATA_DIR": str(tmp_path)})


def test_every_command_exits_2_in_one_line_on_a_bad_configuration_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path / "c.toml", "[daemon]\nworkers = 0\n")
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path))
    assert main(["--config", str(config), "history", "org/model"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"neurarch-trace: {config}: daemon.workers: Input should be greater than or equal to 1, got 0\n"
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[server]\nprot = 9000\n", "[server] has no setting 'prot' (did you mean 'port'?)"),
        (
            "[sever]\nport = 9000\n",
            "[sever] is not a table of the configuration file (did you mean 'server'?)",
        ),
        (
            '[storage]\ndatabase_ulr = "postgresql://db/x"\n',
            "[storage] has no setting 'database_ulr' (did you mean 'database_url'?)",
        ),
        (
            '[server]\napi_tokn = "0123456789abcdef"\n',
            "[server] has no setting 'api_tokn' (did you mean 'api_token'?)",
        ),
        (
            '[[repos]]\nid = "org/model"\nintrval = "1h"\n',
            "repos[0] has no setting 'intrval' (did you mean 'interval'?)",
        ),
        (
            '[alerts]\ngive_up = "1h"\n',
            "[alerts] has no setting 'give_up' (did you mean 'give_up_after'?)",
        ),
        ('[hub]\ntoken = "hf_x"\n', "[hub] has no setting 'token' (known: endpoint)"),
    ],
)
def test_a_typo_in_the_file_is_one_line_naming_file_table_and_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    line: str,
) -> None:
    config = write(tmp_path / "c.toml", text)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path))
    assert main(["--config", str(config), "history", "org/model"]) == 2
    assert capsys.readouterr().err == f"neurarch-trace: {config}: {line}\n"


FILE_VALUES: dict[str, tuple[object, object]] = {
    # setting: (value in the file, what Settings then holds where the accessor below looks)
    "storage.database_url": ("sqlite:///elsewhere.db", "sqlite:///elsewhere.db"),
    "hub.endpoint": ("http://hub.local:9", "http://hub.local:9"),
    "daemon.interval": ("2h", 7200.0),
    "daemon.max_backoff": ("3h", 10800.0),
    "daemon.workers": (7, 7),
    "daemon.tick": (9, 9.0),
    "daemon.discovery": ("7m", 420.0),
    "daemon.requests_per_second": (2.5, 2.5),
    "daemon.hub_budget": ("2500/5m", HubBudget(2500, 300.0)),
    "daemon.lease": ("2m", 120.0),
    "daemon.hub_timeout": ("11s", 11.0),
    "daemon.instance": ("trace-b", "trace-b"),
    "server.host": ("0.0.0.0", "0.0.0.0"),
    "server.port": (9999, 9999),
    "server.public_url": ("https://trace.example", "https://trace.example"),
    "server.webhook_secret": ("hook-secret", "hook-secret"),
    "server.api_token": (TOKEN, TOKEN),
    "alerts.tick": ("3s", 3.0),
    "alerts.retry_base": ("10s", 10.0),
    "alerts.retry_max_delay": ("2h", 7200.0),
    "alerts.give_up_after": ("2d", 172800.0),
    "alerts.allow": (["10.0.0.0/8"], ("10.0.0.0/8",)),
    "repos.id": ("org/model", "org/model"),
    "repos.interval": ("15m", 900.0),
}


def held(settings: Settings, setting: str) -> object:
    table, key = setting.split(".")
    if table == "storage":
        return settings.storage.database_url
    if table == "hub":
        return settings.hub.endpoint
    if table == "repos":
        repo = settings.daemon.repos[0]
        return repo.repo_id if key == "id" else repo.interval_s
    if table == "alerts":
        alerts = settings.daemon.alerts
        return alerts.allow.entries if key == "allow" else getattr(alerts, f"{key}_s")
    seconds = f"{key}_s"
    return getattr(settings.daemon, seconds if hasattr(settings.daemon, seconds) else key)


def test_every_documented_file_setting_is_read_into_the_settings(tmp_path: Path) -> None:
    assert set(FILE_VALUES) == set(FILE_SETTINGS)
    document: dict[str, Any] = {"repos": [{}]}
    for setting, (value, _) in FILE_VALUES.items():
        table, key = setting.split(".")
        if table == "repos":
            document["repos"][0][key] = value
        else:
            document.setdefault(table, {})[key] = value
    settings = Settings.in_dir(tmp_path).with_document(document, "test.toml")
    defaults = Settings.in_dir(tmp_path)
    assert {s: held(settings, s) for s in FILE_VALUES} == {
        s: v for s, (_, v) in FILE_VALUES.items()
    }
    assert all(held(defaults, s) != v for s, (_, v) in FILE_VALUES.items() if s[:5] != "repos")


def test_a_bad_environment_value_is_named_by_its_variable_not_the_file(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", f'[server]\napi_token = "{TOKEN}"\n')
    env = {"NEURARCH_DATA_DIR": str(tmp_path), "NEURARCH_API_TOKEN": "short"}
    with pytest.raises(SettingsError, match=r"^NEURARCH_API_TOKEN: String should have at least 16"):
        Settings.load(config, env)
    blank = {**env, "NEURARCH_API_TOKEN": " ", "HF_ENDPOINT": ""}
    loaded = Settings.load(config, blank)
    assert (loaded.daemon.api_token, loaded.hub.endpoint) == (TOKEN, "https://huggingface.co")
