from django.apps import AppConfig


class LibraryConfig(AppConfig):
    """Projects, sessions and entries: storage, import and sync of Pi session files."""

    name = "contextlab.library"
    label = "library"

    def ready(self) -> None:
        # Entries' JSON may nest deeper than json.loads recurses (JSON.parse reads any depth).
        from psycopg.types.json import set_json_loads

        from contextlab.library.storage.values import load_data

        set_json_loads(load_data)
