"""A pytest plugin for tests/test_workshop_runs.py: reports whether matplotlib was imported."""

import sys


def pytest_unconfigure(config):
    print(f"matplotlib imported: {'matplotlib' in sys.modules}")
