#!/usr/bin/python3
"""Export real PyTorch / torchvision models to ONNX for rlflow's tests and benchmarks.

Run it with Debian's interpreter, which has python3-torch, python3-torchvision and
python3-onnx (a pyenv or venv `python3` on PATH usually lacks torch):

    /usr/bin/python3 tools/export_models.py --out tests/data
    /usr/bin/python3 tools/export_models.py --out build/models --with-params
    /usr/bin/python3 tools/export_models.py --models resnet18 transformer --opsets 17

Nothing is downloaded: every model has seeded random weights (weights=None).

Models: resnet18, resnet50, squeezenet1_1, inception_v3 (aux_logits off, 299x299),
resnext50_32x4d (224x224) and `transformer`, a 12-layer torch.nn.TransformerEncoder
(d_model 768, 12 heads, feed-forward 3072, sequence 128, batch_first, every layer
with its own random weights). Batch size is 1 and every shape is static.

Calibration models, exported only when named with --models (they are not in
tests/data; tools/rank_correlation.py exports them into the build folder): the
depthwise-convolution CNNs mobilenet_v2, shufflenet_v2_x1_0 (channel shuffles: Reshape,
Transpose, Split) and efficientnet_b0 (SiLU, squeeze-and-excitation), 224x224. Together
with the models above they cover plain, grouped and depthwise convolutions and a
transformer, what the analytic cpu preset is calibrated on. vit_b_16 (a vision
transformer) and regnet_y_400mf (grouped convolutions, squeeze-and-excitation) are
further models nobody tuned rlflow for, on which tools/ort_speedups.py checks the guard.

In every file the data input is named `input` and the output `output`. By default
(`export_params=False`) the parameters are not stored: they become further graph
inputs, which keeps the files small (10-220 KB) and fit to commit; any graph input
other than `input` is a parameter. `--with-params` writes full models, for runs in
ONNX Runtime. Files are named `{model}_op{opset}.onnx`, e.g. resnet18_op13.onnx.

Every file is checked with onnx.checker.check_model(full_check=True).
"""
import argparse
import os
import sys
import tempfile

MODELS = ["resnet18", "resnet50", "squeezenet1_1", "inception_v3", "resnext50_32x4d", "transformer"]
# Exported only on request (--models): not committed to tests/data.
CALIBRATION_MODELS = ["mobilenet_v2", "shufflenet_v2_x1_0", "efficientnet_b0", "vit_b_16", "regnet_y_400mf"]
# Held out: exports no test and no preset was tuned on, on which docs/targets.md measures
# what the default `rlflow optimize` writes (grouped, depthwise, dense, transformer and
# shuffle designs). Any other torchvision classification model may be named too.
# Models whose exports compute shapes at run time (windowed attention, a mask from the
# input's length) and use the ops of modern exports: tools/real_models.py checks that rlflow
# folds and understands them.
MODERN_MODELS = ["swin_t", "mobilenet_v3_large", "masked_transformer", "padded_transformer"]
UNSEEN_MODELS = ["regnet_x_400mf", "regnet_y_800mf", "mobilenet_v3_large", "mnasnet1_0", "densenet121", "googlenet",
                 "squeezenet1_0", "shufflenet_v2_x0_5", "swin_t", "resnext101_32x8d", "wide_resnet50_2", "efficientnet_b1"]
OPSETS = [13, 17]

# Transformer encoder shape (BERT-base sized).
D_MODEL, NHEAD, DIM_FF, NUM_LAYERS, SEQ_LEN = 768, 12, 3072, 12, 128


# The masked encoder: a causal mask computed in forward from the input's length.
MASKED_D_MODEL, MASKED_NHEAD, MASKED_LAYERS, MASKED_SEQ_LEN = 256, 4, 4, 64


def randomize_layers(torch, layers):
    """TransformerEncoder deep-copies its layer, so all layers start with identical weights.
    Gives every layer its own random values: matrices get Xavier-uniform (as
    nn.MultiheadAttention does), vectors small random values (not zeros and ones, so biases
    and LayerNorm affine parameters are exercised too)."""
    with torch.no_grad():
        for lyr in layers:
            for pname, p in lyr.named_parameters():
                if p.dim() > 1:
                    torch.nn.init.xavier_uniform_(p)
                elif "norm" in pname and pname.endswith("weight"):
                    p.uniform_(0.8, 1.2)
                else:
                    p.uniform_(-0.05, 0.05)


def masked_layers(torch):
    """The layers of the masked encoders, each with its own random weights."""
    layer = torch.nn.TransformerEncoderLayer(d_model=MASKED_D_MODEL, nhead=MASKED_NHEAD,
                                             dim_feedforward=4 * MASKED_D_MODEL, dropout=0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=MASKED_LAYERS, enable_nested_tensor=False)
    randomize_layers(torch, encoder.layers)
    return encoder


def MaskedEncoder(torch):
    """A torch.nn.TransformerEncoder whose causal attention mask is built from the input's
    shape on every call (Shape, Range, comparisons and Where in the export), as a decoder-only
    model does."""

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = masked_layers(torch)

        def forward(self, x):
            length = x.size(1)
            position = torch.arange(length, device=x.device)
            future = position.unsqueeze(0) > position.unsqueeze(1)
            mask = torch.zeros(length, length, device=x.device).masked_fill(future, float("-inf"))
            return self.encoder(x, mask=mask)

    return Encoder()


# The padded encoder: token ids in, a padding mask computed from them.
PADDED_VOCAB = 1000


def PaddedEncoder(torch):
    """An encoder over int64 token ids, as a text model's export runs on data: an embedding
    lookup (Gather on the ids), a padding mask where an id is 0 (Equal on the ids), cast to
    an additive mask over the heads (Cast, Where), then the masked encoder's layers. The
    mask is computed from the input's values, so nothing about it folds."""

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(PADDED_VOCAB, MASKED_D_MODEL)
            self.encoder = masked_layers(torch)

        def forward(self, ids):
            padding = ids == 0
            additive = torch.zeros(ids.shape, device=ids.device).masked_fill(padding, float("-inf"))
            heads = additive[:, None, None, :].expand(-1, MASKED_NHEAD, ids.size(1), -1)
            mask = heads.reshape(-1, ids.size(1), ids.size(1))
            return self.encoder(self.embedding(ids), mask=mask)

    return Encoder()


def count_flops(model, example):
    """FLOPs of one forward pass, counted without rlflow: PyTorch's profiler (convolutions
    and matrix products at two per multiply-add, elementwise products and sums at one per
    element), plus what the profiler leaves out, at one per element as rlflow counts it:
    each output element of an activation module (ReLU, HardSwish, HardSigmoid, GELU, ...)
    and each input element of an adaptive average pool. Activations called as functions
    rather than modules (torch.nn.functional.relu) are not seen by the hooks."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activations = (torch.nn.ReLU, torch.nn.ReLU6, torch.nn.Hardswish, torch.nn.Hardsigmoid, torch.nn.Sigmoid,
                   torch.nn.Tanh, torch.nn.SiLU, torch.nn.GELU, torch.nn.LeakyReLU)
    unprofiled = [0]

    def on_activation(module, inputs, output):
        unprofiled[0] += output.numel()

    def on_pool(module, inputs, output):
        unprofiled[0] += inputs[0].numel()

    hooks = []
    for module in model.modules():
        if isinstance(module, activations):
            hooks.append(module.register_forward_hook(on_activation))
        elif isinstance(module, torch.nn.AdaptiveAvgPool2d):
            hooks.append(module.register_forward_hook(on_pool))
    try:
        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], with_flops=True) as p:
            model(example)
    finally:
        for h in hooks:
            h.remove()
    return sum(e.flops for e in p.key_averages()) + unprofiled[0]


def build(name, seed):
    """Returns (model in eval mode, example input) with seeded random weights."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    if name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(
            d_model=D_MODEL, nhead=NHEAD, dim_feedforward=DIM_FF, dropout=0.1, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=NUM_LAYERS, enable_nested_tensor=False)
        randomize_layers(torch, model.layers)
        example = torch.randn(1, SEQ_LEN, D_MODEL)
    elif name == "masked_transformer":
        model = MaskedEncoder(torch)
        example = torch.randn(1, MASKED_SEQ_LEN, MASKED_D_MODEL)
    elif name == "padded_transformer":
        model = PaddedEncoder(torch)
        example = torch.randint(1, PADDED_VOCAB, (1, MASKED_SEQ_LEN))
        example[0, -MASKED_SEQ_LEN // 4:] = 0  # a padded tail
    elif name == "inception_v3":
        model = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
        example = torch.randn(1, 3, 299, 299)
    elif name == "googlenet":
        model = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False)
        example = torch.randn(1, 3, 224, 224)
    elif callable(getattr(torchvision.models, name, None)) and name[0].islower():
        model = getattr(torchvision.models, name)(weights=None)
        example = torch.randn(1, 3, 224, 224)
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS + CALIBRATION_MODELS + MODERN_MODELS)} "
                         "or any torchvision classification model")

    # torchvision initialises biases to zero and BatchNorm to the identity. Make them
    # random, so that the exported graph is not trivially an identity normalisation and
    # the exporter does not merge equal parameters (it deduplicates equal tensors, e.g.
    # squeezenet's zero biases, into one input plus Identity nodes).
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
            elif isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) and m.bias is not None \
                    and name not in ("transformer", "masked_transformer", "padded_transformer"):
                m.bias.uniform_(-0.05, 0.05)
    model.eval()
    return model, example


def export(model, example, path, opset, with_params):
    import torch
    import onnx

    # Autograd stays enabled (no torch.no_grad / inference_mode): PyTorch 1.13 then skips
    # the fused transformer fast path, which has no ONNX export.
    assert torch.is_grad_enabled()
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=directory)
    os.close(fd)
    try:
        torch.onnx.export(
            model, (example,), tmp,
            export_params=with_params,
            opset_version=opset,
            do_constant_folding=True,
            input_names=["input"],
            output_names=["output"],
        )
        m = onnx.load(tmp)
        onnx.checker.check_model(m, full_check=True)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return m


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data", help="output folder (default: tests/data)")
    ap.add_argument("--opsets", type=int, nargs="+", default=OPSETS, help="opset versions (default: 13 17)")
    ap.add_argument("--models", nargs="+", default=MODELS, metavar="MODEL",
                    help="models to export (default: " + ", ".join(MODELS) + "); also: "
                    + ", ".join(CALIBRATION_MODELS) + ", masked_transformer; held out: " + ", ".join(UNSEEN_MODELS)
                    + "; or any torchvision classification model")
    ap.add_argument("--unseen", action="store_true", help="export the held-out models (UNSEEN_MODELS)")
    ap.add_argument("--with-params", action="store_true",
                    help="store the weights in the file (default: weights become graph inputs)")
    ap.add_argument("--seed", type=int, default=0, help="random seed for weights (default: 0)")
    ap.add_argument("--flops", action="store_true",
                    help="also count each model's FLOPs with PyTorch's profiler and print them")
    args = ap.parse_args(argv)

    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        sys.exit(f"export_models.py: {e}; run it with Debian's /usr/bin/python3 "
                 "(apt-get install python3-torch python3-torchvision python3-onnx)")

    os.makedirs(args.out, exist_ok=True)
    for name in (UNSEEN_MODELS if args.unseen else args.models):
        model, example = build(name, args.seed)
        for opset in args.opsets:
            path = os.path.join(args.out, f"{name}_op{opset}.onnx")
            m = export(model, example, path, opset, args.with_params)
            inputs = [i.name for i in m.graph.input]
            print(f"{path}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, "
                  f"{len(inputs)} inputs ({len(inputs) - 1} parameters), "
                  f"{len(m.graph.initializer)} initializers"
                  + (f", {count_flops(model, example)} FLOPs (PyTorch profiler)" if args.flops else ""), flush=True)


if __name__ == "__main__":
    main()
