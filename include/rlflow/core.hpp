#pragma once
/// \file
/// Umbrella header of the graph IR.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/dtype.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/core/node.hpp>
#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/core/structure_hash.hpp>
#include <rlflow/core/tensor.hpp>
