"""ColBench Frontend Design: collaborative web page design with a simulated designer who sees
the target page; scored by the similarity of the two renders.

The parts, each a module of this package:

- :mod:`.generator` and :mod:`.tasks`: seeded target pages (Tailwind HTML) with short vague
  descriptions; 500 test and 2,000 train tasks, cached; the published format loads too.
- :mod:`.render`: Selenium driving Debian's chromium and chromedriver, a warm pool, Tailwind
  served locally, every outside request blocked, a hard bound per render.
- :mod:`.scoring`: ``clip`` (CLIP ViT-B/32 image embeddings through transformers, by hub id
  or local folder) and ``perceptual`` (weight-free). No model weights can be downloaded on
  colbench's own machines: the tests and benchmarks run the real CLIP code on a small CLIP
  with random weights (:func:`.scoring.build_random_clip`); real numbers need the real weights
  (``--scorer clip:/path/to/clip-vit-base-patch32`` or a Hugging Face cache with
  ``HF_HUB_OFFLINE=1``).
- :mod:`.designer`: the built-in DOM-diff designer and the model-backed one.
- :mod:`.env`: :class:`FrontendEnv`, registered as ``colbench/Frontend-v0``.

Needs ``pip install 'colbench[frontend]'`` and ``apt-get install chromium chromium-driver``.
"""

from colbench.errors import MissingExtraError

for _module in ("selenium", "PIL", "numpy"):
    try:
        __import__(_module)
    except ImportError as _exc:
        raise MissingExtraError("colbench.gyms.frontend", "frontend", _module) from _exc

from colbench.gyms.frontend.env import FrontendEnv  # noqa: E402
from colbench.gyms.frontend.tasks import load_frontend_tasks  # noqa: E402

__all__ = ["FrontendEnv", "load_frontend_tasks"]
