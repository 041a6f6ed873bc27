// Data-parallel training's collectives on the ranks mpiexec started: averaged gradients
// weighted by each rank's samples, parameters broadcast from the root, and ranks that
// step Adam on the averaged gradient staying equal.

#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/nn/distributed.hpp>
#include <rlflow/nn/optim.hpp>

#include <string>
#include <vector>

namespace {

using B = rlflow::nn::backend::Eigen;
using Parameter = rlflow::nn::Parameter<B>;

/// Two parameters whose values and gradients depend on the rank.
std::vector<Parameter> parameters_of(int rank) {
    std::vector<Parameter> ps;
    ps.emplace_back("w", rlflow::nn::Tensor<B>::from_host(rlflow::Shape{2, 2}, {1.0f * rank, 2, 3, 4}));
    ps.emplace_back("b", rlflow::nn::Tensor<B>::from_host(rlflow::Shape{3}, {-1.0f, 0.5f * rank, 7}));
    ps[0].grad = rlflow::nn::Tensor<B>::from_host(rlflow::Shape{2, 2}, {1.0f + rank, -2.0f * rank, 0.25f, 3});
    ps[1].grad = rlflow::nn::Tensor<B>::from_host(rlflow::Shape{3}, {4.0f * rank, 1, -1.0f - rank});
    return ps;
}

std::vector<Parameter*> pointers(std::vector<Parameter>& ps) {
    std::vector<Parameter*> out;
    for (Parameter& p : ps) out.push_back(&p);
    return out;
}

/// The parameter values as bytes, to compare ranks bit for bit.
std::string value_bytes(const std::vector<Parameter>& ps) {
    std::string bytes;
    for (const Parameter& p : ps) {
        const std::vector<float> v = p.value.to_host();
        bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    }
    return bytes;
}

}  // namespace

TEST_CASE("averaged gradients weigh each rank by its samples") {
    rlflow::MpiCommunicator comm;
    const int n = comm.size();
    std::vector<Parameter> ps = parameters_of(comm.rank());
    const std::vector<Parameter*> ptrs = pointers(ps);
    rlflow::nn::all_reduce_mean_gradients<B>(comm, ptrs, comm.rank() + 1.0);  // rank r: r + 1 samples
    // Each gradient entry is the sample-weighted mean of parameters_of(r)'s entries.
    double total = 0;
    std::vector<double> want(7, 0.0);
    for (int r = 0; r < n; ++r) {
        std::vector<Parameter> other = parameters_of(r);
        std::vector<float> g = other[0].grad.to_host();
        const std::vector<float> g1 = other[1].grad.to_host();
        g.insert(g.end(), g1.begin(), g1.end());
        for (std::size_t i = 0; i < g.size(); ++i) want[i] += (r + 1.0) * g[i];
        total += r + 1.0;
    }
    std::vector<float> got = ps[0].grad.to_host();
    const std::vector<float> got1 = ps[1].grad.to_host();
    got.insert(got.end(), got1.begin(), got1.end());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i] / total).epsilon(1e-6));
}

TEST_CASE("broadcast parameters, then Adam on averaged gradients, keeps the ranks equal") {
    rlflow::MpiCommunicator comm;
    std::vector<Parameter> ps = parameters_of(comm.rank());
    const std::vector<Parameter*> ptrs = pointers(ps);
    rlflow::nn::broadcast_parameters<B>(comm, ptrs, 0);
    CHECK(value_bytes(ps) == value_bytes(parameters_of(0)));
    rlflow::nn::Adam<B> adam(ptrs, {});
    for (int step = 0; step < 3; ++step) {
        std::vector<Parameter> fresh = parameters_of(comm.rank() + step);  // gradients differ per rank and step
        ps[0].grad = fresh[0].grad;
        ps[1].grad = fresh[1].grad;
        rlflow::nn::all_reduce_mean_gradients<B>(comm, ptrs, 1.0);
        (void)adam.step();
    }
    const std::vector<std::string> all = comm.gather_bytes(value_bytes(ps), 0);
    for (const std::string& bytes : all) CHECK(bytes == all.front());
    CHECK((comm.rank() != 0 || value_bytes(ps) != value_bytes(parameters_of(0))));  // the steps moved them
}
