#pragma once
/// \file
/// Umbrella header of ONNX import and export.

#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/opsets.hpp>
#include <rlflow/onnx/tensor_io.hpp>
#include <rlflow/onnx/weights.hpp>
