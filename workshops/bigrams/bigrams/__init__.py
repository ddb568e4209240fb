"""Bigrams over a list of names: a workshop over a public notebook's printed numbers.

The notebook is Andrej Karpathy's `makemore_part1_bigrams.ipynb` (nn-zero-to-hero, MIT), read
at commit 4c351a67b0636703517af86c709614e5776541c7. This package computes what it computes,
in its own code; `snapshots/evidence/published.log` holds only what its stored outputs print.
"""
