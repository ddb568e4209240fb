"""The sweep: which numbers travel between machines, and which sentences are luck of the draw.

The sweep (`python -m claimlog.sweep` in a workshop's folder; bnvg's own `python -m
bnvg.sweep`) runs every claim under every variant (`variants`) as jobs on a Dask
cluster (`cluster`, each job a `job`), keeps each result as a fragment (`fragments`), and
merges the fragments into the committed tables (`merge`).
"""
