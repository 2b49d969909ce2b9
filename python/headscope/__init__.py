"""headscope from Python: capture what any PyTorch model's attention heads
output, analyse it with headscope's Rust engine, and open it in the
desktop viewer.

>>> import headscope
>>> cap = headscope.capture(model, tokenizer, "The cat sat. It slept.")
>>> cap.save("cat.safetensors"); cap.figures()["layers"][0]["mean_distance"]
>>> headscope.show(cap)

``headscope.analyze(model_folder, text)`` runs headscope's own engine
instead and hands back the figures and numpy arrays;
``headscope.ablate(model_folder, text, heads=[(17, 3)])`` says how much
the model's output moves with those heads ablated.
"""

from ._analysis import Analysis, ablate, analyze
from ._capture import Capture, capture, capture_transformer_lens
from ._viewer import show

__all__ = [
    "Analysis",
    "Capture",
    "ablate",
    "analyze",
    "capture",
    "capture_transformer_lens",
    "show",
]
