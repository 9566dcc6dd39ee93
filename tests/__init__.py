import os

import torch

if not torch.cuda.is_available():
    # Without a GPU the Triton kernel's tests run in Triton's interpreter on the CPU. The variable
    # is read when the kernels are defined (at the first import of disan.nn.kernels.triton), so it
    # is set here, before any test module imports the package.
    os.environ.setdefault("TRITON_INTERPRET", "1")
