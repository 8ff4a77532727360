"""``dynamic-tp``: a GPU executor that picks the tensor-parallel degree per rollout stage.

Agentic RL's rollout contexts grow during training, and no single tensor-parallel (TP)
degree is fastest throughout (EARL: TP4 beats TP8 by 31% at short contexts, TP8 wins by 5% at
16-32K, and TP4 runs out of memory at 128 responses x 32K). This plugin:

- **profiles** tokens per GPU per second for each TP degree and context bucket on the real
  engine (vLLM with dummy weights: no checkpoint needed): :func:`measure_profile`,
  :class:`ThroughputProfile`;
- **rules out** what would run out of memory, from the model's config and the GPUs:
  :class:`MemoryModel`;
- **selects** a degree per rollout stage from the stage's average and high-percentile
  context length, with hysteresis, logging each switch and why: :class:`TPSelector`;
- **serves** colbench through the model adapter interface (model kind ``dynamic-tp``):
  :class:`DynamicTPExecutor`;
- **dispatches** rollout data between workers all-to-all by layout (NCCL or gloo), beside the
  gather-then-scatter baseline: :mod:`colbench.plugins.dynamic_tp.dispatch`;
- **simulates** every policy over a profile and a context-length trace on any machine:
  :func:`simulate`, ``python -m colbench.plugins.dynamic_tp simulate``.

The modules that need torch (``dispatch``, ``tensor_parallel``, ``gloo``) are imported by
name, so that this package and ``colbench list executors`` stay light. See docs/dynamic_tp.md.
"""

from colbench.plugins.dynamic_tp.engines import (
    EngineFactory,
    ExecutorUnavailable,
    GenerationEngine,
    VLLMEngine,
    require_gpu_and_vllm,
)
from colbench.plugins.dynamic_tp.executor import DynamicTPChatModel, DynamicTPExecutor
from colbench.plugins.dynamic_tp.memory import Fit, GPUSpec, MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile
from colbench.plugins.dynamic_tp.profiler import measure_profile
from colbench.plugins.dynamic_tp.selector import (
    NoFeasibleConfiguration,
    StageStats,
    SwitchEvent,
    TPSelector,
)
from colbench.plugins.dynamic_tp.shape import ARCHITECTURES, ModelShape
from colbench.plugins.dynamic_tp.simulate import PolicyRun, SimulationResult, simulate
from colbench.plugins.dynamic_tp.trace import Trace, synthetic_trace

__all__ = [
    "ARCHITECTURES", "DynamicTPChatModel", "DynamicTPExecutor", "EngineFactory",
    "ExecutorUnavailable", "Fit", "GPUSpec", "GenerationEngine", "MemoryModel", "ModelShape",
    "NoFeasibleConfiguration", "PolicyRun", "SimulationResult", "StageStats", "SwitchEvent",
    "TPSelector", "ThroughputProfile", "Trace", "VLLMEngine", "measure_profile",
    "require_gpu_and_vllm", "simulate", "synthetic_trace",
]
