"""Dropout against overfitting: the smallest workshop written on claimlog (see ../README.md)."""
