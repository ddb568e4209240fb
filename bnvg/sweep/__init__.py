"""`python -m bnvg.sweep`: claimlog's sweep (`claimlog.sweep`) of this workshop's evidence."""
