"""The Docker files say what a long-running install needs: bounded logs, images that do not
change under the bot, a health check that reports soon after the first poll — and nothing a
Docker before 25 refuses to build."""

from __future__ import annotations

import re

from tests.harness import REPO

COMPOSE = REPO / "docker-compose.yml"
FILES = (COMPOSE, REPO / "docker-compose.lightrag.yml")  # the bot's, and LightRAG's beside it


def services() -> dict[str, str]:
    """Each service's block of the compose files, by name (two-space indented keys)."""
    found: dict[str, str] = {}
    for file in FILES:
        text = file.read_text().split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
        blocks = re.split(r"^  (\w[\w-]*):\n", text, flags=re.M)[1:]
        found |= dict(zip(blocks[::2], blocks[1::2], strict=True))
    return found


def test_every_service_keeps_its_logs_bounded() -> None:
    for file in FILES:
        anchor = re.search(r"x-logging: &logging\n((?:  .*\n)+)", file.read_text())
        assert anchor and re.search(r'max-size: "\d+m"', anchor.group(1)), file.name
        assert re.search(r'max-file: "\d+"', anchor.group(1))
    found = services()
    assert set(found) == {"mnemo", "lightrag"}
    for name, block in found.items():
        assert "    logging: *logging\n" in block, name


def test_images_pulled_from_elsewhere_are_pinned() -> None:
    pulled = [b for b in services().values() if "    build:" not in b]
    images = [re.search(r"^    image: (\S+)$", b, re.M) for b in pulled]
    assert pulled and all(images)
    for image in images:
        assert image
        assert re.fullmatch(r"v?\d+\.\d+(\.\d+)?", image.group(1).rpartition(":")[2]), image


def test_the_health_check_reports_soon_after_the_first_poll() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    found = re.search(r"HEALTHCHECK (.*)", dockerfile)
    assert found, "no HEALTHCHECK"
    flags = dict(re.findall(r"--([\w-]+)=(\d+)s", found.group(1)))
    # A start period: Docker 25 and newer check every 5 s (their default start interval)
    # within it, so "healthy" comes with the first poll, not first after 60 s ...
    assert int(flags["start-period"]) >= 30
    # ... and no --start-interval, which Docker before 25 refuses to build
    assert set(flags) <= {"interval", "timeout", "start-period"}


def test_the_compose_steps_say_how_to_claim_the_bot() -> None:
    assert "pair list" in (REPO / "docker-compose.yml").read_text()
