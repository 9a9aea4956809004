"""What the process runs on: whether torch sees a CUDA GPU, and the device's name for manifests."""
from __future__ import annotations

import platform
from pathlib import Path


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def device_name() -> str:
    """The GPU's name where torch sees CUDA, else the CPU model."""
    if cuda_available():
        import torch
        return "cuda:" + torch.cuda.get_device_name(0)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "cpu:" + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu:" + (platform.processor() or platform.machine())
