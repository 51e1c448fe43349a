"""Whether a run that stays finite can learn: a watch beside the tracer, and its judgement.

``LearningWatch`` is entered beside the tracer (the runner and the integrations do it) and
turns what the run does into ``report.Learning`` evidence: backward passes and optimizer
steps, whether gradients are cleared between steps, which parameters get gradients and which
optimizer holds them, the model's mode, what the loss functions are given. ``findings`` turns
that evidence and the step history into symptoms. The package's import is light (no torch):
the watch lives in ``diagnose.learning.watch``.
"""
