"""keep_freed_memory (train/allocator.py): a freed large tensor's memory is reused, not faulted in again.

In a child process: the call changes the allocator of the whole process it runs in."""

import json
import subprocess
import sys

import pytest

PROBE = r"""
import json, resource, sys
import torch
from transformer_course.train.allocator import keep_freed_memory

def faults_of_fresh_tensors():
    counts = []
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        torch.empty(2160, 8000).fill_(1.0)  # 69 MB, the multi30k-cpu step's logits; freed at once
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return min(counts[1:])

default = faults_of_fresh_tensors()
applied = keep_freed_memory()
kept = faults_of_fresh_tensors()
print(json.dumps({"default": default, "applied": applied, "again": keep_freed_memory(), "kept": kept}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_a_freed_69_mb_tensor_is_reused_instead_of_faulted_in_again():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    pages = 2160 * 8000 * 4 // 4096
    assert result["applied"] is True and result["again"] is True  # a second call changes nothing, says True
    assert result["default"] > pages // 2, result  # glibc's default: fresh pages for every such tensor
    assert result["kept"] < pages // 50, result  # kept: the freed block comes back without faults
