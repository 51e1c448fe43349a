"""The tracer: finds where the first inf/nan of a training run is born.

``Tracer`` attaches global hooks to every module and optimizer in the process and raises
``NonFiniteDetected`` at the first non-finite value; ``Tracer.report()`` builds the Report.
The command line's tracer raises ``NonFiniteStop`` instead, a ``RunStopped`` that the
script's own ``except Exception`` handlers let through.
"""

from diagnose.stops import RunStopped
from diagnose.tracer.core import Tracer
from diagnose.tracer.events import NonFiniteDetected, NonFiniteStop

__all__ = ["NonFiniteDetected", "NonFiniteStop", "RunStopped", "Tracer"]
