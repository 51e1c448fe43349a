"""Framework integrations: callbacks that run the diagnose Tracer inside a framework's loop.

Each submodule imports its framework; import the one you use, e.g.
``from diagnose.integrations.transformers import DiagnoseCallback``.
"""
