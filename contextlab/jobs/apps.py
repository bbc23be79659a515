from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Compaction and branch-summary jobs, LLM providers and export back to Pi."""

    name = "contextlab.jobs"
    label = "jobs"
