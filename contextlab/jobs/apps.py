from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Compaction and branch-summary jobs, LLM providers and export back to Pi."""

    name = "contextlab.jobs"
    label = "jobs"

    def ready(self) -> None:
        # The queue listens for committed jobs (contextlab.jobs.signals) in every process that
        # can create one, not only in Celery workers (which import the tasks themselves).
        from contextlab.jobs import tasks  # noqa: F401
