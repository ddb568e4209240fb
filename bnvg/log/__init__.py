"""The log: readings, the wording of every line, and the line numbers the text cites.

No torch here: the pytest-xdist controller writes results.log from readings its workers
computed, and never imports torch.

- `readings`: a named, typed number, and what a claim asserts about it (`Bound`);
- `templates`: a line's wording with a field per number (`Template`), and every line's;
- `layout`: every line of results.log in order, the headings each line is read under, and
  the published log, read back through the same templates;
- `fill`: from the experiment's results to filled lines.
"""
