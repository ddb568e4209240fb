"""A workshop's text: the prose people write, the one text claimlog parses.

- `prose`: what of a document is prose (code, front matter and markup hidden), as paragraphs
  and sentences with where each character stands;
- `documents`: the formats authors write (Markdown and MyST, Quarto, Jupyter notebooks),
  read as passages of prose and written back, all of a file or none of it;
- `outputs`: what a notebook's code cells show its reader (their stored outputs), checked
  against a fresh execution and, under an update, refreshed;
- `citations`: the citations of the log in the prose, and whether the log still says them;
  the numbers the prose quotes without citing any line;
- `rewrites`: under an update, the quotes whose numbers moved, rewritten as the author wrote
  them, the ones left as written, with why, and the ones the new values no longer bear out.

It reads the log as readings and the evidence as the sweep's table (`claimlog.log`,
`claimlog.evidence`); nothing of it imports pytest, torch or the plugin.
"""
