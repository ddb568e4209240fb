"""The published log, read back into readings through the same templates that print ours.

The workshop published its log (torch 2.12.1) as text, with indentation dropped and runs of
spaces collapsed. It is the workshop's own evidence of another platform, so the sweep and
the citation check compare with it. It is the one log this project parses: each line is
matched against its template (`Template.pattern`), which yields every number by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bnvg.experiment.config import WORKSHOP, Workshop
from bnvg.log.layout import layout
from bnvg.log.readings import Reading


class PublishedLogError(ValueError):
    """The published log does not have the layout the templates expect."""


def read_published(path: Path, workshop: Workshop = WORKSHOP) -> dict[str, Reading]:
    """Every reading of the published log, by name (its value parsed from the printed text)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise PublishedLogError(f"cannot read the published log {path}: {error}") from None
    lines = text.splitlines()
    expected = layout(workshop)
    if len(lines) != len(expected):
        raise PublishedLogError(
            f"{path} has {len(lines)} lines; the layout of results.log has {len(expected)}"
        )
    found: dict[str, Reading] = {}
    for number, (published, line) in enumerate(zip(lines, expected, strict=True), start=1):
        quantities = list(line.template.quantities())
        if not line.key or not quantities:
            continue
        match = line.template.pattern(line.text).fullmatch(published)
        if match is None:
            raise PublishedLogError(
                f"{path}:{number} does not read as the log line {line.key!r}: {published!r}"
            )
        for field, quantity in quantities:
            value: Any = quantity.parse(match.group(field))
            reading = Reading(line.key, quantity, value)
            found[reading.name] = reading
    return found
