// Shows the rewrite engine as an RL environment uses it: BERT's masks over the built-in
// rules, one action (the Q/K/V MatMul merge) applied in place, the masks updated
// incrementally, the result checked against the original, and the step undone.

#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>

#include <cstdio>
#include <memory>

int main() {
    using namespace rlflow;
    auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    Graph bert = models::build_zoo_model("bert");
    exec::fill_random_weights(bert, /*seed=*/1);
    rewrite::Rewriter env(bert, rules);

    const auto xfers = env.index().xfer_mask();
    std::printf("%zu rules (+ NO-OP); offered now:\n", rules->size());
    for (std::size_t r = 0; r < rules->size(); ++r)
        if (xfers[r]) std::printf("  %-32s %zu locations\n", (*rules)[r].name.c_str(), env.index().locations(r).size());

    const std::uint32_t qkv = rules->at("merge_matmul_triple").id;
    EditJournal undo = env.apply(qkv, /*location=*/0);
    std::printf("after merging one Q/K/V triple: %zu triples left, %zu nodes\n", env.index().locations(qkv).size(),
                env.graph().num_nodes());

    const auto report = rewrite::check_equivalence(bert, env.graph());
    std::printf("same function: %s (max |diff| %.2e)\n", report.equal ? "yes" : "no", report.max_abs_diff);

    env.undo(std::move(undo));
    std::printf("undone: %zu triples, %zu nodes\n", env.index().locations(qkv).size(), env.graph().num_nodes());
    return report.equal ? 0 : 1;
}
