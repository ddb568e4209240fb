"""A pytest plugin for tests/test_workshop_runs.py: reports which heavy modules were imported."""

import sys


def pytest_unconfigure(config):
    for module in ("matplotlib", "torch._dynamo", "torch"):
        print(f"{module} imported: {module in sys.modules}")
