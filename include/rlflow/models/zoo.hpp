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
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rlflow::models {

/// Options every zoo builder takes.
struct ZooOptions {
    /// The batch dimension of every graph input.
    std::int64_t batch = 1;
};

/// One zoo model: its name, a one-line description and its builder.
struct ZooEntry {
    std::string_view name;
    std::string_view description;
    Graph (*build)(const ZooOptions&);
};

/// Every zoo model, in a fixed order (the thesis's five, then TASO's and X-RLflow's four).
[[nodiscard]] inline std::span<const ZooEntry> zoo_entries() noexcept {
    static constexpr std::array<ZooEntry, 9> entries{{
        {"resnet18", "torchvision ResNet-18, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return resnet18(o.batch); }},
        {"resnet50", "torchvision ResNet-50, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return resnet50(o.batch); }},
        {"inception_v3", "torchvision Inception-v3 without aux logits, (N,3,299,299) -> (N,1000)",
         [](const ZooOptions& o) { return inception_v3(o.batch); }},
        {"squeezenet1_1", "torchvision SqueezeNet 1.1, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return squeezenet1_1(o.batch); }},
        {"bert", "BERT-base encoder, 12 layers, 12 heads, (N,128,768) -> (N,128,768)",
         [](const ZooOptions& o) { return bert(o.batch); }},
        {"resnext50", "torchvision ResNeXt-50 32x4d, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return resnext50(o.batch); }},
        {"nasnet_a", "TASO's NasNet-A: 3 stages of 5 normal + 1 reduction cell, (N,128,56,56) -> (N,5120,7,7)",
         [](const ZooOptions& o) { return nasnet_a(o.batch); }},
        {"nasrnn", "TASO's NasRNN: 5 unrolled steps, hidden 512, 5 x (N,512) -> (N,512)",
         [](const ZooOptions& o) { return nasrnn(o.batch); }},
        {"vit_base", "torchvision ViT-B/16, (N,3,224,224) -> (N,1000)",
         [](const ZooOptions& o) { return vit_base(o.batch); }},
    }};
    return entries;
}

/// Builds zoo model `name`. Throws precondition_error listing the valid names for an
/// unknown name, and for a batch below 1.
[[nodiscard]] inline Graph build_zoo_model(std::string_view name, const ZooOptions& options = {}) {
    RLFLOW_EXPECTS(
        options.batch >= 1, precondition_error,
        "zoo model '" + std::string(name) + "': batch must be at least 1, got " + std::to_string(options.batch));
    std::string valid;
    for (const ZooEntry& entry : zoo_entries()) {
        if (entry.name == name) return entry.build(options);
        valid += (valid.empty() ? "" : ", ") + std::string(entry.name);
    }
    throw precondition_error("unknown zoo model '" + std::string(name) + "'; valid names: " + valid);
}

}  // namespace rlflow::models
