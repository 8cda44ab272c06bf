"""docker-compose.replicas.yml (replicated mode: PostgreSQL, three replicas, a load balancer)
read with a YAML parser, as Compose would: the services are there, images pulled from elsewhere
are pinned, no secret is written in it, and the balancer checks each replica's /healthz. (No
Docker here: its syntax and wiring are what can be checked.)"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.harness import REPO

COMPOSE = REPO / "docker-compose.replicas.yml"
REPLICAS = ("mnemo-1", "mnemo-2", "mnemo-3")
INTERPOLATED = re.compile(r"\$\{[A-Z_]+(:\?[^}]*)?\}")  # ${NAME} or ${NAME:?why}: from .env


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return found


def test_postgresql_three_replicas_and_a_load_balancer(compose: dict[str, Any]) -> None:
    services = compose["services"]

    assert set(services) == {"db", *REPLICAS, "lb"}
    assert services["lb"]["depends_on"] == list(REPLICAS)
    for name in REPLICAS:
        replica = services[name]
        assert replica["build"]["args"]["REPLICAS"] == "1"
        assert replica["depends_on"] == {"db": {"condition": "service_healthy"}}
        environment = replica["environment"]
        assert environment["BOT_TELEGRAM__MODE"] == "webhook"
        assert environment["BOT_STORE__URL"].startswith("postgresql://mnemo:")
        assert environment["BOT_STORE__URL"].endswith("@db/mnemo")
        assert environment["BOT_TELEGRAM__WEBHOOK_URL"].startswith("https://")
        assert replica["volumes"] == [f"{name}:/app/workspace"]  # its own: nothing shared
        assert name in compose["volumes"]
    for name, service in services.items():
        assert service["logging"]["options"]["max-size"] == "10m", name
        assert service["restart"] == "unless-stopped", name


def test_images_pulled_from_elsewhere_are_pinned(compose: dict[str, Any]) -> None:
    pulled = {n: s["image"] for n, s in compose["services"].items() if "build" not in s}

    assert set(pulled) == {"db", "lb"}
    assert pulled["db"].startswith("postgres:") and pulled["lb"].startswith("caddy:")
    for image in pulled.values():
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?", image.rpartition(":")[2]), image


def test_no_secret_is_written_in_the_file(compose: dict[str, Any]) -> None:
    checked = 0
    for name, service in compose["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET|TOKEN|KEY|STORE__URL", key):
                written = INTERPOLATED.sub("", value)  # what is left once .env's are taken out
                assert written in ("", "postgresql://mnemo:@db/mnemo"), f"{name}: {key}"
                checked += 1
    assert checked == 2 * len(REPLICAS) + 1  # each replica's URL and secret, the db password
    assert "BOT_TELEGRAM__TOKEN" not in COMPOSE.read_text()  # it stays in .env


def test_the_balancer_sends_only_to_replicas_that_answer_healthz(compose: dict[str, Any]) -> None:
    caddyfile = compose["services"]["lb"]["volumes"][0].split(":")[0]
    config = (REPO / caddyfile).read_text()
    port = compose["services"]["mnemo-1"]["environment"]["BOT_TELEGRAM__WEBHOOK_PORT"]

    upstreams = re.search(r"reverse_proxy ([^{]+)\{", config)
    assert upstreams and upstreams.group(1).split() == [f"{n}:{port}" for n in REPLICAS]
    assert re.search(r"^\s*health_uri /healthz$", config, re.M)
    for name in REPLICAS:
        probe = " ".join(compose["services"][name]["healthcheck"]["test"])
        assert f"http://127.0.0.1:{port}/healthz" in probe


def test_the_replicas_image_installs_replicated_mode_s_pinned_packages() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    lock = REPO / "requirements-replicas.lock"

    assert re.search(r'"\$\{REPLICAS\}" = "1" \]; then lock=requirements-replicas.lock', dockerfile)
    pins = dict(re.findall(r"^([a-z0-9-]+)==(\S+) ", lock.read_text(), re.M))
    assert {"procrastinate", "psycopg", "psycopg-pool", "aiohttp"} <= set(pins)
    assert "--hash=sha256:" in lock.read_text()
    ignored = (REPO / ".dockerignore").read_text().splitlines()
    assert not [line for line in ignored if line.startswith("requirements")]  # sent along
