#pragma once
/// \file
/// The prover's axioms assembled: the text of every axiom (detail/prover_axioms_*.hpp and
/// the constant axioms of detail/prover_constants.hpp), and the instances each is
/// validated on with its guard (synth/axiom.hpp).

#include <rlflow/core/op_kind.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/synth/axiom.hpp>
#include <rlflow/synth/detail/prover_axioms_elementwise.hpp>
#include <rlflow/synth/detail/prover_axioms_linear.hpp>
#include <rlflow/synth/detail/prover_axioms_model.hpp>
#include <rlflow/synth/detail/prover_axioms_movement.hpp>
#include <rlflow/synth/detail/prover_constants.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace rlflow::synth::detail {

/// The text of every axiom.
[[nodiscard]] inline std::string prover_axioms_text() {
    std::string text = "rlflow-rules 1\n";
    constexpr std::pair<std::string_view, Activation> activations[]
        = {{"Relu", Activation::Relu}, {"Sigmoid", Activation::Sigmoid}, {"Tanh", Activation::Tanh}};
    for (const auto& [op, code] : activations) {
        std::string name(op);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        for (const bool bias : {false, true})
            text += substitute(std::string(conv_activation_axiom),
                               {{"act", name}, {"op", op}, {"code", std::to_string(static_cast<std::int64_t>(code))},
                                {"suffix", bias ? "_bias" : ""}, {"bias", bias ? ", b" : ""}});
    }
    constexpr std::pair<std::string_view, std::string_view> pools[]
        = {{"MaxPool", ""}, {"AveragePool", " count_include_pad=$i"}};
    for (const auto& [op, extra] : pools)
        for (const std::string_view axis : {"0", "1"})
            text += substitute(std::string(pool_concat_axiom),
                               {{"pool", op == "MaxPool" ? "max_pool" : "average_pool"}, {"op", op}, {"axis", axis}, {"extra", extra}});
    constexpr std::array<std::string_view, 3> small_kernels[]
        = {{"1x1", "[1, 1]", "[0, 0, 0, 0]"}, {"1x3", "[1, 3]", "[0, 1, 0, 1]"}, {"3x1", "[3, 1]", "[1, 0, 1, 0]"}};
    for (const auto& [name, kernel, pads] : small_kernels)
        text += substitute(std::string(literal_enlarge_axiom), {{"name", name}, {"kernel", kernel}, {"pads", pads}});
    constexpr std::pair<std::string_view, std::string_view> reductions[]
        = {{"ReduceSum", "reduce_sum"}, {"ReduceMean", "reduce_mean"}, {"ReduceMax", "reduce_max"}};
    for (const auto& [op, name] : reductions) {
        if (op != "ReduceMax") text += substitute(std::string(linear_reduce_axioms), {{"op", op}, {"name", name}});
        text += substitute(std::string(reduce_concat_axiom), {{"op", op}, {"name", name}});
    }
    for (const auto& [op, name] : {std::pair<std::string_view, std::string_view>{"Add", "add"}, {"Mul", "mul"}})
        text += substitute(std::string(binary_movement_axioms), {{"op", op}, {"name", name}});
    for (const bool bias : {false, true})
        text += substitute(std::string(pointwise_conv_resize_axiom), {{"suffix", bias ? "_bias" : ""}, {"bias", bias ? ", b" : ""}});
    for (const std::string_view part : {elementwise_axioms, scalar_axioms, relu_axioms, conv_axioms, enlarge_axioms,
                                        matmul_axioms, movement_axioms, reduce_sum_matmul_axioms, reduce_sum_concat_axiom,
                                        movement_model_axioms})
        text += part;
    return text + constant_axioms_text();
}

// Instances the axioms are validated on: shapes and attribute values of the kinds real
// graphs hold (strides, pads, groups, batch dims, broadcasting), two or three each.
inline constexpr std::string_view conv_axiom_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view conv_bias_axiom_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) b=(8,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) b=(4,) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view max_pool_channel_instances = R"(
x=(1,2,5,5) y=(1,3,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0
x=(1,2,6,6) y=(1,1,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1)";
inline constexpr std::string_view max_pool_batch_instances = R"(
x=(1,2,5,5) y=(2,2,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0
x=(2,3,6,6) y=(1,3,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1)";
inline constexpr std::string_view average_pool_channel_instances = R"(
x=(1,2,5,5) y=(1,3,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0 $i=0
x=(1,2,6,6) y=(1,1,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1 $i=1)";
inline constexpr std::string_view average_pool_batch_instances = R"(
x=(1,2,5,5) y=(2,2,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0 $i=1
x=(2,3,6,6) y=(1,3,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1 $i=0)";
inline constexpr std::string_view ternary_elementwise_instances = "x=(2,3) y=(2,3) z=(2,3); x=(3,) y=(2,3) z=(2,1)";
inline constexpr std::string_view concat_pair_elementwise_instances
    = "x=(2,3) y=(4,3) z=(2,3) w=(4,3) $ax=0; x=(2,1,3) y=(2,2,3) z=(2,1,3) w=(2,2,3) $ax=1";
inline constexpr std::string_view conv_sum_instances = R"(
x=(1,4,6,6) y=(1,4,6,6) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) y=(2,4,7,7) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view conv_weight_sum_instances = R"(
x=(1,4,6,6) v=(8,4,3,3) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) v=(4,2,1,3) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view conv_channel_parts_instances = R"(
x=(1,2,5,5) y=(1,2,5,5) v=(3,2,3,3) w=(3,2,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1]
x=(2,3,6,6) y=(2,3,6,6) v=(4,3,1,3) w=(4,3,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[1,2])";
inline constexpr std::string_view conv_batch_concat_instances = R"(
x=(1,4,5,5) y=(2,4,5,5) w=(3,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1 $a=0
x=(1,4,6,6) y=(1,4,6,6) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[1,1] $g=2 $a=1)";
inline constexpr std::string_view conv_out_channel_instances = R"(
x=(1,4,6,6) v=(8,4,3,3) w=(6,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $a=0
x=(2,3,7,7) v=(2,3,1,3) w=(5,3,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $a=1)";
inline constexpr std::string_view conv_out_channel_bias_instances = R"(
x=(1,4,6,6) v=(8,4,3,3) w=(6,4,3,3) b1=(8,) b2=(6,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $a=0
x=(2,3,7,7) v=(2,3,1,3) w=(5,3,1,3) b1=(2,) b2=(5,) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $a=2)";
inline constexpr std::string_view conv_enlarge_instances = R"(
x=(1,4,6,6) w1=(8,4,1,1) w2=(6,4,3,3) $k1=[1,1] $p1=[0,0,0,0] $k=[3,3] $p=[1,1,1,1] $s=[1,1] $g=1 $a=0 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0
x=(2,4,7,7) w1=(4,2,1,3) w2=(6,4,3,5) $k1=[1,3] $p1=[0,1,0,1] $k=[3,5] $p=[1,2,1,2] $s=[2,2] $g=2 $a=1 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0)";
inline constexpr std::string_view conv_enlarge_bias_instances = R"(
x=(1,4,6,6) w1=(8,4,1,1) w2=(6,4,3,3) b1=(8,) b2=(6,) $k1=[1,1] $p1=[0,0,0,0] $k=[3,3] $p=[1,1,1,1] $s=[1,1] $g=1 $a=0 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0
x=(2,4,7,7) w1=(4,2,1,3) w2=(6,4,3,5) b1=(4,) b2=(6,) $k1=[1,3] $p1=[0,1,0,1] $k=[3,5] $p=[1,2,1,2] $s=[2,2] $g=2 $a=1 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0)";
inline constexpr std::string_view matmul_chain_instances = "x=(2,3) y=(3,4) z=(4,5); x=(4,4) y=(4,2) z=(2,3)";
inline constexpr std::string_view matmul_left_instances = "x=(2,3) y=(3,4) z=(3,4); x=(2,5,3) y=(3,1) z=(3,1); x=(3,) y=(3,2) z=(3,2)";
inline constexpr std::string_view matmul_right_instances = "x=(2,3) y=(2,3) z=(3,4); x=(2,5,3) y=(2,5,3) z=(3,1); x=(3,) y=(3,) z=(3,2)";
inline constexpr std::string_view matmul_column_instances = "x=(3,4) y=(4,5) z=(4,2); x=(2,3,4) y=(4,1) z=(4,3); x=(4,) y=(4,2) z=(4,3)";
inline constexpr std::string_view matmul_column_triple_instances
    = "x=(3,4) y=(4,5) z=(4,2) u=(4,1); x=(2,3,4) y=(4,1) z=(4,3) u=(4,2); x=(4,) y=(4,2) z=(4,3) u=(4,1)";

inline constexpr std::string_view reduce_pair_instances = "x=(2,3) y=(2,3) $a=[1] $k=1; x=(2,3,4) y=(2,3,4) $a=[0, 2] $k=0";
inline constexpr std::string_view reduce_scalar_instances = "x=(2,3) s=() $a=[1] $k=1; x=(2,3,4) s=() $a=[0, 2] $k=0";
inline constexpr std::string_view reduce_row_concat_instances = "x=(2,3) y=(4,3) $k=1; x=(1,2) y=(3,2) $k=0";
// Canonical Slice attributes (SliceOp): ends one past the last index read.
inline constexpr std::string_view slice_instances
    = "x=(4,6) $b=[0, 1] $e=[3, 6] $t=[2, 2]; x=(2,3,5,5) $b=[0, 0, 0, 0] $e=[2, 3, 5, 5] $t=[1, 1, 2, 2]";
inline constexpr std::string_view slice_pair_instances
    = "x=(4,6) y=(4,6) $b=[0, 1] $e=[3, 6] $t=[2, 2]; x=(2,3,5,5) y=(2,3,5,5) $b=[1, 0, 0, 0] $e=[2, 3, 5, 5] $t=[1, 1, 2, 2]";
inline constexpr std::string_view expand_pair_instances = "x=(4,) y=(4,) $s=[2, 4]; x=(3,1) y=(3,1) $s=[2, 1, 5]";
inline constexpr std::string_view resize_instances = R"(
x=(1,2,3,3) $c="asymmetric" $n="floor" $f=[1, 1, 2, 2] $o=[1, 2, 6, 6]
x=(2,1,2,4) $c="half_pixel" $n="round_prefer_floor" $f=[1, 1, 1.5, 0.5] $o=[2, 1, 3, 2])";
inline constexpr std::string_view resize_pair_instances = R"(
x=(1,2,3,3) y=(1,2,3,3) $c="asymmetric" $n="floor" $f=[1, 1, 2, 2] $o=[1, 2, 6, 6]
x=(2,1,2,4) y=(2,1,2,4) $c="half_pixel" $n="round_prefer_ceil" $f=[1, 1, 1.5, 0.5] $o=[2, 1, 3, 2])";
inline constexpr std::string_view resize_concat_instances = R"(
x=(1,2,3,3) y=(1,1,3,3) $c="asymmetric" $n="floor" $o=[1, 2, 6, 6] $w=[1, 1, 6, 6]
x=(2,1,2,4) y=(2,3,2,4) $c="half_pixel" $n="round_prefer_ceil" $o=[2, 1, 4, 8] $w=[2, 3, 4, 8])";
inline constexpr std::string_view pointwise_conv_resize_instances = R"(
x=(1,4,3,3) w=(6,4,1,1) $c="asymmetric" $n="floor" $o=[1, 4, 6, 6] $d=[1, 1] $g=1 $a=1
x=(2,4,2,3) w=(4,2,1,1) $c="half_pixel" $n="round_prefer_floor" $o=[2, 4, 4, 6] $d=[2, 1] $g=2 $a=0)";
inline constexpr std::string_view pointwise_conv_resize_bias_instances = R"(
x=(1,4,3,3) w=(6,4,1,1) b=(6,) $c="asymmetric" $n="floor" $o=[1, 4, 6, 6] $d=[1, 1] $g=1 $a=1
x=(2,4,2,3) w=(4,2,1,1) b=(4,) $c="half_pixel" $n="round_prefer_floor" $o=[2, 4, 4, 6] $d=[2, 1] $g=2 $a=2)";

/// Every axiom with its instances and guard; an axiom missing here is reported invalid.
inline constexpr AxiomSpec prover_axiom_specs[] = {
    {"conv_relu_fusion", conv_axiom_instances},
    {"conv_relu_fusion_bias", conv_bias_axiom_instances},
    {"conv_sigmoid_fusion", conv_axiom_instances},
    {"conv_sigmoid_fusion_bias", conv_bias_axiom_instances},
    {"conv_tanh_fusion", conv_axiom_instances},
    {"conv_tanh_fusion_bias", conv_bias_axiom_instances},
    {"max_pool_of_concat_axis0", max_pool_batch_instances},
    {"max_pool_of_concat_axis1", max_pool_channel_instances},
    {"average_pool_of_concat_axis0", average_pool_batch_instances},
    {"average_pool_of_concat_axis1", average_pool_channel_instances},
    {"add_commutative", "x=(2,3) y=(2,3); x=(3,) y=(2,3)"},
    {"add_associative", ternary_elementwise_instances},
    {"add_associative_reversed", ternary_elementwise_instances},
    {"mul_commutative", "x=(2,3) y=(2,3); x=(3,) y=(2,3)"},
    {"mul_associative", ternary_elementwise_instances},
    {"mul_associative_reversed", ternary_elementwise_instances},
    {"mul_distributes_over_add", ternary_elementwise_instances},
    {"mul_factors_out_of_add", ternary_elementwise_instances},
    {"mul_by_one", "x=(2,3); x=(4,)"},
    {"add_of_concats", concat_pair_elementwise_instances},
    {"mul_of_concats", concat_pair_elementwise_instances},
    {"scalar_mul_transpose", "x=(2,3) s=() $p=[1,0]; x=(2,3,4) s=() $p=[2,0,1]"},
    {"scalar_mul_matmul", "x=(2,3) y=(3,4) s=(); x=(2,2,3) y=(3,1) s=()"},
    {"scalar_mul_concat", "x=(2,3) y=(4,3) s=() $ax=0; x=(2,3) y=(2,1) s=() $ax=1"},
    {"scalar_mul_conv", R"(
x=(1,4,6,6) w=(8,4,3,3) s=() $k=[3,3] $st=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) s=() $k=[1,3] $st=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)"},
    {"scalar_mul_matmul_right", "x=(2,3) y=(3,4) s=(); x=(2,2,3) y=(3,1) s=(); x=(3,) y=(3,2) s=()"},
    {"scalar_mul_conv_weight", R"(
x=(1,4,6,6) w=(8,4,3,3) s=() $k=[3,3] $st=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) s=() $k=[1,3] $st=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)"},
    {"conv_enlarge_1x1", "x=(1,4,6,6) w=(8,4,1,1) $s=[1,1] $g=1 $a=0; x=(2,4,7,7) w=(4,2,1,1) $s=[2,2] $g=2 $a=1"},
    {"conv_enlarge_1x3", "x=(1,4,6,6) w=(8,4,1,3) $s=[1,1] $g=1 $a=0; x=(2,4,7,7) w=(4,2,1,3) $s=[2,1] $g=2 $a=3"},
    {"conv_enlarge_3x1", "x=(1,4,6,6) w=(8,4,3,1) $s=[1,1] $g=1 $a=0; x=(2,4,7,7) w=(4,2,3,1) $s=[1,2] $g=2 $a=2"},
    {"relu_of_concat", "x=(2,3) y=(4,3) $ax=0; x=(1,2,3) y=(1,4,3) $ax=1"},
    {"relu_of_transpose", "x=(2,3) $p=[1,0]; x=(2,3,4) $p=[1,2,0]"},
    {"split_of_relu", "x=(5,3) $ax=0 $sp=[2,3]; x=(2,6) $ax=1 $sp=[4,2]"},
    {"conv_of_input_sum", conv_sum_instances},
    {"conv_of_weight_sum", conv_weight_sum_instances},
    {"conv_sum_of_channel_parts", conv_channel_parts_instances},
    {"conv_of_batch_concat", conv_batch_concat_instances},
    {"channel_concat_of_convs", conv_out_channel_instances},
    {"conv_of_weight_concat", conv_out_channel_instances},
    {"channel_concat_of_convs_bias", conv_out_channel_bias_instances},
    {"conv_of_weight_concat_bias", conv_out_channel_bias_instances, AxiomGuard::source_and_inner_target},
    {"conv_enlarge", conv_enlarge_instances},
    {"conv_enlarge_bias", conv_enlarge_bias_instances},
    {"matmul_associative", matmul_chain_instances},
    {"matmul_associative_reversed", matmul_chain_instances},
    {"matmul_distributes_left", matmul_left_instances},
    {"matmul_factors_left", matmul_left_instances},
    {"matmul_distributes_right", matmul_right_instances},
    {"matmul_factors_right", matmul_right_instances},
    {"matmul_of_column_concat", matmul_column_instances},
    {"column_concat_of_matmuls", matmul_column_instances},
    {"matmul_of_column_concat_triple", matmul_column_triple_instances},
    {"column_concat_of_matmuls_triple", matmul_column_triple_instances},
    {"matmul_sum_of_blocks", "x=(2,3) y=(3,4) z=(2,5) w=(5,4); x=(1,2) y=(2,2) z=(1,1) w=(1,2)"},
    {"gemm_definition", "a=(3,4) b=(4,5) c=(5,); a=(2,3) b=(3,3) c=(2,3); a=(1,2) b=(2,4) c=()"},
    {"split_of_concat", "x=(2,3) y=(4,3) $ax=0; x=(2,3) y=(2,5) $ax=1"},
    {"split_of_concat_triple", "x=(2,3) y=(4,3) z=(1,3) $ax=0; x=(1,2,3) y=(1,1,3) z=(1,4,3) $ax=1"},
    {"concat_of_split", "y=(5,3) $ax=0 $sp=[2,3]; y=(2,3,4) $ax=2 $sp=[1,3]"},
    {"concat_of_split_triple", "y=(5,3) $ax=0 $sp=[2,1,2]; y=(2,6,4) $ax=1 $sp=[1,3,2]"},
    {"concat_grid_interchange", "a=(2,3) b=(2,1) c=(2,3) d=(2,1); a=(1,2,2) b=(1,1,2) c=(1,2,2) d=(1,1,2)"},
    {"transpose_pair_cancel", "x=(2,3,4) $p=[1,2,0] $q=[2,0,1]; x=(3,4) $p=[1,0] $q=[1,0]"},
    {"transpose_pair_compose", "x=(2,3,4) $p=[1,2,0] $q=[1,2,0]; x=(3,4) $p=[1,0] $q=[1,0]"},
    {"transpose_of_matmul", "x=(2,3) y=(3,4); x=(1,1) y=(1,5)"},
    {"transpose_of_row_concat", "x=(2,3) y=(4,3); x=(1,1) y=(2,1)"},
    {"transpose_of_column_concat", "x=(2,3) y=(2,4); x=(1,1) y=(1,2)"},
    {"transpose_of_add", "x=(2,3) y=(2,3) $p=[1,0]; x=(2,3,4) y=(2,3,4) $p=[2,0,1]"},
    {"transpose_of_mul", "x=(2,3) y=(2,3) $p=[1,0]; x=(2,3,4) y=(2,3,4) $p=[2,0,1]"},
    {"identity_elimination", "x=(2,3); x=()"},
    {"noop_reshape", "x=(2,3) $s=[2,3]; x=(4,) $s=[4]"},
    {"conv_identity_kernel_1x1", constant_conv_instances},
    {"conv_identity_kernel_3x3", constant_conv_instances},
    {"conv_identity_kernel_3x3_depthwise", constant_conv_instances},
    {"conv_average_pool_kernel", constant_conv_instances},
    {"matmul_identity_right", matmul_identity_right_instances},
    {"add_of_single_channel_identity_conv", single_channel_identity_instances},
    {"matmul_identity_left", matmul_identity_left_instances},
    {"matmul_identity_left_vector", matmul_identity_left_vector_instances},
    {"mul_by_ones", mul_by_ones_instances},
    {"reduce_sum_of_add", reduce_pair_instances},
    {"add_of_reduce_sums", reduce_pair_instances},
    {"reduce_sum_of_scalar_mul", reduce_scalar_instances},
    {"reduce_mean_of_add", reduce_pair_instances},
    {"add_of_reduce_means", reduce_pair_instances},
    {"reduce_mean_of_scalar_mul", reduce_scalar_instances},
    {"reduce_sum_of_row_concat", reduce_row_concat_instances},
    {"reduce_mean_of_row_concat", reduce_row_concat_instances},
    {"reduce_max_of_row_concat", reduce_row_concat_instances},
    {"reduce_sum_of_matmul_columns", "x=(2,3) y=(3,4); x=(1,5) y=(5,2)"},
    {"reduce_sum_of_matmul_rows", "x=(2,3) y=(3,4); x=(1,5) y=(5,2)"},
    {"reduce_sum_of_column_concat", "x=(2,3) y=(2,4); x=(3,1) y=(3,2)"},
    {"relu_of_slice", slice_instances},
    {"slice_of_add", slice_pair_instances},
    {"slice_of_mul", slice_pair_instances},
    {"slice_of_scalar_mul",
     "x=(4,6) s=() $b=[0, 1] $e=[3, 6] $t=[2, 2]; x=(2,3,5,5) s=() $b=[0, 0, 0, 0] $e=[2, 3, 5, 5] $t=[1, 1, 2, 2]"},
    {"relu_of_expand", "x=(4,) $s=[2, 4]; x=(3,1) $s=[2, 3, 4]"},
    {"add_of_expands", expand_pair_instances},
    {"mul_of_expands", expand_pair_instances},
    {"relu_of_nearest_resize", resize_instances},
    {"add_of_nearest_resizes", resize_pair_instances},
    {"channel_concat_of_nearest_resizes", resize_concat_instances},
    {"pointwise_conv_of_upsample", pointwise_conv_resize_instances},
    {"pointwise_conv_of_upsample_bias", pointwise_conv_resize_bias_instances},
};

/// The spec of the axiom called `name`, if any.
[[nodiscard]] inline const AxiomSpec* find_axiom_spec(std::string_view name) noexcept {
    for (const AxiomSpec& spec : prover_axiom_specs)
        if (spec.name == name) return &spec;
    return nullptr;
}

}  // namespace rlflow::synth::detail
