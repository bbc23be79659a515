from django.apps import AppConfig


class InspectorConfig(AppConfig):
    """The session tree, the per-turn context inspector and the context growth chart."""

    name = "contextlab.inspector"
    label = "inspector"
