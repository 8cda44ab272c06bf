"""Evaluation sets the project makes itself, for `python -m bot eval retrieval`: tooling, not
the product (nothing under `bot/` imports it).

    synthetic.py   the regenerable evalset: months of two named people, questions with answers
                   (`python -m benchmarks.evalsets.synthetic OUT.json`)
    phrasebook.py  its facts and how they are asked; cast.py its people and small talk;
                   timing.py how its dated questions name a time, and the day they are asked
"""
