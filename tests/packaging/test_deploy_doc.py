"""docs/deploy.md: its Dockerfile, config and Kubernetes sketch say what the project builds and tests."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement

from tests.support import docs
from tests.support.paths import DOCS, REPO_ROOT

PAGE = DOCS / "deploy.md"


def dockerfile() -> str:
    return docs.block("dockerfile", "The image", page=PAGE)


def instructions(name: str) -> list[str]:
    """The arguments of each ``name`` instruction of the Dockerfile, continued lines joined."""
    joined = re.sub(r"\\\n\s*", " ", dockerfile())
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.startswith(f"{name} ")]


def kubernetes() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(docs.block("yaml", "Kubernetes", "kind: ConfigMap", page=PAGE)))


def of_kind(kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in kubernetes() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def wheel_name() -> str:
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return f"litellm_budget-{version}-py3-none-any.whl"


def test_the_wheel_copied_and_installed_is_the_one_pip_wheel_builds() -> None:
    (copied,) = instructions("COPY")[:1]

    assert copied.split()[0] == f"dist/{wheel_name()}"
    assert f"/tmp/{wheel_name()}" in instructions("RUN")[0]  # noqa: S108 - the image's path, not ours


def test_the_dockerfile_installs_the_wheels_dependencies_litellm_does_not_bring() -> None:
    """``--no-deps`` keeps the image's litellm; what it leaves out is installed by name, and nothing else."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ours = {_name(r) for r in project["dependencies"]}
    litellm_brings = {_name(r.split(";")[0]) for r in importlib.metadata.requires("litellm") or () if "extra" not in r}
    installs = [shlex.split(part) for part in instructions("RUN")[0].split("&&") if "pip install" in part]
    plugin, *rest = installs

    assert "--no-deps" in plugin
    assert {_name(arg) for step in rest for arg in step[5:] if not arg.startswith("-")} == ours - litellm_brings - {
        "litellm"
    }


@pytest.mark.subprocess
def test_the_flags_given_to_litellm_are_its_own() -> None:
    cmd = yaml.safe_load(instructions("CMD")[0])
    (proxy,) = of_kind("Deployment", "litellm-proxy")["spec"]["template"]["spec"]["containers"]
    helped = subprocess.run(
        [str(Path(sys.executable).with_name("litellm")), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    flags = {arg for arg in [*cmd, *proxy["args"]] if arg.startswith("--")}

    assert flags == {"--config", "--port"}
    assert all(re.search(rf"(?<![\w-]){flag}\b", helped) for flag in flags)


def test_the_configmap_holds_the_pages_config() -> None:
    """The config the replicas read is the page's own (which the config-block test validates)."""
    shown = yaml.safe_load(docs.block("yaml", "The config", page=PAGE))
    mapped = yaml.safe_load(of_kind("ConfigMap", "litellm-budget-config")["data"]["config.yaml"])

    assert mapped == shown
    assert mapped["litellm_settings"]["callbacks"] == ["litellm_budget.handler"]
    assert {m["model_name"] for m in mapped["model_list"] if "max_input_tokens" in m.get("model_info", {})} == {
        m["model_name"] for m in mapped["model_list"]
    }


def test_the_replicas_share_the_redis_the_config_names() -> None:
    deployment = of_kind("Deployment", "litellm-proxy")
    pod = deployment["spec"]["template"]["spec"]
    (proxy,) = pod["containers"]
    mount = next(m["mountPath"] for m in proxy["volumeMounts"] if m["name"] == "config")
    config = yaml.safe_load(of_kind("ConfigMap", "litellm-budget-config")["data"]["config.yaml"])
    redis = config["general_settings"]["coordination_redis"]
    service = of_kind("Service", redis["host"])

    assert deployment["spec"]["replicas"] > 1
    assert proxy["args"][proxy["args"].index("--config") + 1] == f"{mount}/config.yaml"
    assert [p["port"] for p in service["spec"]["ports"]] == [redis["port"]]
    assert config["litellm_settings"]["enable_redis_auth_cache"] is True
    assert proxy["image"] in docs.block("text", "The image", "docker build", page=PAGE)


def test_the_replicas_pull_the_image_built_and_pushed_to_a_registry() -> None:
    """
    The manifest's image names a registry and a tag (a bare name would be looked up on Docker Hub):
    the one the page's commands build, tag and push, tagged with the plugin's version.
    """
    (proxy,) = of_kind("Deployment", "litellm-proxy")["spec"]["template"]["spec"]["containers"]
    image = proxy["image"]
    registry, _, rest = image.partition("/")
    tag = rest.rpartition(":")[2]
    commands = [shlex.split(line) for line in docs.block("text", "The image", "docker build", page=PAGE).splitlines()]
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]

    assert "." in registry, f"{image}: no registry host"
    assert tag == version
    assert ["docker", "build", "-t", image, "."] in commands
    assert ["docker", "push", image] in commands
    assert proxy["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.subprocess
def test_the_probe_is_a_route_of_the_proxy() -> None:
    """The readiness probe names a route LiteLLM's proxy serves (read from its health router, not started)."""
    (proxy,) = of_kind("Deployment", "litellm-proxy")["spec"]["template"]["spec"]["containers"]
    probe = proxy["readinessProbe"]["httpGet"]["path"]
    read = (
        "from litellm.proxy.health_endpoints._health_endpoints import router; print(*(r.path for r in router.routes))"
    )
    routes = subprocess.run(
        [sys.executable, "-c", read],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    ).stdout.split()

    assert probe in routes
