"""Settings precedence: flag > env > config file > graph attribute > default."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.errors import SettingError, UsageError
from attractor.llm.factory import resolve_spec
from attractor.settings import resolve_settings, step_limit


def test_defaults_when_nothing_is_given(tmp_path: Path) -> None:
    s = resolve_settings(env={}, cwd=tmp_path)
    assert s.profile == "fast"
    assert s.timeout is None
    assert s.max_turns is None
    assert s.backend == "simulate"
    assert s.source("profile") == "default"


def test_flag_beats_env_beats_config_beats_graph(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text('profile = "strict"\nmax_turns = 9\n')
    graph = {"profile": "yolo"}
    only_graph = resolve_settings(env={}, cwd=tmp_path / "nowhere", graph_attrs=graph)
    assert (only_graph.profile, only_graph.source("profile")) == ("yolo", "graph attribute profile")
    from_config = resolve_settings(env={}, cwd=tmp_path, graph_attrs=graph)
    assert from_config.profile == "strict"
    assert from_config.source("max_turns") == "attractor.toml: max_turns"
    from_env = resolve_settings(
        env={"ATTRACTOR_PROFILE": "smoke", "ATTRACTOR_MAX_TURNS": "4"}, cwd=tmp_path
    )
    assert (from_env.profile, from_env.max_turns) == ("smoke", 4)
    assert from_env.source("max_turns") == "ATTRACTOR_MAX_TURNS"
    from_flag = resolve_settings({"max_turns": "2"}, env={"ATTRACTOR_MAX_TURNS": "4"}, cwd=tmp_path)
    assert (from_flag.max_turns, from_flag.source("max_turns")) == (2, "--max-turns")


@pytest.mark.parametrize("value", ["0", "501", "ten", "-3", "2.5"])
def test_bad_max_turns_names_its_source(tmp_path: Path, value: str) -> None:
    with pytest.raises(SettingError) as info:
        resolve_settings(env={"ATTRACTOR_MAX_TURNS": value}, cwd=tmp_path)
    assert str(info.value) == f'ATTRACTOR_MAX_TURNS="{value}": must be an integer from 1 to 500'
    assert info.value.exit_code == 2


def test_bad_timeout_from_config_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text('timeout = "soon"\n')
    with pytest.raises(SettingError, match=r'attractor.toml: timeout="soon": expected a duration'):
        resolve_settings(env={}, cwd=tmp_path)


def test_timeout_forms(tmp_path: Path) -> None:
    for text, seconds in [("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("250ms", 0.25)]:
        assert resolve_settings({"timeout": text}, env={}, cwd=tmp_path).timeout == seconds


def test_pyproject_tool_table_and_explicit_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.attractor]\nmax_total_turns = 12\n")
    s = resolve_settings(env={}, cwd=tmp_path)
    assert (s.max_total_turns, s.source("max_total_turns")) == (
        12,
        "pyproject.toml [tool.attractor]: max_total_turns",
    )
    other = tmp_path / "ci.toml"
    other.write_text('backend = "scripted:replies.json"\n')
    s = resolve_settings(env={}, cwd=tmp_path, config_file=str(other))
    assert s.backend == "scripted:replies.json"
    with pytest.raises(UsageError, match="does not exist"):
        resolve_settings(env={}, cwd=tmp_path, config_file=str(tmp_path / "missing.toml"))


def test_backend_defaults_to_llm_when_a_model_is_configured(tmp_path: Path) -> None:
    s = resolve_settings(env={"ATTRACTOR_MODEL": "gpt-5"}, cwd=tmp_path)
    assert s.backend == "llm"


def test_broken_toml_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text("timeout = = 3\n")
    with pytest.raises(UsageError, match="attractor.toml: cannot read config file"):
        resolve_settings(env={}, cwd=tmp_path)


def test_workdir_must_exist(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    assert resolve_settings({"workdir": "work"}, env={}, cwd=tmp_path).workdir == "work"
    with pytest.raises(SettingError, match='--workdir="nope": expected an existing directory'):
        resolve_settings({"workdir": "nope"}, env={}, cwd=tmp_path)
    with pytest.raises(SettingError, match="graph attribute workdir"):
        resolve_settings(env={}, cwd=tmp_path, graph_attrs={"workdir": "missing"})


@pytest.mark.parametrize("value", ["²", "０５", "5 turns", "true"])
def test_only_plain_ascii_integers_are_turn_counts(tmp_path: Path, value: str) -> None:
    with pytest.raises(SettingError, match="must be an integer from 1 to 500"):
        resolve_settings({"max_turns": value}, env={}, cwd=tmp_path)


def test_a_graph_that_names_models_defaults_to_the_llm_backend(tmp_path: Path) -> None:
    s = resolve_settings(env={}, cwd=tmp_path, graph_models=True)
    assert (s.backend, s.source("backend")) == ("llm", "graph node llm_model/llm_provider")
    explicit = resolve_settings({"backend": "simulate"}, env={}, cwd=tmp_path, graph_models=True)
    assert explicit.backend == "simulate"


def test_unknown_config_key_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text('timout = "5m"\n')
    with pytest.raises(UsageError, match="attractor.toml: unknown setting 'timout'; did you mean"):
        resolve_settings(env={}, cwd=tmp_path)


def test_config_path_that_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        resolve_settings(env={}, cwd=tmp_path, config_file=str(tmp_path))


def test_values_are_kept_as_written(tmp_path: Path) -> None:
    s = resolve_settings({"timeout": "90s"}, env={}, cwd=tmp_path)
    assert (s.timeout, s.text("timeout"), s.text("max_turns")) == (90.0, "90s", None)


def test_run_budgets_follow_the_same_precedence(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text("max_total_tokens = 5000\nmax_cost = 1.5\n")
    from_config = resolve_settings(env={}, cwd=tmp_path)
    assert (from_config.max_total_tokens, from_config.max_cost) == (5000, 1.5)
    assert from_config.source("max_cost") == "attractor.toml: max_cost"
    env = {"ATTRACTOR_MAX_TOTAL_TOKENS": "7000", "ATTRACTOR_MAX_COST": "$2.25"}
    from_env = resolve_settings(env=env, cwd=tmp_path)
    assert (from_env.max_total_tokens, from_env.max_cost) == (7000, 2.25)
    assert from_env.source("max_total_tokens") == "ATTRACTOR_MAX_TOTAL_TOKENS"
    flags = {"max_total_tokens": "9000", "max_cost": "3"}
    from_flag = resolve_settings(flags, env=env, cwd=tmp_path)
    assert (from_flag.max_total_tokens, from_flag.max_cost) == (9000, 3.0)
    assert from_flag.source("max_cost") == "--max-cost"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "two"])
def test_bad_max_cost_names_its_source(tmp_path: Path, value: str) -> None:
    with pytest.raises(SettingError, match=f'--max-cost="{value}": expected an amount'):
        resolve_settings({"max_cost": value}, env={}, cwd=tmp_path)


def test_prices_come_from_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text(
        '[prices."my-model"]\ninput = 0.5\noutput = 1.5\ncache_read = 0.05\n'
    )
    settings = resolve_settings(env={}, cwd=tmp_path)
    price = settings.prices["my-model"]
    assert (price.input, price.output, price.cache_read, price.cache_write) == (
        0.5,
        1.5,
        0.05,
        None,
    )
    assert settings.source("prices") == "attractor.toml: prices"
    (tmp_path / "attractor.toml").write_text('prices = "cheap"\n')
    with pytest.raises(UsageError, match="attractor.toml: prices must be a table of models"):
        resolve_settings(env={}, cwd=tmp_path)


def test_a_base_url_implies_an_openai_compatible_provider(tmp_path: Path) -> None:
    s = resolve_settings(
        {"base_url": "http://127.0.0.1:8080/v1", "model": "local"}, env={}, cwd=tmp_path
    )
    assert s.backend == "llm"

    def spec(**run: str | None) -> tuple[str, str]:
        found = resolve_spec(
            node_provider=None,
            node_model=run.pop("node_model", None),
            node_reasoning_effort=None,
            run_provider=run.get("provider"),
            run_model=run.get("model"),
            run_base_url=run.get("base_url"),
        )
        return found.provider, found.model

    assert spec(base_url="http://h/v1", model="local") == ("openai", "local")
    assert spec(base_url="http://h/v1", model="x", provider="anthropic") == ("anthropic", "x")
    # A model named for its provider keeps it, on the run or on the node.
    assert spec(base_url="http://h/v1", node_model="gemini-2.5-flash")[0] == "gemini"


@pytest.mark.parametrize("name", ["openai", "anthropic", "OpenAI"])
def test_a_provider_given_as_backend_gets_the_flags_to_use(tmp_path: Path, name: str) -> None:
    with pytest.raises(SettingError) as caught:
        resolve_settings({"backend": name}, env={}, cwd=tmp_path)
    message = str(caught.value)
    assert message.startswith(f'--backend="{name}": expected simulate, llm, scripted:FILE, ')
    assert f"--provider {name.lower()} --model ID" in message


def test_max_steps_from_flag_env_config_graph_and_its_default(tmp_path: Path) -> None:
    graph = {"max_steps": "300"}
    only_graph = resolve_settings(env={}, cwd=tmp_path, graph_attrs=graph)
    assert step_limit(only_graph, 5) == (300, "graph attribute max_steps")
    (tmp_path / "attractor.toml").write_text("max_steps = 200\n")
    from_config = resolve_settings(env={}, cwd=tmp_path, graph_attrs=graph)
    assert step_limit(from_config, 5) == (200, "attractor.toml: max_steps")
    from_env = resolve_settings(env={"ATTRACTOR_MAX_STEPS": "100"}, cwd=tmp_path)
    assert step_limit(from_env, 5) == (100, "ATTRACTOR_MAX_STEPS")
    from_flag = resolve_settings(
        {"max_steps": "50"}, env={"ATTRACTOR_MAX_STEPS": "100"}, cwd=tmp_path
    )
    assert step_limit(from_flag, 5) == (50, "--max-steps")
    with pytest.raises(SettingError, match='ATTRACTOR_MAX_STEPS="0": must be a positive integer'):
        resolve_settings(env={"ATTRACTOR_MAX_STEPS": "0"}, cwd=tmp_path)
    # Unset: 10,000 steps, or ten per node of a larger graph (a 10,000-node chain runs).
    unset = resolve_settings(env={}, cwd=tmp_path / "nowhere")
    assert step_limit(unset, 40) == (10_000, "default")
    assert step_limit(unset, 10_000) == (100_000, "default: 10 per node")
