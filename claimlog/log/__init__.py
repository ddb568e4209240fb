"""The log: readings, templates and lines (a workshop declares its own layout of them)."""
