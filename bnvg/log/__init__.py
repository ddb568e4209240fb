"""The log: the wording and layout of results.log, and how the experiment's results fill it.

No torch here: the pytest-xdist controller writes results.log from readings its workers
computed, and never imports torch. Readings, templates and lines are claimlog's
(`claimlog.log`); what is bnvg's is:

- `layout`: every line's wording, and every line of results.log in order, the headings each
  line is read under (`log()`, as the workshop declares it);
- `fill`: from the experiment's results to filled lines, one function per kind of line.
"""
