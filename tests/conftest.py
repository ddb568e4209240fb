"""The project's own tests: the library's contracts, and the plugin's behaviour via pytester."""

pytest_plugins = ["pytester"]
