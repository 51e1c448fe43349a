"""diagnose under torchrun: every rank traced, one report naming the rank where it began.

Each rank runs the script under its own Tracer and, when it ends for any reason, writes its
evidence to a run folder shared by the ranks of one launch. The first rank to end with an
event makes the others stop (they watch the folder from a thread, so a rank blocked in a
collective stops too), and one combined report names the rank and step where the first
non-finite value was born, with every rank's evidence alongside. Nothing here imports torch
at import time.
"""

from diagnose.distributed.context import DistContext

__all__ = ["DistContext"]
