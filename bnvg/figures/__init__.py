"""The workshop's figures: what each plots (`series`, numbers only) and how it is drawn (`draw`)."""
