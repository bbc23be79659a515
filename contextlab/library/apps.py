import django_stubs_ext
from django.apps import AppConfig

# Django's generic classes that django-stubs types with parameters (ModelAdmin[Project],
# QuerySet["Job"], ModelForm[...]) become subscriptable at run time too. Done here, not in the
# settings: django.setup() imports this module (the first of contextlab's apps) before any
# model, form or admin module, and reading the settings alone (`manage.py context`) does not pay
# for the imports it makes (the model, form, template and admin machinery: 0.12 s).
django_stubs_ext.monkeypatch()


class LibraryConfig(AppConfig):
    """Projects, sessions and entries: storage, import and sync of Pi session files."""

    name = "contextlab.library"
    label = "library"

    def ready(self) -> None:
        # Entries' JSON may nest deeper than json.loads recurses (JSON.parse reads any depth).
        from psycopg.types.json import set_json_loads

        from contextlab.library.storage.values import load_data

        set_json_loads(load_data)

        # After each response, a process that grew gives its free heap back to the system.
        from django.core.signals import request_finished

        from contextlab.memory import trim_if_grown

        request_finished.connect(trim_if_grown, dispatch_uid="contextlab.memory.trim_if_grown")
