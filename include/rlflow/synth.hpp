#pragma once
/// \file
/// Umbrella header of offline rule synthesis, which only `rlflow rules` uses: the
/// substitution generator (enumeration, exact evaluation and fingerprints, pairing,
/// pruning), the numeric rule check and the Z3 prover with its operator axioms. Built on
/// the rewrite engine (rlflow/rewrite.hpp); the engine never depends on it.

#include <rlflow/synth/axiom.hpp>
#include <rlflow/synth/builtin_axioms.hpp>
#include <rlflow/synth/exact.hpp>
#include <rlflow/synth/exact_value.hpp>
#include <rlflow/synth/generator.hpp>
#include <rlflow/synth/generator_config.hpp>
#include <rlflow/synth/generator_options.hpp>
#include <rlflow/synth/proof_result.hpp>
#include <rlflow/synth/prover.hpp>
#include <rlflow/synth/rule_check.hpp>
