"""Choosing the executor (flag, variable, config file) and what a node's resources ask of Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.dot.parser import parse_dot
from attractor.engine.executor import LocalExecutor
from attractor.errors import RunError, SettingError
from attractor.launch import executor_for
from attractor.ray_exec.branches import branch_resources
from attractor.ray_exec.executor import RayExecutor, check_shared
from attractor.settings import resolve_settings


def test_local_is_the_default(tmp_path: Path) -> None:
    settings = resolve_settings({}, env={}, cwd=tmp_path)
    assert settings.executor == "local" and settings.ray_address is None
    assert isinstance(executor_for(settings), LocalExecutor)


def test_flag_beats_env_beats_config(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text(
        'executor = "ray"\nray_address = "ray://config:10001"\n', encoding="utf-8"
    )
    from_config = resolve_settings({}, env={}, cwd=tmp_path)
    assert from_config.executor == "ray" and from_config.ray_address == "ray://config:10001"
    env = {"ATTRACTOR_EXECUTOR": "local", "ATTRACTOR_RAY_ADDRESS": "auto"}
    from_env = resolve_settings({}, env=env, cwd=tmp_path)
    assert from_env.executor == "local" and from_env.ray_address == "auto"
    from_flag = resolve_settings({"executor": "ray"}, env=env, cwd=tmp_path)
    assert from_flag.executor == "ray" and from_flag.source("executor") == "--executor"
    chosen = executor_for(from_flag)
    assert isinstance(chosen, RayExecutor) and chosen.address == "auto"


def test_an_unknown_executor_names_its_source(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match='ATTRACTOR_EXECUTOR="dask": expected one of local, ray'):
        resolve_settings({}, env={"ATTRACTOR_EXECUTOR": "dask"}, cwd=tmp_path)


def test_a_branch_asks_the_most_any_of_its_nodes_asks() -> None:
    graph = parse_dot(
        """digraph g {
        fan [shape=component]
        join [shape=tripleoctagon]
        a [resources="cpu=2"]
        b [resources="cpu=4,gpu=1,bigmem=1"]
        c [resources="cpu=1,bigmem=3"]
        after [resources="cpu=64"]
        fan -> a -> b -> join
        fan -> c -> join
        join -> after
    }"""
    )
    assert branch_resources(graph, "a", "join") == {
        "num_cpus": 4.0,
        "num_gpus": 1.0,
        "resources": {"bigmem": 1.0},
    }
    assert branch_resources(graph, "c", "join") == {"num_cpus": 1.0, "resources": {"bigmem": 3.0}}


def test_a_worker_that_cannot_see_the_run_directory_fails_with_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "not-mounted-here"
    with pytest.raises(RunError, match="cannot see the run directory .*not-mounted-here"):
        check_shared(missing, "token", required=True)
    # A directory without the driver's probe is another filesystem at the same path.
    missing.mkdir()
    with pytest.raises(RunError, match="filesystem every worker mounts"):
        check_shared(missing, "token", required=True)
