#pragma once
/// \file
/// A Z3 prover for substitution rules: a rule is `proved` when its equality follows, in
/// first-order logic, from operator axioms of our own. Each axiom is itself a rule in the
/// rule text form, checked numerically (check_rule_numerically) before it is used.
///
/// **Semantics.** Tensors are one uninterpreted sort. Its intended model is every tensor
/// plus one "undefined" value ⊥: an op gives ⊥ where its normalisation or shape inference
/// rejects its inputs or attribute values, and on any ⊥ input. `defined(t)` says t ≠ ⊥.
/// Lists of Ints are a sort of their own, built by `list_n(a_0, ..., a_{n-1})` with
/// `length` and `element` axioms; `shape(t)` is t's dims as such a list (rank = length,
/// dim = element). An op is one function symbol per (op, input count, output, output
/// count), so Split's parts and Concat's arities are separate symbols. Its arguments are
/// its inputs, then its attributes in schema order (Reshape's `allowzero`, which
/// normalisation always erases, excepted): Int as Int, Ints as a list, Float and String as
/// constants of uninterpreted sorts, one per distinct value, pairwise distinct. A symbol
/// means "normalise the attributes as the graph does, then compute", so a target attribute
/// such as `axis=rank(x)-1` denotes the node the applier builds. A scalar Constant (no
/// `shape`) is a rank-0 tensor taking its value, which is why a source one must carry
/// `require rank_equals(c, 0)` (it matches any one-element constant). A tensor Constant
/// (`shape` and `fill`) is a symbol of its own taking value, shape and fill: a source one
/// matches exactly the graph constants it denotes (rewrite/constant_tensor.hpp), so it needs no
/// such requirement; it is defined where its fill fits its shape, and has that shape.
///
/// **A rule** reads: for all variables, symbols and source attributes, if every source node
/// output is defined, the constraints hold and every attribute expression can be evaluated
/// (an axis in range, an exact division, composable permutations), then each mapped source
/// output equals its target. Symbol-only constraints (permutation_is_identity, ...) and
/// compose() are uninterpreted; for the Int lists written in the axioms and the goal they
/// get ground facts computed by the matcher's own code. `broadcasts_to` stays uninterpreted.
///
/// **An axiom** is such a rule as a universally quantified formula whose E-matching pattern
/// is the source pattern's root terms (literal and derived source attributes become bound
/// variables with equations in the guard, so patterns hold no interpreted symbols). An
/// AxiomGuard::source_and_inner_target axiom is also guarded by the definedness of its
/// target's inner nodes. Axioms apply in the direction they are written; some are written
/// both ways. Every op symbol also gets the axiom "defined(f(x...)) → every x defined".
///
/// **Shape facts** per op (one table keyed by OpKind): under defined(t), what shape
/// inference guarantees about t's rank and some dims (a Conv's output channels are its
/// weight's dim 0, a Split part's axis dim is its size, an Add of equal ranks broadcasts dim
/// by dim, a tensor Constant has its `shape`, ...; a tensor Constant is also defined where
/// its fill fits). They are checked against shape inference on every distinct node of the
/// axioms' instances (one Z3 query per op over the concrete shapes; a graph Constant is read
/// through pattern_view) and used only for ops so checked.
///
/// **A goal** (the rule to prove) is asserted as premises over constants: its variables,
/// source and target outputs are defined (a location exists only where the target
/// instantiates), its constraints and expression conditions hold, and each mapped source
/// output has its target's shape; with the negation of "every mapped output equals its
/// target". Z3 searches by E-matching only: unsat is `proved`; otherwise it soon runs out
/// of instances. An optional second search with model-based instantiation
/// (ProverOptions::model_search_ms) may still prove the rule, or find a model of the axioms
/// and premises in which the outputs differ: `refuted` (the rule does not follow from the
/// axioms, which does not by itself make it false). Anything else is `unknown`.
///
/// Soundness rests on every axiom and shape fact being true in the intended model for all
/// values, ⊥ and attribute values no graph holds included; the comments on the axioms say
/// why the constraints they carry are needed. Numeric validation is a check on samples, not
/// a proof. Without Z3 (RLFLOW_HAS_Z3 undefined) the axioms are still validated numerically
/// and prove() answers `unknown`.
///
/// **Files.** The axioms and their numeric validation: axiom.hpp, builtin_axioms.hpp,
/// detail/prover_axioms*.hpp and detail/prover_constants.hpp. The Z3 encoding of ops:
/// detail/prover_signature.hpp; shape facts: detail/prover_shape_facts.hpp; rules as axioms
/// and goals: detail/prover_encoding.hpp; the proof driver: detail/prover_driver.hpp. What
/// a proof answers: proof_result.hpp. This file holds the Prover.

#include <rlflow/rewrite/rule.hpp>
#include <rlflow/synth/axiom.hpp>
#include <rlflow/synth/builtin_axioms.hpp>
#include <rlflow/synth/detail/prover_driver.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>
#include <rlflow/synth/proof_result.hpp>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace rlflow::synth {

/// Proves rules from operator axioms with Z3 (see the file comment). The axioms are
/// validated numerically on construction; only valid ones are used. Thread-compatible: use
/// one Prover per thread.
class Prover {
public:
    /// A prover over builtin_axioms().
    explicit Prover(ProverOptions options = {}) : Prover(builtin_axioms(), options) {}

    /// A prover over `axioms`. Throws rule_error if an axiom's rule is malformed.
    Prover(const std::vector<Axiom>& axioms, ProverOptions options)
        : m_options(options), m_state(std::make_unique<detail::ProverState>()) {
        std::vector<const Axiom*> valid;
        for (const Axiom& axiom : axioms) {
            AxiomReport report = detail::validate_axiom(axiom);
#ifdef RLFLOW_HAS_Z3
            if (report.valid) detail::encode_axiom(*m_state, axiom, report);
#endif
            if (report.valid) valid.push_back(&axiom);
            m_reports.push_back(std::move(report));
        }
#ifdef RLFLOW_HAS_Z3
        for (AxiomReport& report : detail::check_shape_facts(*m_state, valid)) m_reports.push_back(std::move(report));
#endif
    }

    /// Whether this build has Z3; without it prove() answers `unknown`.
    [[nodiscard]] static constexpr bool available() noexcept {
#ifdef RLFLOW_HAS_Z3
        return true;
#else
        return false;
#endif
    }

    /// Tries to prove `rule` within the timeout. Throws rule_error if the rule is malformed.
    [[nodiscard]] ProofResult prove(const Rule& rule) {
        const auto start = std::chrono::steady_clock::now();
        validate_rule(rule);
#ifdef RLFLOW_HAS_Z3
        ProofResult result = detail::prove_with(*m_state, m_options, rule);
#else
        ProofResult result{ProofStatus::unknown, 0, "built without Z3"};
#endif
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return result;
    }

    /// The validation of every axiom (and, with Z3, of each op's shape facts); only valid
    /// ones are used.
    [[nodiscard]] const std::vector<AxiomReport>& axioms() const noexcept { return m_reports; }

private:
    [[maybe_unused]] ProverOptions m_options;
    std::unique_ptr<detail::ProverState> m_state;
    std::vector<AxiomReport> m_reports;
};

}  // namespace rlflow::synth
