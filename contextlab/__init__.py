"""contextlab: inspect the context of Pi coding-agent sessions.

The Celery app (contextlab.celery) is not loaded with the package: `manage.py context`, `compact`
and `branch-summary` read a file and print, and importing Celery would cost them ~0.3 s of CPU.
The processes that queue work load it first: the web process (contextlab/wsgi.py), every other
management command (manage.py), the test suite (tests/conftest.py); `celery -A contextlab` finds
contextlab.celery by itself.
"""
