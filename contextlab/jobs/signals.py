"""Signals of the jobs app.

`job_committed(sender=Job, job_id=int)`: a job was created (or retried) and its transaction
committed; contextlab.jobs.tasks hands it to Celery or to the embedded runner. The services send
it rather than import the queue, which itself runs the services.
"""

from django.dispatch import Signal

job_committed = Signal()
