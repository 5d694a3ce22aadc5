#!/usr/bin/env python3
"""A Hugging Face model config (config.json, or a model folder holding one) as a weight-free ONNX
training graph: the model is built with its parameters on the meta device (no weights, any size)
and its buffers on the CPU (position ids, token type ids, rotary frequencies: small tables the
model computes with), exported by torch's dynamo exporter at opset 18 in training mode (then its
optimizer, with no weight to fold), and its weights written as external data that is never stored
(memplan reads their shapes and types only); the buffers keep their values, so `memplan verify`
runs the graph as the model computes.

    python3 hf_config_to_onnx.py CONFIG OUT.onnx
    python3 hf_config_to_onnx.py --hub-config OWNER/NAME OUT.txt   # a hub id's cached config.json

`memplan analyze config.json` runs this with the Python it finds (MEMPLAN_PYTHON, else python3)
and caches the result. Needs torch 2.x and transformers (tools/setup_torch_env.sh installs both).
Exit 3 with one line on stderr when they are missing; 1 with one line for any other failure.
"""
import contextlib
import inspect
import os
import sys


def fail(code, message):
    sys.stderr.write(message.replace("\n", " ").strip() + "\n")
    sys.exit(code)


try:
    import numpy as np
    import onnx
    import onnx_ir  # noqa: F401 (the exporter's IR, used below)
    import onnxscript  # noqa: F401 (the exporter's optimizer, used below)
    import torch
    import transformers
except ImportError as error:
    fail(3, "needs torch, transformers and onnx (%s)" % error)

# Symbolic sizes the graph keeps: the batch and, for text, the sequence (memplan's --dim seq=N).
BATCH, SEQ, IMAGE = 2, 16, 224


@contextlib.contextmanager
def parameters_on_meta():
    """Every parameter a module registers moves to the meta device as it is registered; buffers
    stay where the module creates them (accelerate's init_empty_weights(include_buffers=False)).
    A buffer on the meta device has no values: BERT's token_type_ids, an integer table the
    embedding gathers with, could not run."""
    original = torch.nn.Module.register_parameter

    def register(module, name, param):
        original(module, name, param)
        if param is not None:
            p = module._parameters[name]
            module._parameters[name] = type(p)(p.to("meta"), requires_grad=p.requires_grad)
    torch.nn.Module.register_parameter = register
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = original


def parameters(model):
    """The names model.forward takes (through transformers' decorators)."""
    return inspect.signature(model.forward).parameters


def model_and_inputs(config):
    """The training model transformers builds for `config` (its first `architectures` entry, else
    the causal-LM / masked-LM / seq2seq / image-classification auto class that accepts it) and
    example inputs on the meta device with their dynamic axes."""
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None:
        for auto in (transformers.AutoModelForCausalLM, transformers.AutoModelForSeq2SeqLM,
                     transformers.AutoModelForMaskedLM,
                     transformers.AutoModelForImageClassification, transformers.AutoModel):
            if type(config) in auto._model_mapping:
                cls = auto
                break
    if cls is None:
        fail(1, "transformers has no model class for model_type '%s'" % config.model_type)
    with parameters_on_meta():
        model = (cls.from_config(config) if hasattr(cls, "from_config")
                 else cls._from_config(config))
    model.train()
    batch = torch.export.Dim("batch", min=1, max=1 << 20)
    if getattr(config, "is_encoder_decoder", False):
        seq = torch.export.Dim("seq", min=2, max=1 << 20)
        ids = torch.zeros(BATCH, SEQ, dtype=torch.long, device="meta")
        return model, {"input_ids": ids, "decoder_input_ids": ids.clone()}, {
            "input_ids": {0: batch, 1: seq}, "decoder_input_ids": {0: batch, 1: seq}}
    if "pixel_values" in parameters(model):
        size = getattr(config, "image_size", IMAGE)
        size = size if isinstance(size, int) else size[0]
        channels = getattr(config, "num_channels", 3)
        pixels = torch.zeros(BATCH, channels, size, size, device="meta")
        return model, {"pixel_values": pixels}, {"pixel_values": {0: batch}}
    seq = torch.export.Dim("seq", min=2, max=1 << 20)
    ids = torch.zeros(BATCH, SEQ, dtype=torch.long, device="meta")
    return model, {"input_ids": ids}, {"input_ids": {0: batch, 1: seq}}


def first_output(model, names):
    """The model itself, its forward returning the logits (or its first output), the tensor the
    loss reads. The forward is replaced on the instance rather than wrapped in a module, so the
    exported scopes and weight names are the model's own (model.layers.0.self_attn.q_proj, what
    PEFT's target_modules and gradient checkpointing name), not under a wrapper's attribute."""
    forward = model.forward
    use_cache = "use_cache" in parameters(model)

    def logits_forward(*inputs):
        kwargs = dict(zip(names, inputs))
        if use_cache:
            kwargs["use_cache"] = False
        out = forward(**kwargs)
        return out.logits if getattr(out, "logits", None) is not None else out[0]

    model.forward = logits_forward
    return model


# A buffer of more elements than this is written without its values, as the weights are (a
# model's own tables are far smaller; memplan keeps integer tables up to 2^20 elements).
KEPT_BUFFER_ELEMENTS = 1 << 20


def has_values(value):
    """Whether an initializer's tensor holds values: a CPU buffer of at most KEPT_BUFFER_ELEMENTS
    elements, not a parameter on the meta device."""
    tensor = getattr(value.const_value, "raw", None)
    return (isinstance(tensor, torch.Tensor) and tensor.device.type != "meta"
            and tensor.numel() <= KEPT_BUFFER_ELEMENTS)


def weightless(program):
    """The exported model with every initializer that has no values (the meta parameters) as
    external data of its exact byte length in a file that is never written."""
    import onnx_ir as ir
    initializers = [(name, value.shape, value.dtype)
                    for name, value in program.model.graph.initializers.items()
                    if not has_values(value)]
    for value in program.model.graph.initializers.values():
        if not has_values(value):
            value.const_value = None
    # The exporter's own optimizer (what optimize=True runs), now that no weight can be folded:
    # it turns SplitToSequence + SequenceAt into Split and folds the shape arithmetic, as the
    # exports memplan's modern-exporter suite checks are written.
    import onnxscript.optimizer
    onnxscript.optimizer.optimize_ir(program.model, onnx_shape_inference=False,
                                     input_size_limit=0, output_size_limit=0)
    proto = ir.serde.serialize_model(program.model)
    for name, shape, dtype in initializers:
        tensor = onnx.TensorProto()
        tensor.name = name
        tensor.data_type = int(dtype)
        dims = [int(d) for d in shape]
        tensor.dims.extend(dims)
        size = int(np.prod(dims, dtype=np.int64)) * \
            onnx.helper.tensor_dtype_to_np_dtype(int(dtype)).itemsize
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(size))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        proto.graph.initializer.append(tensor)
    return proto


# Exit codes of --hub-config, each with one line on stderr (analyzer/pipeline/hugging_face_hub.cc).
HUB_OFFLINE, HUB_NO_REPO, HUB_GATED = 4, 5, 6


def hub_config(repo, out):
    """Writes into `out` the local path of the config.json of Hugging Face repository `repo`
    (owner/name): from huggingface_hub's cache, else downloaded into it (that file only, never
    weights). HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE and HF_TOKEN mean what they mean to
    huggingface_hub."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError,
                                            LocalEntryNotFoundError, RepositoryNotFoundError)
    except ImportError as error:
        fail(3, "needs huggingface_hub (%s)" % error)
    try:
        path = hf_hub_download(repo, "config.json")
    except GatedRepoError:
        fail(HUB_GATED, "the Hugging Face repository '%s' is gated: accept its terms on "
             "huggingface.co, then log in (hf auth login, or HF_TOKEN)" % repo)
    except RepositoryNotFoundError:
        fail(HUB_NO_REPO, "no Hugging Face repository '%s' (or it is private: log in with hf "
             "auth login, or HF_TOKEN)" % repo)
    except LocalEntryNotFoundError:
        fail(HUB_OFFLINE, "the config of '%s' is not in the Hugging Face cache and the hub "
             "cannot be reached (%s)" % (repo, "HF_HUB_OFFLINE is set"
                                         if os.environ.get("HF_HUB_OFFLINE", "0") not in
                                         ("", "0", "false", "False") else "no network"))
    except EntryNotFoundError:
        fail(HUB_NO_REPO, "the Hugging Face repository '%s' has no config.json" % repo)
    except Exception as error:  # network errors arrive as several types
        fail(HUB_OFFLINE, "cannot reach the Hugging Face hub for '%s': %s"
             % (repo, str(error).splitlines()[0] if str(error) else type(error).__name__))
    with open(out, "w") as f:
        f.write(path)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--hub-config":
        hub_config(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) != 3:
        fail(1, "usage: hf_config_to_onnx.py CONFIG OUT.onnx | --hub-config OWNER/NAME OUT.txt")
    source, out = sys.argv[1], sys.argv[2]
    folder = source if os.path.isdir(source) else os.path.dirname(os.path.abspath(source))
    try:
        if os.path.isdir(source) or os.path.basename(source) == "config.json":
            config = transformers.AutoConfig.from_pretrained(folder)
        else:
            config = transformers.AutoConfig.from_pretrained(source)
    except Exception as error:  # transformers raises several types for a bad config
        fail(1, "transformers cannot read the config: %s" % error)
    model, inputs, dynamic = model_and_inputs(config)
    names = list(inputs)
    try:
        program = torch.onnx.export(first_output(model, names), tuple(inputs.values()),
                                    dynamo=True, opset_version=18, optimize=False,
                                    input_names=names,
                                    dynamic_shapes=(tuple(dynamic[n] for n in names),),
                                    external_data=False, verbose=False)
    except Exception as error:
        if os.environ.get("MEMPLAN_HF_DEBUG"): raise
        fail(1, "torch.onnx.export failed: %s" % str(error).splitlines()[0])
    onnx.save(weightless(program), out)


if __name__ == "__main__":
    main()
