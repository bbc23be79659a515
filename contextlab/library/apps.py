from django.apps import AppConfig


class LibraryConfig(AppConfig):
    """Projects, sessions and entries: storage, import and sync of Pi session files."""

    name = "contextlab.library"
    label = "library"
