"""Healthy base scripts: each a small, fast training run in one style people write.

A base is an ordinary script (synthetic data, fixed seeds, tens of steps) that must be clean
under ``diagnose``. Fault operators find their places in its source; nothing here names them.
"""
