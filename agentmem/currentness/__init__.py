"""Currentness: which of two memories is the current statement of one fact (pure: no I/O).

`pair` holds the learned pair model (does a newer text replace an older one?); `order` holds the
recall stage that puts the newer statement of a topic first and marks the older one.
"""
