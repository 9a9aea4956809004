"""What the process runs on: whether torch sees a CUDA GPU, the device's name and its float path for manifests."""
from __future__ import annotations

import platform
import re
from functools import lru_cache
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


@lru_cache(maxsize=1)
def float_path() -> dict:
    """What decides a CPU run's floats beyond the code: torch's CPU kernel level (``AVX2``, ``AVX512``,
    ...: :func:`torch.backends.cpu.get_cpu_capability`), the CPU's vector flags, its vendor and model
    (``vendor``) and the BLAS torch was built with (``blas``). Two machines with the same code, seeds and
    versions but another kernel level train other founders (they differ in the last bits, and training
    amplifies that), so a data folder and every society shard's progress file record it; ``{}`` without torch."""
    try:
        import torch
    except ImportError:
        return {}
    flags = []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = sorted(f for f in line.split(":", 1)[1].split() if f.startswith(("avx", "fma", "amx")))
                break
    except OSError:
        pass
    blas = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    return {"torch_cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu_vector_flags": flags,
            "vendor": device_name().removeprefix("cpu:"), "blas": blas[1] if blas else "?"}
