"""The Docker files say what a long-running install needs: bounded logs, images that do not
change under the bot, a health check that reports soon after the first poll."""

from __future__ import annotations

import re

from tests.harness import REPO

COMPOSE = REPO / "docker-compose.yml"


def services() -> dict[str, str]:
    """Each service's block of docker-compose.yml, by name (two-space indented keys)."""
    text = COMPOSE.read_text().split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
    blocks = re.split(r"^  (\w[\w-]*):\n", text, flags=re.M)[1:]
    return dict(zip(blocks[::2], blocks[1::2], strict=True))


def test_every_service_keeps_its_logs_bounded() -> None:
    anchor = re.search(r"x-logging: &logging\n((?:  .*\n)+)", COMPOSE.read_text())
    assert anchor and re.search(r'max-size: "\d+m"', anchor.group(1))
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
    found = re.search(r"HEALTHCHECK .*--start-interval=(\d+)s", dockerfile)
    assert found, "no HEALTHCHECK with a --start-interval"
    assert int(found.group(1)) <= 10  # checked often while starting, not first after 60 s


def test_the_compose_steps_say_how_to_claim_the_bot() -> None:
    assert "pair list" in (REPO / "docker-compose.yml").read_text()
