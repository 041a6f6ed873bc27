#pragma once
/// \file
/// torchvision's ViT-B/16 (`vit_b_16`) on 224x224 images: a 16x16/16 patch convolution to
/// 196 tokens of width 768, a class token, learned position embeddings, 12 pre-norm
/// encoder layers (12 heads, MLP 3072 with exact GELU), a final LayerNorm, and a linear
/// head on the class token; 86,567,656 parameters.
///
/// Export-shaped choices where rlflow's core ops differ from torchvision's graph:
/// - torchvision packs Q, K and V into one `in_proj_weight` (2304, 768); here they are
///   three (768, 768) projections of the same input (q_proj, k_proj, v_proj), the form
///   the Q/K/V fusion rewrite targets. The parameter count is the same.
/// - `class_token.expand(N, -1, -1)` is a Mul by a (N, 1, 1) Constant of ones (broadcast
///   instead of Expand), present at every batch size so the structure does not depend on
///   the batch.
/// - `x[:, 0]` is a Split on axis 1 into [1, 196] and a Reshape to (N, 768).

#include <rlflow/models/builder.hpp>

#include <cstdint>
#include <string>

namespace rlflow::models {

/// ViT hyper-parameters (defaults: ViT-Base/16 on 224x224 images).
struct VitConfig {
    std::int64_t image_size = imagenet_resolution;
    std::int64_t patch = 16;
    std::int64_t layers = 12;
    std::int64_t hidden = 768;
    std::int64_t heads = 12;
    std::int64_t mlp = 3072;
    /// torchvision's LayerNorm epsilon for ViT.
    double layer_norm_epsilon = 1e-6;
};

/// One pre-norm EncoderBlock on (N, T, hidden): x + attn(ln_1(x)), then y + mlp(ln_2(y)).
inline TensorRef vit_encoder_layer(Builder& b, const VitConfig& config, int index, TensorRef x) {
    const std::string p = "encoder.layers.encoder_layer_" + std::to_string(index);
    const std::string attention = p + ".self_attention";
    const AttentionNames names{attention, attention + ".q_proj", attention + ".k_proj", attention + ".v_proj",
                               attention + ".out_proj"};
    const TensorRef attended
        = b.self_attention(names, b.layer_norm(p + ".ln_1", x, config.layer_norm_epsilon), config.heads);
    const TensorRef y = b.add(p + ".residual_1", attended, x);
    TensorRef h = b.dense(p + ".mlp.0", b.layer_norm(p + ".ln_2", y, config.layer_norm_epsilon), config.mlp);
    h = b.dense(p + ".mlp.3", b.gelu(p + ".mlp.1", h), config.hidden);
    return b.add(p + ".residual_2", y, h);
}

/// (N, 3, H, W) image -> (N, 1 + patches, hidden) tokens: patch conv, tokens, class
/// token, position embedding.
inline TensorRef vit_embed(Builder& b, const VitConfig& config, TensorRef image) {
    const std::int64_t batch = b.shape(image)[0];
    const std::int64_t side = config.image_size / config.patch;
    const TensorRef patches
        = b.conv("conv_proj", image,
                 {.out_channels = config.hidden, .window = Window::square(config.patch, config.patch), .bias = true});
    const TensorRef flat = b.reshape("conv_proj.reshape", patches, {batch, config.hidden, side * side});
    const TensorRef tokens = b.transpose("conv_proj.permute", flat, {0, 2, 1});
    const TensorRef ones = b.constant("class_token.expand.ones", {batch, 1, 1}, 1.0f);
    const TensorRef class_token = b.mul("class_token.expand", b.weight("class_token", {1, 1, config.hidden}), ones);
    const TensorRef sequence = b.concat("class_token.concat", {class_token, tokens}, 1);
    const TensorRef position = b.weight("encoder.pos_embedding", {1, side * side + 1, config.hidden});
    return b.add("encoder.pos_embedding.add", sequence, position);
}

/// ViT on input "input" (batch, 3, 224, 224), returning (batch, 1000) "logits".
[[nodiscard]] inline Graph vit_base(std::int64_t batch = 1, const VitConfig& config = {}) {
    Builder b;
    TensorRef x = vit_embed(b, config, b.input("input", {batch, rgb_channels, config.image_size, config.image_size}));
    for (int layer = 0; layer < config.layers; ++layer) x = vit_encoder_layer(b, config, layer, x);
    x = b.layer_norm("encoder.ln", x, config.layer_norm_epsilon);
    const std::int64_t patches = b.shape(x)[1] - 1;
    const TensorRef first = b.op(OpKind::Split, "class_token.select", {x},
                                 {{"axis", std::int64_t{1}}, {"split", std::vector<std::int64_t>{1, patches}}});
    const TensorRef token = b.reshape("class_token.squeeze", first, {batch, config.hidden});
    b.output(b.linear("heads.head", token, imagenet_classes), "logits");
    return std::move(b).finish();
}

}  // namespace rlflow::models
