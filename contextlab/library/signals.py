"""Signals of the library, for the apps above it (which the library does not import).

`entries_appended(sender=Session, session_id=int)`: entries were appended to a session's current
revision and committed (contextlab.library.storage.append.append_entries). The inspector stores
the grown session's tree index on it.
"""

from django.dispatch import Signal

entries_appended = Signal()
