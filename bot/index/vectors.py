"""The vector cache: every chunk vector in memory, one contiguous float32 block per scope.

A query multiplies only the blocks of the scopes it may see (so another chat's vectors are
never even scored), then takes the top k with `argpartition`. The product is `np.vecdot`,
numpy's own single-threaded SIMD loop, not `matrix @ query` (OpenBLAS's gemv): on 2 cores BLAS's
threads wait on each other whenever the FTS query or another process holds a core, and its gemv
was no faster alone (benchmarks/README.md, index_speed). Blocks grow by doubling and a removal
moves the last row into the hole, so updates are incremental and rows stay contiguous.
Rows past a block's size are unused (never scored).
Not thread-safe on its own: `MemoryIndex` holds its lock around every call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class _Block:
    def __init__(self, dim: int) -> None:
        self.ids = np.zeros(16, dtype=np.int64)
        self.matrix: Vectors = np.zeros((16, dim), dtype=np.float32)
        self.size = 0
        self.rows: dict[int, int] = {}  # chunk id → row

    def add(self, ids: Sequence[int], vectors: Vectors) -> None:
        self._reserve(self.size + len(ids))
        end = self.size + len(ids)
        self.ids[self.size : end] = ids
        self.matrix[self.size : end] = vectors
        self.rows.update(zip(ids, range(self.size, end), strict=True))
        self.size = end

    def remove(self, chunk_id: int) -> None:
        row = self.rows.pop(chunk_id)
        last = self.size - 1
        if row != last:
            moved = int(self.ids[last])
            self.ids[row] = moved
            self.matrix[row] = self.matrix[last]
            self.rows[moved] = row
        self.size = last

    def top(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        if self.size == 0:
            return []
        scores = np.vecdot(self.matrix[: self.size], query.astype(np.float32, copy=False))
        if self.size > k:
            best = np.argpartition(scores, self.size - k)[self.size - k :]
        else:
            best = np.arange(self.size)
        return [(int(self.ids[i]), float(scores[i])) for i in best]

    def _reserve(self, size: int) -> None:
        capacity = len(self.ids)
        if size <= capacity:
            return
        while capacity < size:
            capacity *= 2
        ids = np.empty(capacity, dtype=np.int64)
        ids[: self.size] = self.ids[: self.size]
        # np.empty, not np.zeros: numpy asks for transparent huge pages only on its malloc
        # path, and over ~100 MB they halve the scan's time (fewer TLB misses)
        matrix = np.empty((capacity, self.matrix.shape[1]), dtype=np.float32)
        matrix[: self.size] = self.matrix[: self.size]
        self.ids, self.matrix = ids, matrix


class VectorCache:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._blocks: dict[str, _Block] = {}
        self._scope_of: dict[int, str] = {}  # chunk id → scope

    def __len__(self) -> int:
        return len(self._scope_of)

    def clear(self) -> None:
        self._blocks.clear()
        self._scope_of.clear()

    def add(self, ids: Sequence[int], scopes: Sequence[str], vectors: Vectors) -> None:
        """Rows of `vectors` for chunks `ids` (a chunk already cached is replaced)."""
        self.remove(i for i in ids if i in self._scope_of)
        by_scope: dict[str, list[int]] = {}
        for row, scope in enumerate(scopes):
            by_scope.setdefault(scope, []).append(row)
        for scope, rows in by_scope.items():
            block = self._blocks.setdefault(scope, _Block(self.dim))
            block.add([ids[row] for row in rows], vectors[rows])
            self._scope_of.update((ids[row], scope) for row in rows)

    def remove(self, ids: Iterable[int]) -> None:
        for chunk_id in list(ids):
            scope = self._scope_of.pop(chunk_id, None)
            if scope is not None:
                self._blocks[scope].remove(chunk_id)

    def top(self, query: Vectors, scopes: Sequence[str], *, k: int) -> list[tuple[int, float]]:
        """The k chunks of `scopes` most similar to `query` (cosine: rows are normalised),
        best first."""
        found: list[tuple[int, float]] = []
        for scope in dict.fromkeys(scopes):
            if block := self._blocks.get(scope):
                found.extend(block.top(query, k))
        found.sort(key=lambda pair: pair[1], reverse=True)
        return found[:k]
