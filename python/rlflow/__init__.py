"""rlflow: make neural-network graphs faster with verified rewrites.

    import rlflow
    g = rlflow.load("model.onnx")          # or rlflow.zoo("resnet18"), or ONNX bytes
    o, report = rlflow.optimize(g)          # search, ONNX Runtime guard, verification
    o.save("model.opt.onnx")

rlflow.Env is the graph-rewriting environment for agents written in Python, with
Gymnasium's API (a gymnasium.Env when gymnasium is installed); rlflow.rules loads,
generates and verifies substitution rules.
Errors are rlflow.Error subclasses carrying rlflow's message.
"""

from ._core import (
    CheckpointError,
    CudaError,
    Error,
    Graph,
    GraphError,
    IoError,
    OnnxError,
    PreconditionError,
    ResourceError,
    RuleError,
    ShapeError,
    TrainingError,
    VerificationError,
    __version__,
    load,
    optimize,
    zoo,
    zoo_names,
)
from . import rules
from .env import Env

__all__ = [
    "CheckpointError", "CudaError", "Env", "Error", "Graph", "GraphError", "IoError", "OnnxError",
    "PreconditionError", "ResourceError", "RuleError", "ShapeError", "TrainingError", "VerificationError",
    "__version__", "load", "optimize", "rules", "zoo", "zoo_names",
]
