"""The tracer: finds where the first inf/nan of a training run is born.

``Tracer`` attaches global hooks to every module and optimizer in the process and raises
``NonFiniteDetected`` at the first non-finite value; ``Tracer.report()`` builds the Report.
"""

from diagnose.tracer.core import Tracer
from diagnose.tracer.events import NonFiniteDetected

__all__ = ["NonFiniteDetected", "Tracer"]
