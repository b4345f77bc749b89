"""Settings precedence: defaults, then the TOML file, then the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert defaults.api_token is None
    assert defaults.database_url == f"sqlite:///{tmp_path / 'neurarch-trace.db'}"
    from_file = Settings.load(config, base)
    assert (from_file.database_url, from_file.api_token) == ("sqlite:///x.db", TOKEN)
    env = {**base, "NEURARCH_API_TOKEN": "env-token-abcdefghij", "HF_ENDPOINT": "http://h:1/"}
    from_env = Settings.load(config, env)
    assert (from_env.api_token, from_env.hf_endpoint) == ("env-token-abcdefghij", "http://h:1")


@pytest.mark.parametrize("value", ['"short"', "12345678901234567890", "true"])
def test_an_unusable_api_token_in_the_file_is_refused(tmp_path: Path, value: str) -> None:
    config = write(tmp_path / "c.toml", f"[server]\napi_token = {value}\n")
    with pytest.raises(SettingsError, match=r"server\.api_token"):
        Settings.load(config, {"NEURARCH_DATA_DIR": str(tmp_path)})
