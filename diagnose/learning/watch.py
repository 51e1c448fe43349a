"""``LearningWatch``: entered beside the tracer, it gathers ``report.Learning`` as the run goes.

Like the config capture it chains reversible wrappers onto torch (``torch.autograd.backward``,
``Optimizer.__init__`` / ``zero_grad``, ``Module.zero_grad``) and uses
torch's global hook registries; nothing is put on the user's objects, and every wrapper is a
pass-through once the watch exits. Its per-step cost is a few counters; the checks that read
a value from the device run on the first passes and then on sampled ones.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optim_hooks

from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.learning.activations import ActivationWatch
from diagnose.learning.clearing import ClearingWatch
from diagnose.learning.coverage import Coverage, WeightMotion, held_ids
from diagnose.learning.losses import LossWatch
from diagnose.learning.modules import ModuleWatch, root_label
from diagnose.learning.steplosses import StepLosses
from diagnose.onethread import OneThread, _get_ident
from diagnose.report import ActivationNote, GradNote, Learning
from diagnose.tracer import modes
from diagnose.tracer.ops import LossWatch as _TracerLossWatch

_is_compiling = torch.compiler.is_compiling


def _own_modes() -> int:
    """The function modes of diagnose's own on the stack now: the tracer's loss watch."""
    n = torch._C._len_torch_function_stack()
    return sum(isinstance(torch._C._get_function_stack_at(i), _TracerLossWatch) for i in range(n))


TRACKED_PASSES = 3  # backward passes the module hooks stay on for
_SAMPLE_EVERY = 16
_SERIES = 512  # loss points kept for a run without optimizer steps
_EARLY_STEPS = (TRACKED_PASSES + 2, 20)  # when the sure findings are said during the run
_EARLY_PASSES = (10,)  # backward passes with no step yet


class LearningWatch:
    """Gathers whether the run can learn; ``evidence()`` is the ``Learning`` of the run so far."""

    def __init__(
        self, on_early: Callable[[str], None] | None = None, thread: OneThread | None = None
    ) -> None:
        """``thread``: the thread whose training is watched, shared with the tracer beside
        it (by default the first that trains; other threads' calls are left alone)."""
        self.errors = ErrorLog()
        self.thread = thread if thread is not None else OneThread()
        self._on_early = on_early
        self._said: set[str] = set()
        self._patcher = Patcher(self.errors)
        self._stack = contextlib.ExitStack()
        self._optimizers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._constructed = 0
        self._backward = 0
        self._steps = 0
        self._steps_begun = 0  # an LBFGS step runs backward many times before it ends
        self._modules = ModuleWatch()
        self._clearing = ClearingWatch()
        self._coverage = Coverage()
        self._motion = WeightMotion()
        self._losses = LossWatch()
        self._step_losses = StepLosses()
        self._activations = ActivationWatch()
        self._mode_checked = 0
        self._eval = 0
        self._eval_modules: list[str] = []
        self._series: list[float] = []
        self._stride = 1
        self._module_hooks_on = False

    # -- install / uninstall ---------------------------------------------------------------

    def __enter__(self) -> LearningWatch:
        patcher = self._patcher
        patcher.wrap(torch.autograd, "backward", before=self._guarded(self._before_backward))
        patcher.wrap(
            torch.optim.Optimizer, "__init__", after=self._guarded(self._constructed_optimizer)
        )
        patcher.wrap(
            torch.optim.Optimizer, "zero_grad", before=self._guarded(self._optimizer_zero_grad)
        )
        patcher.wrap(
            nn.Module,
            "zero_grad",
            before=self._guarded(lambda *a, **k: self._clearing.module_zero_grad()),
        )
        self._stack.callback(patcher.restore_all)
        pre = optim_hooks.register_optimizer_step_pre_hook(self._guarded(self._before_step))
        post = optim_hooks.register_optimizer_step_post_hook(self._guarded(self._after_step))
        self._stack.callback(pre.remove)
        self._stack.callback(post.remove)
        self._module_hooks(on=self._tracking)
        return self

    def __exit__(self, *exc: object) -> None:
        self._module_hooks(on=False)
        self._activations.stop()  # armed after a step whose next forward never came
        self._stack.close()

    @property
    def _tracking(self) -> bool:
        """Still in the first passes, whose module calls the global hooks watch (a watch
        entered again later, as a callback does per epoch, does not watch them again)."""
        return self._backward < 2 * TRACKED_PASSES and self._steps < TRACKED_PASSES

    def _module_hooks(self, on: bool) -> None:
        if on == self._module_hooks_on:
            return
        self._module_hooks_on = on
        if on:
            self._pre = module_hooks.register_module_forward_pre_hook(
                self._guarded(self._modules.pre)
            )
            self._post = module_hooks.register_module_forward_hook(
                self._guarded(self._modules.post), always_call=True
            )
        else:
            self._pre.remove()
            self._post.remove()

    def _guarded(self, hook: Any) -> Any:
        """A hook whose own failure is noted for the report, never raised into the script;
        it runs only in the thread whose training is watched."""
        errors, thread = self.errors, self.thread

        def guarded(*args: Any, **kwargs: Any) -> None:
            if _is_compiling():
                # inside a graph dynamo captures (torch.compile): the hook's own bookkeeping
                # would be traced into the user's graph, so the compiled region is not watched
                return
            if thread.ident != _get_ident() and not thread.mine():
                return
            try:
                if modes.present() and modes.present(_own_modes()):  # not the script's ops
                    with modes.hidden():
                        hook(*args, **kwargs)
                else:
                    hook(*args, **kwargs)
            except Exception as exc:
                errors.record(getattr(hook, "__name__", "learning watch"), exc)

        return guarded

    # -- events ------------------------------------------------------------------------------

    def _constructed_optimizer(
        self, result: Any, optimizer: Any, *args: Any, **kwargs: Any
    ) -> None:
        self._constructed += 1
        self._optimizers.add(optimizer)

    def optimizer_known(self, optimizer: Any) -> None:
        """An optimizer built before the watch entered (a framework's), handed over by its
        callback: counted as if made while watching."""
        if optimizer not in self._optimizers:
            self._constructed_optimizer(None, optimizer)

    def _optimizer_zero_grad(self, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        self._clearing.zero_grad(optimizer)

    def _before_backward(self, tensors: Any, *args: Any, **kwargs: Any) -> None:
        self._backward += 1
        optimizers = list(self._optimizers)
        if self._module_hooks_on:
            self._modules.end_pass()
            if not self._tracking:
                self._module_hooks(on=False)
        if self._activations.armed:
            self._activations.disarm(list(self._modules.roots))
        loss = tensors if isinstance(tensors, torch.Tensor) else next(iter(tensors or ()), None)
        self._losses.before_backward(loss)
        self._step_losses.before_backward(loss)
        self._clearing.before_backward(optimizers)
        self._check_mode(optimizers)
        if not self._constructed:
            self._without_optimizer(loss)
        elif not self._steps:
            self._keep_loss(loss)  # until a step is taken, the passes are the run's history
            if self._backward in _EARLY_PASSES and not self._steps_begun:
                self._say_early(f"backward pass {self._backward}")

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._steps_begun += 1
        self._optimizers.add(optimizer)
        # torch hands the hook the step's own arguments, the optimizer first
        closure = len(args or ()) > 1 or (kwargs or {}).get("closure") is not None
        self._clearing.before_step(optimizer, closure=closure)
        self._step_losses.before_step(optimizer)
        if self._steps < TRACKED_PASSES:
            self._coverage.check(list(self._optimizers), self._modules)
        if not self._motion.started:
            self._motion.start([p for g in optimizer.param_groups for p in g["params"]])
        self._activations.read_gradients(list(self._modules.roots))

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._steps += 1
        if self._steps in _EARLY_STEPS:
            self._say_early(f"step {self._steps}")
        if self._steps <= TRACKED_PASSES or self._steps % _SAMPLE_EVERY == 0:
            self._motion.measure()
        if self._steps == TRACKED_PASSES or self._steps % _SAMPLE_EVERY == 0:
            self._activations.arm(self._guarded)  # for the next step's forward

    def _check_mode(self, optimizers: list[Any]) -> None:
        if self._backward > TRACKED_PASSES and self._backward % _SAMPLE_EVERY:
            return
        trained = self._modules.switched_roots(held_ids(optimizers)) if optimizers else []
        if not trained:
            return
        self._mode_checked += 1
        in_eval = [root for root in trained if not root.training]
        if in_eval:
            self._eval += 1
            for root in in_eval:
                name = root_label(root)
                if name not in self._eval_modules:
                    self._eval_modules.append(name)

    def _without_optimizer(self, loss: Any) -> None:
        """No torch.optim: the loss at each backward is the run's only history."""
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            return
        if not self._motion.started:
            params = [p for root in list(self._modules.roots) for p in root.parameters()]
            self._motion.start([p for p in params if p.requires_grad])
        elif self._backward % _SAMPLE_EVERY == 0:
            self._motion.measure()
        self._keep_loss(loss)

    def _keep_loss(self, loss: Any) -> None:
        """The loss of this backward pass joins the series, thinned to ``_SERIES`` values."""
        if (
            not isinstance(loss, torch.Tensor)
            or loss.numel() != 1
            or (self._backward - 1) % self._stride
        ):
            return
        self._series.append(float(loss.detach()))
        if len(self._series) >= _SERIES:
            self._series = self._series[::2]
            self._stride *= 2

    def _say_early(self, when: str) -> None:
        """A finding that is sure after a few steps is said now; the run goes on."""
        if self._on_early is None:
            return
        from diagnose.learning.findings import early_signs

        for symptom in early_signs(self.evidence()):
            if symptom.id not in self._said:
                self._said.add(symptom.id)
                title = symptom.title or symptom.id
                self._on_early(f"early sign at {when}: {title[0].lower()}{title[1:]}")

    # -- the evidence ------------------------------------------------------------------------

    def evidence(self) -> Learning:
        if not self._constructed and self._motion.started:
            self._motion.measure()
        checked, uncleared = self._clearing.counts()
        order_checked, stepped_cleared, out_of_order = self._clearing.order_counts()
        coverage = self._coverage
        scale = self._modules.input_scale
        return Learning(
            backward_passes=self._backward,
            optimizer_steps=self._steps,
            optimizers=self._constructed,
            clear_checked=checked,
            uncleared=uncleared,
            order_checked=order_checked,
            stepped_cleared=stepped_cleared,
            order_optimizer=self._step_losses.name_of(out_of_order) if stepped_cleared else None,
            mode_checked=self._mode_checked,
            eval_mode=self._eval,
            eval_modules=self._eval_modules[:20],
            grads_checked=coverage.checks,
            optimized_elements=coverage.elements,
            not_in_optimizer=list(coverage.not_in_optimizer.values())[:20],
            unregistered=list(coverage.unregistered.values())[:20],
            no_gradient=coverage.no_gradient(),
            no_grad_modules=list(coverage.no_grad)[:20],
            losses=self._losses.inputs(),
            input_module=scale.module if scale else None,
            input_mean=scale.mean if scale else None,
            input_std=scale.std if scale else None,
            input_min=scale.low if scale else None,
            input_max=scale.high if scale else None,
            input_constant=(not self._modules.input_varies) if scale else None,
            weight_change=self._motion.change,
            activations=[
                ActivationNote(
                    name=a.name,
                    kind=a.kind,
                    share=a.share,
                    checks=a.checks,
                    first_share=a.first_share,
                )
                for a in list(self._activations.stats.values())[:20]
            ],
            first_grad=_grad_note(self._activations.first_grad),
            last_grad=_grad_note(self._activations.last_grad),
            layer_grads=[GradNote(module=m, norm=n) for m, n in self._activations.layer_grads],
            loss_series=[] if self._steps else list(self._series),
            optimizer_losses=self._step_losses.losses(),
        )


def _grad_note(found: tuple[str, float] | None) -> GradNote | None:
    return None if found is None else GradNote(module=found[0], norm=found[1])
