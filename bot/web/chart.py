"""A bar chart drawn on the server, as numbers for an inline SVG (`usage.html` draws it): one bar
a day, stacked by a key (a kind of work, a chat, a model), each part with its own title (shown
on hover)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 720, 220
LEFT, BOTTOM, TOP = 56, 24, 8  # room for the scale and the days
TONES = 8  # colours in the style sheet (.t0 … .t7)


@dataclass(frozen=True)
class Block:
    x: float
    y: float
    width: float
    height: float
    key: str  # what it counts: a kind of work, a chat, a model
    tone: int  # its colour: the key's place in the legend
    title: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    blocks: tuple[Block, ...]
    scale: tuple[tuple[float, str], ...]  # (y, label) of the scale's lines
    days: tuple[tuple[float, str], ...]  # (x, label) under some bars
    empty: bool


def stacked(
    days: Sequence[str], values: Mapping[str, Mapping[str, int]], keys: Sequence[str]
) -> Chart:
    """`values[day][key]` as one bar a day, the keys stacked in their order."""
    top = max((sum(values.get(day, {}).values()) for day in days), default=0)
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    step = plot_w / max(1, len(days))
    blocks: list[Block] = []
    for index, day in enumerate(days):
        base = float(HEIGHT - BOTTOM)
        for tone, key in enumerate(keys):
            value = values.get(day, {}).get(key, 0)
            if value <= 0 or top <= 0:
                continue
            height = plot_h * value / top
            base -= height
            x = LEFT + index * step + step * 0.1
            title = f"{day} {key}: {value:,} tokens"
            blocks.append(Block(x, base, step * 0.8, height, key, tone % TONES, title))
    scale = tuple(
        (HEIGHT - BOTTOM - plot_h * share, f"{round(top * share):,}") for share in (0, 0.5, 1)
    )
    every = max(1, len(days) // 8)
    labels = tuple(
        (LEFT + i * step + step / 2, day[5:]) for i, day in enumerate(days) if i % every == 0
    )
    return Chart(WIDTH, HEIGHT, tuple(blocks), scale, labels, empty=top <= 0)
