"""qwen_gdn: qwen-recipe's GatedDeltaNet kernels for PyTorch training (docs/training.md).

    import qwen_gdn
    o, final_state = qwen_gdn.chunk_gated_delta_rule(q, k, v, g, beta, ...)  # FLA's signature
    qwen_gdn.enable()   # FLA's chunk_gated_delta_rule (and so Megatron-Core's fla backend) runs ours
    qwen_gdn.disable()
    qwen_gdn.check_errors()  # raises if an earlier call met bad values (g > 0, bad cu_seqlens)

The kernels are in libqwen_gdn.so (kernels/capi), loaded with ctypes on first use; qwen_gdn._lib
says where it is looked for. The argument checks and the library's size queries need no torch.
"""

__version__ = "0.1.0"

from ._checks import Unsupported
from ._lib import ABI_MAJOR, ABI_MINOR, QrGdnError, abi_version, library_path

try:
    import torch as _torch_module
except ImportError:
    _torch_module = None

if _torch_module is not None:
    from ._fla import disable, enable, is_enabled
    from ._torch import ChunkGatedDeltaRule, check_errors, chunk_gated_delta_rule
else:
    def _needs_torch(name):
        def missing(*args, **kwargs):
            raise ImportError(f"qwen_gdn.{name} needs PyTorch, which is not importable")
        missing.__name__ = name
        return missing

    chunk_gated_delta_rule = _needs_torch("chunk_gated_delta_rule")
    enable = _needs_torch("enable")
    disable = _needs_torch("disable")
    is_enabled = _needs_torch("is_enabled")
    check_errors = _needs_torch("check_errors")
    ChunkGatedDeltaRule = _needs_torch("ChunkGatedDeltaRule")

__all__ = ["ABI_MAJOR", "ABI_MINOR", "QrGdnError", "Unsupported", "abi_version", "library_path",
           "ChunkGatedDeltaRule", "chunk_gated_delta_rule", "check_errors", "enable", "disable", "is_enabled"]
