"""Loads the bnvg plugin for every pytest run from this folder: it writes captures/results.log."""

pytest_plugins = ["bnvg.plugin"]
