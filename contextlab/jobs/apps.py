from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Compaction and branch-summary jobs, LLM providers and export back to Pi."""

    name = "contextlab.jobs"
    label = "jobs"

    def ready(self) -> None:
        from contextlab.jobs.signals import job_committed

        def enqueue_committed(sender: object, *, job_id: int, **kwargs: object) -> None:
            # The queue hears of committed jobs in every process that can create one, not only
            # in Celery workers. It is imported on the first job, not when the app loads:
            # commands that queue nothing (context, compact, branch-summary) need not load it.
            from contextlab.jobs.tasks import enqueue

            enqueue(job_id)

        job_committed.connect(enqueue_committed, weak=False, dispatch_uid="jobs-enqueue-committed")
