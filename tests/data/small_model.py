"""Makes `tests/data/minilm-m2v-small/`: a small model2vec model for the tests, offline.

The tests need real embeddings (paraphrases must land near each other) but nothing outside the
repository. This takes a model2vec model (e.g. all-MiniLM-L6-v2 distilled to 256 dimensions)
and keeps only the words the tests and their data use: each word's vector is the sum of the
source model's rows for the word's tokens, stored as float16, with a whole-word tokenizer
(lower-cased, accents stripped, split at spaces and punctuation; other words are unknown and
count for nothing). A sentence's mean over its words then points where the source model's mean
over its tokens does: the same embedding once normalised.

    .venv/bin/python tests/data/small_model.py SOURCE_MODEL_FOLDER
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TARGET = HERE / "minilm-m2v-small"
_WORD = re.compile(r"[a-z0-9]+")


def words() -> list[str]:
    """Every word in the tests' code and data, lower-cased, in a stable order."""
    found: set[str] = set()
    for path in [*HERE.parent.rglob("*.py"), *HERE.glob("*.json")]:
        found.update(_WORD.findall(path.read_text(encoding="utf-8").lower()))
    return sorted(found)


def build(source: Path) -> None:
    from model2vec import StaticModel
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel

    model = StaticModel.from_pretrained(source)
    vocabulary = words()
    rows = [model.embedding[model.tokenize([word])[0]].sum(axis=0) for word in vocabulary]
    vectors = np.vstack([np.zeros((2, model.dim)), *rows]).astype(np.float16)
    tokens = {"[PAD]": 0, "[UNK]": 1} | {w: i + 2 for i, w in enumerate(vocabulary)}
    tokenizer = Tokenizer(WordLevel(vocab=tokens, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    small = StaticModel(vectors, tokenizer, normalize=True, base_model_name=source.name)
    small.save_pretrained(TARGET)
    print(json.dumps({"words": len(vocabulary), "dim": model.dim, "folder": str(TARGET)}))


if __name__ == "__main__":
    build(Path(sys.argv[1]))
