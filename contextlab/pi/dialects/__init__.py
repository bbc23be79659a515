"""Pi dialects: every string and rule that differs between Pi versions, one module per version.

The engine modules take a ``Dialect`` (default: ``PI_0_80``) instead of hard-coding a version, so
a later Pi (0.73 with markdown project context, 1.x with the prompt persisted in the session) is
added as another module here without touching the rest: its strings as data, and where it builds
a request otherwise, a ``contextlab.pi.request.RequestSteps`` subclass in ``Dialect.steps``.
"""

from contextlab.pi.dialects.base import Dialect
from contextlab.pi.dialects.pi_0_80 import PI_0_80

DEFAULT_DIALECT: Dialect = PI_0_80

__all__ = ["DEFAULT_DIALECT", "PI_0_80", "Dialect"]
