// The rule generator over the ranks mpiexec started: each rank enumerates its share of the
// first nodes, compares its share of the buckets and verifies its share of the rules, and
// every rank returns the single process's rules and report counts.

#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>
#include <rlflow/rewrite/rule_text.hpp>
#include <rlflow/synth/generator.hpp>

#include <string>
#include <vector>

using namespace rlflow;

TEST_CASE("rules generated on the ranks are the single process's, report counts included") {
    std::vector<std::string> ops = {"matmul", "add", "transpose", "concat1", "split1"};
    synth::GeneratorSpace space = synth::restrict_ops(synth::default_generator_space(), ops);
    std::erase_if(space.variables, [](const synth::GeneratorVariable& v) { return v.type.shape.rank() != 2; });
    synth::GeneratorOptions o;
    o.max_ops = 3;
    o.float_trials = 2;
    o.proof_timeout_ms = 500;
    MpiCommunicator mpi;
    const synth::GeneratedRules ranks = synth::generate_rules(space, o, AnyCommunicator(mpi));
    const synth::GeneratedRules one = synth::generate_rules(space, o);
    CHECK(rewrite::to_text(ranks.rules) == rewrite::to_text(one.rules));
    CHECK(rewrite::to_text(ranks.rejected) == rewrite::to_text(one.rejected));
    const synth::GeneratorReport& a = ranks.report;
    const synth::GeneratorReport& b = one.report;
    CHECK(a.states == b.states);
    CHECK(a.graphs == b.graphs);
    CHECK(a.redundant_states == b.redundant_states);
    CHECK(a.inexact == b.inexact);
    CHECK(a.classes == b.classes);
    CHECK(a.candidates == b.candidates);
    CHECK(a.proved + a.tested == b.proved + b.tested);
    CHECK(!ranks.rules.empty());
}
