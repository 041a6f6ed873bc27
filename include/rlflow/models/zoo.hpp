#pragma once
/// \file
/// The model zoo: every built-in evaluation graph by name, so that `zoo:NAME` works
/// anywhere a model is expected, without files.

#include <rlflow/core/error.hpp>
#include <rlflow/models/bert.hpp>
#include <rlflow/models/inception.hpp>
#include <rlflow/models/nasnet.hpp>
#include <rlflow/models/nasrnn.hpp>
#include <rlflow/models/resnet.hpp>
#include <rlflow/models/squeezenet.hpp>
#include <rlflow/models/vit.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace rlflow::models {

/// Options every zoo builder takes.
struct ZooOptions {
    /// The batch dimension of every graph input.
    std::int64_t batch = 1;
    /// How many of the model's repeated unit it has (ZooEntry::depth_unit: layers, cells,
    /// steps, blocks); 0 for the model's own. Builds the scale family: graphs of 1,000 to
    /// 100,000 nodes from one builder, without files (`zoo:NAME:DEPTH`).
    std::int64_t depth = 0;
};

/// One zoo model: its name, a one-line description, its builder, and what a depth counts
/// (empty: it has no depth setting).
struct ZooEntry {
    std::string_view name;
    std::string_view description;
    Graph (*build)(const ZooOptions&);
    std::string_view depth_unit = {};
};

namespace detail {

/// `depth`, or `fallback` for 0; as an int (depths stay far below its range).
[[nodiscard]] inline int depth_or(std::int64_t depth, int fallback) {
    return depth > 0 ? static_cast<int>(depth) : fallback;
}

/// A small transformer encoder (BERT's layer at width 64, 4 heads, sequence 32): what a
/// deep stack of layers looks like without BERT-base's 7 million weights per layer.
inline constexpr BertConfig small_encoder{.layers = 12, .hidden = 64, .heads = 4, .sequence = 32, .intermediate = 256};

/// The deepest zoo model: about 100,000 nodes at ~53 a layer leaves room for twice that.
inline constexpr std::int64_t max_zoo_depth = 4096;

}  // namespace detail

/// Every zoo model, in a fixed order (the thesis's five, then TASO's and X-RLflow's four,
/// then the scale family's small encoder).
[[nodiscard]] inline std::span<const ZooEntry> zoo_entries() noexcept {
    static constexpr std::array<ZooEntry, 10> entries{{
        {"resnet18", "torchvision ResNet-18, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return resnet18(o.batch); }},
        {"resnet50", "torchvision ResNet-50, (N,3,224,224) -> (N,1000); :DEPTH blocks in stage 3 (6; 23 is ResNet-101)",
         [](const ZooOptions& o) { return resnet({.blocks = {3, 4, detail::depth_or(o.depth, 6), 3}}, o.batch); },
         "blocks in stage 3"},
        {"inception_v3", "torchvision Inception-v3 without aux logits, (N,3,299,299) -> (N,1000)",
         [](const ZooOptions& o) { return inception_v3(o.batch); }},
        {"squeezenet1_1", "torchvision SqueezeNet 1.1, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return squeezenet1_1(o.batch); }},
        {"bert", "BERT-base encoder, 12 layers, 12 heads, (N,128,768) -> (N,128,768); :DEPTH layers",
         [](const ZooOptions& o) { return bert(o.batch, {.layers = detail::depth_or(o.depth, 12)}); }, "layers"},
        {"resnext50", "torchvision ResNeXt-50 32x4d, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return resnext50(o.batch); }},
        {"nasnet_a", "TASO's NasNet-A: 3 stages of 5 normal + 1 reduction cell, (N,128,56,56) -> (N,5120,7,7); :DEPTH normal cells a stage",
         [](const ZooOptions& o) { return nasnet_a(o.batch, {.normal_cells = detail::depth_or(o.depth, 5)}); },
         "normal cells a stage"},
        {"nasrnn", "TASO's NasRNN: 5 unrolled steps, hidden 512, 5 x (N,512) -> (N,512); :DEPTH steps",
         [](const ZooOptions& o) { return nasrnn(o.batch, {.steps = detail::depth_or(o.depth, 5)}); }, "steps"},
        {"vit_base", "torchvision ViT-B/16, (N,3,224,224) -> (N,1000); :DEPTH layers",
         [](const ZooOptions& o) { return vit_base(o.batch, {.layers = detail::depth_or(o.depth, 12)}); }, "layers"},
        {"encoder_small", "a small transformer encoder (BERT's layer, width 64, 4 heads), 12 layers, (N,32,64) -> (N,32,64); "
                          ":DEPTH layers (about 53 nodes each: :1900 is 100,000 nodes)",
         [](const ZooOptions& o) {
             BertConfig config = detail::small_encoder;
             config.layers = detail::depth_or(o.depth, 12);
             return bert(o.batch, config);
         },
         "layers"},
    }};
    return entries;
}

/// `NAME` or `NAME:DEPTH` split; throws precondition_error for a depth that is not a whole
/// number in [1, max_zoo_depth].
[[nodiscard]] inline std::pair<std::string_view, std::int64_t> split_zoo_name(std::string_view spec) {
    const auto colon = spec.find(':');
    if (colon == std::string_view::npos) return {spec, 0};
    const std::string_view name = spec.substr(0, colon), digits = spec.substr(colon + 1);
    std::int64_t depth = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), depth);
    RLFLOW_EXPECTS(ec == std::errc{} && end == digits.data() + digits.size() && depth >= 1 && depth <= detail::max_zoo_depth,
                   precondition_error,
                   "zoo model '" + std::string(spec) + "': the depth after ':' must be a whole number from 1 to "
                       + std::to_string(detail::max_zoo_depth));
    return {name, depth};
}

/// Builds zoo model `name` (`NAME` or `NAME:DEPTH`; a depth overrides options.depth).
/// Throws precondition_error listing the valid names for an unknown name, for a batch
/// below 1, and for a depth given to a model that has no depth setting.
[[nodiscard]] inline Graph build_zoo_model(std::string_view name, const ZooOptions& options = {}) {
    RLFLOW_EXPECTS(
        options.batch >= 1, precondition_error,
        "zoo model '" + std::string(name) + "': batch must be at least 1, got " + std::to_string(options.batch));
    const auto [base, depth] = split_zoo_name(name);
    ZooOptions chosen = options;
    if (depth > 0) chosen.depth = depth;
    std::string valid;
    for (const ZooEntry& entry : zoo_entries()) {
        if (entry.name == base) {
            RLFLOW_EXPECTS(chosen.depth == 0 || !entry.depth_unit.empty(), precondition_error,
                           "zoo model '" + std::string(base) + "' has no depth setting; models with one: bert, "
                               "encoder_small, nasnet_a, nasrnn, resnet50, vit_base");
            return entry.build(chosen);
        }
        valid += (valid.empty() ? "" : ", ") + std::string(entry.name);
    }
    throw precondition_error("unknown zoo model '" + std::string(base) + "'; valid names: " + valid);
}

}  // namespace rlflow::models
