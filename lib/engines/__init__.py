"""The model engines the society runs on: base models, LoRA, folded and batched training and evaluation,
generation, merges, agents, timing."""
