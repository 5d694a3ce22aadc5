#!/bin/sh
# A Python without its site packages (no torch, transformers, numpy or onnx, wherever they are
# installed): what `memplan analyze config.json` meets on a machine without the torch venv.
exec python3 -S "$@"
