"""The runtime checker: a TorchDispatchMode that sees each host-to-device copy as PyTorch issues it (runtime.py),
its pytest plugin, and the byte ranges a tensor view covers (byte_runs.py). Needs torch only, no trace."""
