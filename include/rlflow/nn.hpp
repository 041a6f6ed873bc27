#pragma once
/// \file
/// The nn area on the CPU: tensors over a backend, the tape and its ops, layers, the
/// graph-nets blocks, LSTM, MDN head, masked categorical, Adam and checkpoints, with the
/// Eigen backend. The cuBLAS backend is reached only through `rlflow/nn/backend/cublas.hpp`.

#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/nn/distributions.hpp>
#include <rlflow/nn/functions.hpp>
#include <rlflow/nn/graph_features.hpp>
#include <rlflow/nn/graph_net.hpp>
#include <rlflow/nn/inference.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/lstm.hpp>
#include <rlflow/nn/mdn.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/nn/tensor.hpp>
#include <rlflow/nn/tensor_backend.hpp>
