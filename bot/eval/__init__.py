"""Offline evaluation of recall: `python -m bot eval retrieval DATASET.json…` measures how well
the bot's own index finds what a conversation said, against keyword search alone and a plain
BM25 baseline. The evalsets it is measured on are made outside the product
(`benchmarks/evalsets/`).

    dataset.py     the dataset format (`Dataset`), loaded and validated with field-named errors
    corpus.py      a dataset as the bot stores it: exchanges, daily notes, hits → turns covered
    bm25.py        the baseline: Okapi BM25 over single turns, a small suffix-stripping stemmer
    retrieval.py   `evaluate`: each system builds its index and answers every question
    report.py      the figures: recall@k, recall@budget, answer coverage, build, latency
    interval.py    95% confidence intervals of a mean (a bootstrap over the questions)
    table.py       a report as text (the recall targets are the benchmarks': retrieval_targets.py)
    realtalk.py    REALTALK and LoCoMo chats (`Chat_*.json`) converted to the dataset format

The format, how to read the figures, and the figures measured on `tests/data/evalset_months.json`
and `tests/data/evalset.json` are in benchmarks/README.md ("eval retrieval — how to run it").
The command line is `bot/cli/evaluate.py`.
"""
