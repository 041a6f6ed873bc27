#pragma once
/// \file
/// Umbrella header of the rewrite engine every search uses: rules and their files, the
/// matcher, the location index with its masks, the applier, the built-in and default
/// rules, the soundness harness and the region check. Rule synthesis (the generator, the
/// numeric rule check and the Z3 prover) is rlflow/synth.hpp.

#include <rlflow/rewrite/applier.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/rewrite/graph_index.hpp>
#include <rlflow/rewrite/location.hpp>
#include <rlflow/rewrite/location_index.hpp>
#include <rlflow/rewrite/matcher.hpp>
#include <rlflow/rewrite/region_check.hpp>
#include <rlflow/rewrite/rewriter.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/rewrite/rule_text.hpp>
#include <rlflow/rewrite/soundness.hpp>
