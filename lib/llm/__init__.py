"""The society at LLM scale: base models, batched generation, LoRA training, adapter merges, the loop."""
