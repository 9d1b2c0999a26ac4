"""Settings: defaults, every accepted form, and errors that name the setting in one line."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from triage_bot.config import (
    DEFAULT_MAX_LOG_BYTES,
    SettingsError,
    environment,
    load_settings,
    normalize_database_url,
)

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----"


def error_of(env: dict[str, str]) -> SettingsError:
    with pytest.raises(SettingsError) as caught:
        load_settings(env)
    return caught.value


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings({"HOME": str(tmp_path)})
    assert settings.app_id is None and settings.private_key is None
    assert settings.github_api_url == "https://api.github.com"
    assert settings.data_dir == tmp_path / ".local/share/triage-bot"
    assert settings.database_url == f"sqlite:///{settings.data_dir / 'triage.db'}"
    assert settings.redis_url is None
    assert settings.queue_path == settings.data_dir / "queue.db"
    assert (settings.port, settings.log_level) == (8000, "INFO")
    assert settings.max_log_bytes == DEFAULT_MAX_LOG_BYTES == 256 * 1024 * 1024


def test_full_environment(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "APP_ID": "12345",
            "PRIVATE_KEY": PEM.replace("\n", "\\n"),  # one line, as in many .env files
            "WEBHOOK_SECRET": "s3cret",
            "GITHUB_API_URL": "http://127.0.0.1:9000/api/v3/",
            "DATABASE_URL": "postgres://u:p@db:5432/triage",
            "REDIS_URL": "redis://cache:6379/1",
            "TRIAGE_DATA_DIR": str(tmp_path),
            "PORT": "3000",
            "LOG_LEVEL": "debug",
            "TRIAGE_MAX_LOG_BYTES": "64MiB",
            "GITHUB_TOKEN": "ghp_x",
        }
    )
    assert settings.app_id == 12345
    assert settings.private_key == PEM + "\n"
    assert settings.github_api_url == "http://127.0.0.1:9000/api/v3"
    assert settings.database_url == "postgresql+psycopg://u:p@db:5432/triage"
    assert settings.redis_url == "redis://cache:6379/1"
    assert settings.data_dir == tmp_path
    assert (settings.port, settings.log_level) == (3000, "DEBUG")
    assert settings.max_log_bytes == 64 * 1024 * 1024
    assert settings.has_app_credentials and settings.github_token == "ghp_x"


def test_private_key_from_path_and_base64(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text(PEM + "\n")
    assert load_settings({"PRIVATE_KEY_PATH": str(key)}).private_key == PEM + "\n"
    encoded = base64.b64encode(PEM.encode()).decode()
    assert load_settings({"PRIVATE_KEY": encoded}).private_key == PEM + "\n"


def test_empty_values_count_as_unset() -> None:
    settings = load_settings({"REDIS_URL": "", "APP_ID": "  ", "PORT": ""})
    assert settings.redis_url is None and settings.app_id is None and settings.port == 8000


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"APP_ID": "abc"}, "APP_ID: must be a whole number, got 'abc'"),
        ({"APP_ID": "0"}, "APP_ID: must be at least 1, got 0"),
        ({"PORT": "70000"}, "PORT: must be at most 65535, got 70000"),
        ({"PORT": "-1"}, "PORT: must be a whole number, got '-1'"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL: must be one of"),
        ({"TRIAGE_MAX_LOG_BYTES": "lots"}, "TRIAGE_MAX_LOG_BYTES: must be a number of bytes"),
        ({"TRIAGE_MAX_LOG_BYTES": "0"}, "TRIAGE_MAX_LOG_BYTES: must be at least 1 byte"),
        ({"PRIVATE_KEY": "not a key"}, "PRIVATE_KEY: not a PEM private key"),
        ({"PRIVATE_KEY_PATH": "/nonexistent/key.pem"}, "PRIVATE_KEY_PATH: cannot read"),
        ({"PRIVATE_KEY": PEM, "PRIVATE_KEY_PATH": "/k"}, "PRIVATE_KEY_PATH: set only one"),
        ({"GITHUB_API_URL": "api.github.com"}, "GITHUB_API_URL: must be an http(s) URL"),
        ({"DATABASE_URL": "mysql://x/y"}, "DATABASE_URL: unsupported database 'mysql'"),
        ({"REDIS_URL": "http://cache"}, "REDIS_URL: must be a redis://"),
        ({"REDIS_URL": "redis://"}, "REDIS_URL: has no host"),
    ],
)
def test_malformed_setting_is_named(env: dict[str, str], message: str) -> None:
    error = error_of(env)
    assert str(error).startswith(message)
    assert "\n" not in str(error)
    assert error.name == message.split(":")[0]


def test_required_settings_depend_on_the_role() -> None:
    bare = load_settings({})
    with pytest.raises(SettingsError, match=r"^WEBHOOK_SECRET: required"):
        bare.require("server")
    with pytest.raises(SettingsError, match=r"^APP_ID: the worker needs GitHub credentials"):
        bare.require("worker")
    with pytest.raises(SettingsError, match=r"^APP_ID: this command needs GitHub credentials"):
        bare.require("cli")
    with pytest.raises(SettingsError, match=r"^PRIVATE_KEY: required with APP_ID"):
        load_settings({"APP_ID": "1"}).require("worker")
    with pytest.raises(SettingsError, match=r"^APP_ID: required with PRIVATE_KEY"):
        load_settings({"PRIVATE_KEY": PEM}).require("cli")
    app = load_settings({"APP_ID": "1", "PRIVATE_KEY": PEM, "WEBHOOK_SECRET": "s"})
    assert app.require("server", "worker") is app
    load_settings({"GITHUB_TOKEN": "ghp_x"}).require("cli", "worker")
    load_settings({"WEBHOOK_SECRET": "s"}).require("server")  # serve --no-worker


def test_database_url_spellings() -> None:
    assert normalize_database_url("postgres://h/d") == "postgresql+psycopg://h/d"
    assert normalize_database_url("postgresql://h/d") == "postgresql+psycopg://h/d"
    assert normalize_database_url("postgresql+psycopg://h/d") == "postgresql+psycopg://h/d"
    assert normalize_database_url("sqlite:///x.db") == "sqlite:///x.db"


def test_env_example_lists_every_setting() -> None:
    example = (Path(__file__).parent.parent / ".env.example").read_text()
    names = {line.split("=")[0].lstrip("# ") for line in example.splitlines() if "=" in line}
    expected = {
        "APP_ID",
        "PRIVATE_KEY",
        "PRIVATE_KEY_PATH",
        "WEBHOOK_SECRET",
        "GITHUB_API_URL",
        "DATABASE_URL",
        "REDIS_URL",
        "TRIAGE_DATA_DIR",
        "PORT",
        "LOG_LEVEL",
        "TRIAGE_MAX_LOG_BYTES",
        "GITHUB_TOKEN",
    }
    assert expected <= names


def test_environment_reads_dotenv_under_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text(
        "# as .env.example shows\nWEBHOOK_SECRET=from-file\nAPP_ID=12\nREDIS_URL=\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("APP_ID", "34")
    monkeypatch.delenv("WEBHOOK_SECRET", raising=False)
    settings = load_settings(environment())
    assert settings.webhook_secret == "from-file"
    assert settings.app_id == 34  # the environment wins over the file
    assert settings.redis_url is None  # an empty value is unset


def test_environment_without_dotenv_is_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WEBHOOK_SECRET", "from-env")
    assert environment()["WEBHOOK_SECRET"] == "from-env"


def test_the_catalog_url_is_a_setting_whose_default_is_the_comments() -> None:
    from triage_bot.core.render import CATALOG_URL

    assert load_settings({}).catalog_url == CATALOG_URL
    mine = "https://git.example.com/ci/signatures/README.md"
    assert load_settings({"TRIAGE_CATALOG_URL": mine}).catalog_url == mine
    with pytest.raises(SettingsError, match="TRIAGE_CATALOG_URL"):
        load_settings({"TRIAGE_CATALOG_URL": "javascript:alert(1)"})
