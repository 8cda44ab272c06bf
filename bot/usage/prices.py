"""`Prices`: US dollars per million tokens of known models, read from a small JSON file
(`config/prices.json`, `usage.prices_file`); a model not in it shows tokens only.

    {"version": 1, "per_million_tokens": {"gpt-4o-mini": {"input": 0.15,
        "cached_input": 0.075, "output": 0.6}}}

A model is found by its exact name, else by the longest known name it starts with (a dated
"gpt-4o-mini-2024-07-18" is priced as "gpt-4o-mini").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Price:
    input: float
    cached_input: float
    output: float


@dataclass(eq=False)
class Prices:
    prices: dict[str, Price]

    @classmethod
    def load(cls, path: Path) -> Prices:
        """The prices in `path`; none (tokens only) when it is missing or unreadable."""
        if not path.is_file():
            log.debug("prices_missing", path=str(path))
            return cls({})
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            table = document["per_million_tokens"]
            return cls(
                {
                    str(model): Price(
                        input=float(p["input"]),
                        cached_input=float(p.get("cached_input", p["input"])),
                        output=float(p["output"]),
                    )
                    for model, p in table.items()
                }
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("prices_unreadable", path=str(path), reason=str(exc)[:200])
            return cls({})

    def of(self, model: str) -> Price | None:
        if model in self.prices:
            return self.prices[model]
        known = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(known, key=len)] if known else None

    def cost(self, model: str, *, tokens_in: int, cached: int, tokens_out: int) -> float | None:
        """Dollars, or None for a model without a price."""
        price = self.of(model)
        if price is None:
            return None
        fresh = max(0, tokens_in - cached)
        spent = fresh * price.input + cached * price.cached_input + tokens_out * price.output
        return spent / 1_000_000
