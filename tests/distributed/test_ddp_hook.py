"""The DDP comm hook sees each rank's own gradients before the all-reduce, and changes
nothing else: gradients are the same, and a user's own comm hook still runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.distributed.helpers import free_port

CHECK = textwrap.dedent("""
    import json, sys, torch, torch.distributed as dist
    from torch import nn
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from diagnose.distributed.ddp import GradWatch

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}",
                            rank=0, world_size=1)
    watch = GradWatch()
    watch.install()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    plain = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    plain.load_state_dict(net.state_dict())
    model = nn.parallel.DistributedDataParallel(net)
    calls = []

    def user_hook(state, bucket):
        calls.append(bucket.index())
        return default_hooks.allreduce_hook(state, bucket)

    model.register_comm_hook(None, user_hook)  # registered after ours: must still run
    x = torch.randn(8, 4)
    model(x).sum().backward()
    plain(x).sum().backward()
    same = all(torch.allclose(a.grad, b.grad) for a, b in
               zip(net.parameters(), plain.parameters()))
    healthy = watch.local_summary()
    model.zero_grad()
    with torch.no_grad():
        net[1].weight[0, 0] = float("inf")
    model(x).sum().backward()
    broken = watch.local_summary()
    watch.uninstall()
    print(json.dumps({"same": same, "calls": calls, "healthy": healthy, "broken": broken,
                      "config": watch.config()}))
    dist.destroy_process_group()
""")


def test_local_gradients_are_checked_before_the_all_reduce_without_changing_them(tmp_path):
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    done = subprocess.run(
        [sys.executable, str(script), str(free_port())], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["same"] is True
    assert out["calls"] == [0, 0]  # the user's hook ran for the bucket in both iterations
    assert out["healthy"]["finite"] is True and out["healthy"]["iteration"] == 1
    assert out["broken"]["finite"] is False
    assert "0.weight" in out["broken"]["nonfinite_params"]
    assert out["config"]["all_reduce"] == "user_hook"
    assert out["config"]["bucket_cap_mb"] == 25.0
