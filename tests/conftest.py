import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `from helpers import ...`

# The CUDA backend's kernels run on numba's simulator where there is no NVIDIA GPU (CI, laptops): numba reads
# NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported, so it is set here, before any test can
# import it. A machine with a GPU (its device node and nvidia-smi both there) runs them for real; a value
# already in the environment is left as it is.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and (not os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is None):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
