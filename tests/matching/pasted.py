"""Real error output as users pasted it into GitHub issues, shared by the matching tests."""

# A traceback whose final exception line was cut off: the last frame's `raise` still says it.
FRAMES_THEN_RAISE = """\
Traceback (most recent call last):
  File "/media/disk8T/zmx/sparseneus/exp_runner_finetune.py", line 320, in train
    loss.backward()
  File "/home/u/anaconda3/envs/spneus/lib/python3.10/site-packages/torch/autograd/__init__.py", line 85, in _make_grads
    raise RuntimeError("grad can be implicitly created only for scalar outputs")
"""

# NCCL's watchdog line, then the C++ log line that follows it in every real report.
WATCHDOG = (
    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
    "[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 1] Exception (either an error or timeout) detected by watchdog at work: 808, last "
    "enqueued NCCL work: 811, last completed NCCL work: 807.\n"
)
