"""The experiment the workshop teaches: data, networks, measurements and training.

torch and numpy only: no pytest, and no text. Each module computes what one part of the
workshop script computes, op for op, and returns frozen results whose numbers the log
(`bnvg.log`) names and prints. `config` imports nothing heavy, so the log's layout can read
the recipe without importing torch.
"""
