#pragma once
/// \file
/// Rule synthesis is written in the rewrite engine's names: rules, patterns, the matcher and
/// the applier, and, in its private code, the engine's own rule evaluator and text writer.
/// So rlflow::synth sees rlflow::rewrite, and rlflow::synth::detail sees
/// rlflow::rewrite::detail. Only this way round: rewrite/ never includes synth/
/// (docs/architecture.md, tests/layout/include_rules.test.cpp).
///
/// A name that synth overloads (to_text for a rule instance; constant_value, evaluate and
/// substitute for the generator's graphs) is also declared here, so that both overload
/// sets are found together, as they were when synth's code lived in rewrite's namespaces.

#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/detail/evaluate.hpp>
#include <rlflow/rewrite/detail/target.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_text.hpp>

namespace rlflow::synth {

using namespace ::rlflow::rewrite;
using ::rlflow::rewrite::to_text;

namespace detail {

using namespace ::rlflow::rewrite::detail;
using ::rlflow::rewrite::detail::constant_value;
using ::rlflow::rewrite::detail::evaluate;
using ::rlflow::rewrite::detail::substitute;

}  // namespace detail

}  // namespace rlflow::synth
