"""The log: readings, the wording of every line, and the line numbers the text cites.

No torch here: the pytest-xdist controller writes results.log from readings its workers
computed, and never imports torch.

- `readings`: a named, typed number, and what a claim asserts about it (`Bound`);
- `template`, `templates`: a line's wording with a field per number, and every line's wording;
- `layout`: every line of results.log in order, and the headings each line is read under;
- `fill`: from the experiment's results to filled lines;
- `published`: the published log, read back through the same templates.
"""
