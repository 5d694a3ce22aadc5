#!/usr/bin/python3
"""Exit 0 when this torch's CPU autocast computes in float16, else print why not and exit 1.

torch 1.13 (Debian 12's python3-torch) supports only bfloat16 in CPU autocast: asked for float16,
torch.autocast(device_type="cpu", dtype=torch.float16) warns "In CPU autocast, but the target dtype
is not supported. Disabling autocast." and then raises on entry "RuntimeError: Currently,
AutocastCPU only support Bfloat16 as the autocast_cpu_dtype", so an fp16 plan's loop cannot run
on CPU there (on CUDA it can). torch 2.x added float16 to CPU autocast. The probe asks the
interpreter rather than parsing its version.
"""
import sys
import warnings

import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
        with torch.autocast(device_type="cpu", dtype=torch.float16):
            dtype = (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    except RuntimeError as error:
        dtype = f"an error ({error})"
if dtype != torch.float16:
    print(f"torch {torch.__version__} has no float16 CPU autocast: a float16 matmul gives {dtype}")
    sys.exit(1)
