"""LoRA agents on a frozen base: create, train (SFT on answers), save, check and load adapters.

An agent is a LoRA adapter (on ``targets``: the seed's attention ``q_proj``/``v_proj`` by default,
or all seven linear modules of a Llama block, :data:`ALL_LINEAR`; rank ``r``, ``alpha``, no dropout)
attached under a name to the one peft model that wraps the base. The base never changes: its
weights are frozen and adapters are attached and removed, never the model reloaded.

An adapter folder holds exactly ``adapter_config.json`` and ``adapter_model.safetensors``. It is
written to a per-process ``<dir>.partial-*`` folder and renamed, so a half-written folder never carries the final name;
:func:`check_adapter_dir` names whatever is missing or unreadable.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from lib.core.errors import UserError
from lib.core.tasks import Task
from lib.engines.models import encode_batch

TARGETS = ("q_proj", "v_proj")  # the seed's attention-only LoRA
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
IDLE = "_idle"  # a zero adapter that keeps the peft wrapper alive while agents come and go
FILES = ("adapter_config.json", "adapter_model.safetensors")


class CorruptAdapterError(UserError, RuntimeError):
    """An adapter folder that is missing, incomplete or unreadable; the message names the file."""


@dataclass(frozen=True)
class LoraSpec:
    """What the LoRAs a run trains share: rank ``r`` and ``alpha`` (scaling ``alpha / r``), the adapted
    modules ``targets``, AdamW's learning rate ``lr``, the batch size and, where a budget is counted in optimizer steps
    rather than epochs, ``steps``."""

    r: int = 16
    alpha: int = 32
    targets: Sequence[str] = TARGETS
    lr: float = 3e-3
    batch_size: int = 16
    steps: int | None = None


def lora_config(r: int = 16, alpha: int = 32, targets=TARGETS):
    from peft import LoraConfig
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=list(targets),
                      bias="none", task_type="CAUSAL_LM")


@contextlib.contextmanager
def seeded(seed: int):
    """A context in which torch's global RNG (CPU and every CUDA device) starts from ``seed``, and
    after which it is back where the caller left it (``torch.random.fork_rng``)."""
    import torch
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def ensure_peft(base) -> None:
    """Wrap ``base.model`` in a peft model once (with the zero adapter :data:`IDLE`, drawn from seed 0)."""
    from peft import PeftModel, get_peft_model
    if isinstance(base.model, PeftModel):
        return
    with seeded(0):
        base.model = get_peft_model(base.model, lora_config(r=1, alpha=1), adapter_name=IDLE)
    base.model.eval()


def adapters(base) -> list[str]:
    """Names of the attached agent adapters (without :data:`IDLE`)."""
    ensure_peft(base)
    return [n for n in base.model.peft_config if n != IDLE]


def remove_adapter(base, name: str) -> None:
    """Detach adapter ``name`` (the idle adapter is made active first: peft only warns otherwise)."""
    base.model.set_adapter(IDLE)
    if name in base.model.peft_config:
        base.model.delete_adapter(name)


def remove_all(base) -> None:
    for n in adapters(base):
        remove_adapter(base, n)


def new_adapter(base, name: str, *, r: int = 16, alpha: int = 32, seed: int = 0, targets=TARGETS) -> None:
    """Attach a fresh LoRA ``name`` on the ``targets`` modules; its initial A is drawn from torch's
    RNG seeded with ``seed`` (B = 0), the caller's RNG state left untouched (:func:`seeded`)."""
    ensure_peft(base)
    if name in base.model.peft_config:
        remove_adapter(base, name)
    with seeded(seed):
        base.model.add_adapter(name, lora_config(r, alpha, targets))


def adapter_params(base, name: str) -> list:
    return [p for n, p in base.model.named_parameters() if "lora_" in n and n.split(".")[-2] == name]


def train_adapter(base, name: str, tasks: Sequence[Task], *, epochs: int = 2, seed: int = 0,
                  spec: LoraSpec = LoraSpec(), counter=None) -> dict:
    """Supervised fine-tuning of adapter ``name`` on ``tasks`` (cross-entropy on answer tokens only).

    AdamW at ``spec.lr``, ``epochs`` passes over ``tasks`` in batches of ``spec.batch_size``, shuffled by
    ``numpy.random.default_rng(seed)`` (``spec.steps``: exactly that many optimizer steps, over as many passes as they
    need); only the adapter's parameters move. Returns ``{"steps", "loss"}`` (mean loss of the last epoch).
    ``counter(train_steps=…, train_tokens=…, train_padded_tokens=…)`` receives the work done (a
    :class:`PhaseTimer`'s count; padded: the batch's rows × its longest sequence).
    Whatever happens, the model is left as it was found: in eval mode, the adapter frozen, the idle
    adapter active.
    """
    import torch
    tasks = list(tasks)
    if not tasks:
        raise ValueError(f"adapter {name!r}: nothing to train on")
    base.model.set_adapter(name)  # marks it (only it) trainable
    params = adapter_params(base, name)
    for p in params:
        p.requires_grad_(True)
    cap, batch_size = spec.steps, spec.batch_size
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=0.0)
    rng = np.random.default_rng(seed)
    if cap is not None:
        epochs = -(-int(cap) // -(-len(tasks) // batch_size))
    steps, tokens, padded, last = 0, 0, 0, []
    try:
        base.model.train()
        for ep in range(epochs):
            order = rng.permutation(len(tasks))
            last = []
            for s in range(0, len(order), batch_size):
                if cap is not None and steps >= cap:
                    break
                ids, att, lab = encode_batch(base, [tasks[k] for k in order[s:s + batch_size]], base.device)
                loss = base.model(input_ids=ids, attention_mask=att, labels=lab).loss
                tokens += int(att.sum())
                padded += ids.numel()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                steps += 1
                last.append(float(loss.item()))
    finally:
        base.model.eval()
        for p in params:
            p.requires_grad_(False)
        base.model.set_adapter(IDLE)
    if counter is not None:
        counter(train_steps=steps, train_tokens=tokens, train_padded_tokens=padded)
    return {"steps": steps, "loss": float(np.mean(last)) if last else float("nan")}


# ----------------------------------------------------------------------------- files


def check_adapter_dir(path: str | Path) -> Path:
    """Return ``path`` if it is a complete, readable adapter folder; else raise :class:`CorruptAdapterError`."""
    from safetensors import safe_open
    path = Path(path)
    if not path.is_dir():
        raise CorruptAdapterError(f"adapter folder {path} does not exist")
    missing = [f for f in FILES if not (path / f).is_file()]
    if missing:
        raise CorruptAdapterError(f"adapter folder {path} is incomplete: missing {missing}. "
                                  f"Delete the folder (and the run's progress file) to retrain it.")
    try:
        cfg = json.loads((path / FILES[0]).read_text())
        if "r" not in cfg:
            raise ValueError("no 'r' key")
    except (ValueError, OSError) as e:
        raise CorruptAdapterError(f"adapter folder {path}: unreadable {FILES[0]} ({e})") from None
    try:
        with safe_open(str(path / FILES[1]), framework="pt") as fh:
            keys = list(fh.keys())
            for k in keys:
                fh.get_tensor(k)
        if not keys:
            raise ValueError("no tensors")
    except Exception as e:  # noqa: BLE001
        raise CorruptAdapterError(f"adapter folder {path}: unreadable {FILES[1]} ({type(e).__name__}: {e})") from None
    return path


def save_adapter(base, name: str, path: str | Path) -> Path:
    """Write adapter ``name`` to ``path`` (config + safetensors), atomically via ``<path>.partial``."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file
    path = Path(path)
    tmp = _partial(path)
    tmp.mkdir(parents=True)
    sd = get_peft_model_state_dict(base.model, adapter_name=name)
    save_file({k: v.detach().cpu().contiguous() for k, v in sd.items()}, str(tmp / FILES[1]))
    base.model.peft_config[name].save_pretrained(str(tmp))
    return _publish(tmp, path)


def publish_factors(factors: dict, path: str | Path, *, r: int, alpha: int) -> Path:
    """Write an adapter folder from LoRA factors ``{module path: (A, B)}`` (``ΔW = alpha/r · B A``),
    as peft would save it, atomically."""
    from safetensors.torch import save_file
    path = Path(path)
    tmp = _partial(path)
    tmp.mkdir(parents=True)
    sd = {}
    for m, (a, b) in factors.items():
        sd[f"base_model.model.{m}.lora_A.weight"] = a.detach().cpu().contiguous()
        sd[f"base_model.model.{m}.lora_B.weight"] = b.detach().cpu().contiguous()
    save_file(sd, str(tmp / FILES[1]))
    targets = sorted({m.rsplit(".", 1)[-1] for m in factors})
    lora_config(r=r, alpha=alpha, targets=targets).save_pretrained(str(tmp))
    return _publish(tmp, path)


def read_factors(path: str | Path, *, r: int, alpha: int) -> dict[str, list]:
    """The factors of the adapter folder ``path`` as ``{module path: [A (r × in), B (out × r)]}`` (float32), with B
    rescaled from the folder's scaling ``s_f`` to ``alpha / r``: ``(alpha / r) · B' A = s_f · B A``, the same update
    ``ΔW``. Its rank must be ``r`` (a truncated merge, :func:`lib.engines.merge.inherit_merge`, is)."""
    from safetensors import safe_open
    path = check_adapter_dir(path)
    cfg = json.loads((path / FILES[0]).read_text())
    if int(cfg["r"]) != r:
        raise CorruptAdapterError(f"{path}: rank {cfg['r']}, but the run's LoRAs have rank {r}; train from an "
                                  f"adapter of rank {r} (inherit_merge truncates to it)")
    ratio = (cfg["lora_alpha"] / cfg["r"]) / (alpha / r)
    out: dict[str, list] = {}
    with safe_open(str(path / FILES[1]), framework="pt") as fh:
        for k in fh.keys():
            mod, _, which = k.removeprefix("base_model.model.").rpartition(".lora_")
            out.setdefault(mod, [None, None])[0 if which.startswith("A") else 1] = fh.get_tensor(k).float()
    for ab in out.values():
        ab[1] = ab[1] * ratio
    return out


def _partial(dst: Path) -> Path:
    """A staging folder next to ``dst``, unique to this process (runs of a sweep write concurrently)."""
    return dst.with_name(f"{dst.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _publish(tmp: Path, dst: Path) -> Path:
    """Move the finished staging folder ``tmp`` to ``dst``, replacing an older ``dst``.

    If another process publishes the same folder in between (two arms of one seed training the
    same deterministic founder), its copy is kept and ours dropped.
    """
    shutil.rmtree(dst, ignore_errors=True)
    try:
        tmp.rename(dst)
    except OSError:
        if not (dst / FILES[0]).is_file():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return dst


def load_adapter(base, name: str, path: str | Path) -> None:
    """Attach the adapter stored in ``path`` under ``name`` (checked first; replaces ``name``)."""
    check_adapter_dir(path)
    ensure_peft(base)
    if name in base.model.peft_config:
        remove_adapter(base, name)
    base.model.load_adapter(str(path), adapter_name=name)
    for p in adapter_params(base, name):
        p.requires_grad_(False)
    base.model.set_adapter(IDLE)


def copy_adapter(src: str | Path, dst: str | Path) -> Path:
    """Copy a checked adapter folder (atomically)."""
    check_adapter_dir(src)
    dst = Path(dst)
    tmp = _partial(dst)
    shutil.copytree(src, tmp)
    return _publish(tmp, dst)


def train_lora_on_tasks(base, tasks: Sequence[Task], path: str | Path, *, epochs: int = 2, seed: int = 0,
                        spec: LoraSpec = LoraSpec(), counter=None, init=None) -> Path:
    """A LoRA (``spec``) trained on ``tasks`` and saved to ``path`` (then detached): fresh, or started from the
    adapter folder ``init`` (its update, at ``spec``'s scaling: :func:`read_factors`)."""
    name = "_train"
    if init is None:
        new_adapter(base, name, r=spec.r, alpha=spec.alpha, seed=seed, targets=spec.targets)
    else:
        start = publish_factors(read_factors(init, r=spec.r, alpha=spec.alpha), _partial(Path(path)),
                                r=spec.r, alpha=spec.alpha)
        load_adapter(base, name, start)
        shutil.rmtree(start, ignore_errors=True)
    train_adapter(base, name, tasks, epochs=epochs, seed=seed, spec=spec, counter=counter)
    save_adapter(base, name, path)
    remove_adapter(base, name)
    return Path(path)
