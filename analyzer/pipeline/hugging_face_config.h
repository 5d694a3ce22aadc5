#pragma once
// A Hugging Face model as input: `memplan analyze path/to/config.json` (or the model's folder).
// The config becomes a weight-free ONNX training graph through torch's own exporter: the converter
// (tools/hf_config_to_onnx.py, embedded in the binary) builds the model on the meta device, exports
// it with dynamo at opset 18 and stores its weights as never-written external data. It runs in
// the Python named by MEMPLAN_PYTHON (else python3), which needs torch, transformers and onnx.
// Results are cached by the config's bytes and the converter's text in $MEMPLAN_CACHE_DIR (else
// $XDG_CACHE_HOME/memplan, else ~/.cache/memplan), under hf/.

#include <string>

#include "analyzer/pipeline/progress_sink.h"
#include "graph/expected.h"

namespace memplan {

// Whether `path` names a Hugging Face config: a folder holding config.json, or a .json file
// whose top-level object has a "model_type" string.
bool IsHuggingFaceConfig(const std::string& path);

// Whether `model` names a Hugging Face hub repository: `owner/name` (one slash, letters, digits,
// '.', '_', '-', neither part starting with '.' or '-', no "..", not ending in .onnx or .json)
// and no file or folder of that path exists. A local path always wins: `models/llama` that
// exists is the folder.
bool LooksLikeHubId(const std::string& model);

// The local path of hub repository `id`'s config.json: from huggingface_hub's cache (HF_HOME,
// HF_HUB_CACHE), else downloaded into it (config.json only, never weights), by the converter
// script's --hub-config mode. Errors, one line each: huggingface_hub (or torch, transformers)
// missing, offline or no network and not cached, no such repository, a gated repository.
Expected<std::string> HubConfigPath(const std::string& id, const ProgressSink& progress);

// The cached ONNX file of the config at `path` (converted first when not cached). Errors, one
// line each: no Python, torch/transformers missing (naming the Python tried and how to install
// them), the converter's own one-line failure, a cache folder that cannot be written.
Expected<std::string> HuggingFaceConfigAsOnnx(const std::string& path,
                                              const ProgressSink& progress);

}  // namespace memplan
