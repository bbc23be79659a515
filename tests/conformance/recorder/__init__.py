"""Records real Pi 0.80.2 sessions and requests offline (see record.py)."""
