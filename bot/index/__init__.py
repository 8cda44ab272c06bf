"""The embedded search index (system 55, `memory_search`, `# Relevant Memory`): SQLite FTS5
always, vectors when an embedder is configured. Never the source of truth: it is derived from
the files alone — the memory markdown, the session files (current and archived) and the items'
JSONL — by one delta sync: of every file (`sync_files`, the walk: at start, on `memory reindex`
and as a catch-up each minute) or of the files a turn wrote (`sync_paths`, after each turn, in
the background; a file that only grew gives only what was added); delete `workspace/index/`
and the next sync makes the same index again.

    sources.py       a memory path's scope, kind and time; `Exchange`; scope keys
    chunking.py      `Chunk`, `Chunker`: ~400-token chunks, line numbers, ~15% overlap
    query.py         free text → a safe FTS5 MATCH expression
    when.py          a time in a query ("last May", "yesterday") → a time window
    keyword.py       `KeywordSearch`: bm25 candidates, fast by choosing the terms to score
    store/           `IndexStore`: the SQLite file (chunks, FTS5, vectors, file signatures):
                     its records, the database (schema, opening), writes, reads
    vectors.py       `VectorCache`: the vectors in memory, one float32 block per scope
    embedding.py     `Embedder` protocol, `Model2VecEmbedder` and its one fetch from a hub
                     into the workspace (`OpenAIEmbedder`: bot.llm)
    search.py        `Hit`; fusion, tie-breaks, diversity, merging, the hits' order
    snippets.py      what a hit shows of its chunk: the lines that matched, by term weight
    sync/            source files → source updates, by (mtime, size) then sha256, appends as
                     appends: the reader protocol, the markdown and the session-file
                     (transcripts: one source an exchange) readers, the walk, the delta
    memory_index.py  `MemoryIndex`: the one object the app uses (blocking, thread-safe)
    service.py       `IndexService`: the index as an app service, opened and synced at start;
                     its background syncer (requests merged, drained on stop, `settle`)
    remote.py        `ExchangeSink`, `RemoteSearch`: the seams to a recall server
    lightrag.py      `LightRagBackend`: the optional LightRAG server (owner's exchanges only)

Ranking (the decision):

1. Candidates. Keyword: the top 50 chunks by FTS5 `bm25()` (porter-stemmed, diacritics folded;
   the query's words quoted and ORed, stop words and single letters, the "s" of "Daniel's",
   dropped; on a large index only its rarer words are scored, and a query of nothing but common
   words takes the newest matches — see keyword.py) over the words that tell something in the
   chats searched: a word in more than half of their chunks (a speaker's name in its own chat,
   however rare in the whole index) makes no chunk a candidate, so it cannot fill the list and
   keep the vector candidates out (on tests/data/evalset_months.json, ten two-person chats in
   one index: hybrid recall@budget 0.719 → 0.789, keyword only 0.712 → 0.685, as keyword search
   no longer shows the chat's chunks that hold only a name). When they are fewer than 50, a
   second pass (feedback, keyword.py) searches the first 8 words of the best lines of the first
   three and adds its best 5 not found already after them: the second hop of a question ("What
   injury did Daniel's sister have?" finds "My sister Ruth is staying", then "Ruth broke a
   wrist"; on tests/data/evalset_months.json keyword only 0.701 → 0.715, hybrid 0.826 → 0.847,
   multi-hop 0.611 → 0.682 and 0.782 → 0.861). Vector (when an embedder is configured): the top
   50 by cosine over the query's embedding (1.5 per hit asked for when a search wants more than
   33 hits, `search.vector_candidates`: on tests/data/evalset_months.json hybrid 0.825 → 0.842,
   its sections had run out of hits; 2 per hit gave the same recall as 1.5), exact brute force
   in numpy, run in parallel with the keyword query.
2. Fusion: keyword first, vectors fill. The keyword candidates keep their bm25 order and come
   before every vector candidate; the vector candidates keyword search did not find continue
   the list after them (they reach the hits when keyword search finds fewer than k: a
   question in other words than its answer). A chunk at place n scores 1 / (60 + n). Why not
   Reciprocal Rank Fusion (as before issue 13): RRF gives a vector list the same say as bm25
   whatever the embedder is worth, and on long conversations a weak one costs recall (on a
   public two-person benchmark hybrid lost 6.5 points to keyword alone; on
   tests/data/evalset_months.json an embedder of noise costs 0.09 with RRF). With the keyword
   order untouched, hybrid's first hits are keyword's and every vector hit comes after them,
   so recall@k and recall within a budget can only rise over keyword alone, whatever the
   embedder: a model that knows the words fills the gaps on paraphrases (0.630 → 0.950 within
   1,024 tokens on tests/data/evalset.json), a useless one changes nothing that keyword found.
   Tried and not kept (benchmarks/README.md, "Fusion"): RRF weighted by how much the two lists
   agree, and letting vectors into the keyword list below its strong matches — both gained a
   little with a good model and lost up to 0.06 with a bad one. A vague query (its keyword
   candidates are the newest matches, not bm25-ranked) is fused by RRF with k = 60 instead:
   Σ 1 / (60 + rank) over the lists a chunk is in; there the vector side ranks by meaning.
   Where the embedder is good enough to earn it, `rag.fusion = "ranks"` fuses every query so
   (issue 31: model2vec 256-d on REALTALK's 4,096-token sections, +0.009 [+0.001, +0.017]
   paired; evalset_months +0.001, within its noise); keyword first stays the default.
   A query that names a time ("last May", read against the time asked: when.py) first takes
   the keyword candidates of that time (bm25 among chunks whose time is in the window, those
   that hold only common words too; the newest of that time when none matches its other
   words; they stay first in the hits' order, 5), then the rest as above: the
   date's words are not searched for, and what the date misses is still found after them. A
   query without a time is ranked exactly as before.
3. Tie-breaks, added to the fused score: 0.0005 × recency (halving every 30 days) and
   0.0005 × salience (0–1). Together at most 0.001 — about the gap between ranks 1 and 5 of
   one list — so they reorder near-ties and never overturn a clear match; they never lift a
   vector candidate above a keyword one.
4. Diversity. Best first, at most 2 hits per path and each text once (HISTORY.md and its
   monthly file hold the same entries), so one long note cannot fill every slot; a chunk that
   overlaps or touches a better hit of its file (the chunker repeats a chunk's last lines at
   the next one's start) is merged into it: one hit, its lines once.
5. Evidence first. A hit shows the lines of its chunk that hold the query's terms, each term
   weighing its inverse document frequency within the chats searched (snippets.py,
   keyword.py): a person's name in every line of a chat weighs nearly nothing there, the rare
   word of the question much, and a term every line of the chunk holds chooses no line. The
   keyword hits are ordered by the weight of their best line (then by score and tie-breaks),
   the chunks of a time the query names before all others (they had sunk below other times'
   heavier lines: on tests/data/evalset_months.json temporal-dated 0.823 → 0.970): a chunk
   that bm25 liked for many
   common words but whose every line holds only one of them comes after a line that holds the
   question's rare words. On tests/data/evalset_months.json, keyword only: recall@5 0.413 →
   0.452, recall@budget 0.643 → 0.631 (inside its ±0.035); kept because `# Relevant Memory`
   then showed 6 hits by default, so the first ones mattered most. The vector hits keep their order,
   after every keyword hit, so 2 holds.

Privacy: every chunk carries its scope key ("" for the owner's global memory, else the chat
key, derived from the path); a search names the scopes it may see, and both candidate lists
are restricted to them in SQL and by scope-partitioned vector blocks.
"""

from bot.index.chunking import Chunk, Chunker
from bot.index.embedding import Embedder, Model2VecEmbedder
from bot.index.memory_index import Document, IndexStats, MemoryIndex, SyncReport
from bot.index.search import Hit
from bot.index.sources import Exchange

__all__ = [
    "Chunk",
    "Chunker",
    "Document",
    "Embedder",
    "Exchange",
    "Hit",
    "IndexStats",
    "MemoryIndex",
    "Model2VecEmbedder",
    "SyncReport",
]
