#pragma once
/// \file
/// The BERT-base encoder (Hugging Face `BertModel.encoder`) as PyTorch exports it, on
/// precomputed (batch, sequence, hidden) embeddings, so no embedding lookup is needed.
/// Per layer: Q, K and V as three MatMul + Add on the same input (the Q/K/V fusion
/// target); heads split by Reshape + Transpose (K straight to (N, heads, d, S)); scores
/// MatMul, Div by sqrt(d), Softmax, MatMul with V; heads merged; output projection,
/// residual Add, LayerNormalization; FFN with exact (Erf) GELU; residual Add,
/// LayerNormalization. There is no attention mask.

#include <rlflow/models/builder.hpp>

#include <cstdint>
#include <string>

namespace rlflow::models {

/// BERT encoder hyper-parameters (defaults: BERT-base with sequence length 128).
struct BertConfig {
    std::int64_t layers = 12;
    std::int64_t hidden = 768;
    std::int64_t heads = 12;
    std::int64_t sequence = 128;
    std::int64_t intermediate = 3072;
    /// BertConfig.layer_norm_eps.
    double layer_norm_epsilon = 1e-12;
};

/// One BertLayer on (N, S, hidden), named "encoder.layer.<index>.*" as Hugging Face does.
inline TensorRef bert_layer(Builder& b, const BertConfig& config, int index, TensorRef x) {
    const std::string p = "encoder.layer." + std::to_string(index);
    const AttentionNames names{p + ".attention.self", p + ".attention.self.query", p + ".attention.self.key",
                               p + ".attention.self.value", p + ".attention.output.dense"};
    const TensorRef attended = b.self_attention(names, x, config.heads);
    const TensorRef residual = b.add(p + ".attention.output.residual", attended, x);
    const TensorRef normed = b.layer_norm(p + ".attention.output.LayerNorm", residual, config.layer_norm_epsilon);
    const TensorRef hidden
        = b.gelu(p + ".intermediate.gelu", b.dense(p + ".intermediate.dense", normed, config.intermediate));
    const TensorRef projected = b.dense(p + ".output.dense", hidden, config.hidden);
    const TensorRef sum = b.add(p + ".output.residual", projected, normed);
    return b.layer_norm(p + ".output.LayerNorm", sum, config.layer_norm_epsilon);
}

/// The BERT encoder on input "embeddings" (batch, sequence, hidden), returning
/// "last_hidden_state" of the same shape.
[[nodiscard]] inline Graph bert(std::int64_t batch = 1, const BertConfig& config = {}) {
    Builder b;
    TensorRef x = b.input("embeddings", {batch, config.sequence, config.hidden});
    for (int layer = 0; layer < config.layers; ++layer) x = bert_layer(b, config, layer, x);
    b.output(x, "last_hidden_state");
    return std::move(b).finish();
}

}  // namespace rlflow::models
