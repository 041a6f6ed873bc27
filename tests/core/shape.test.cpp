#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>

#include <doctest/doctest.h>

using namespace rlflow;

TEST_CASE("numpy broadcasting aligns trailing dimensions") {
    CHECK(*broadcast_shapes(Shape{8, 1, 6, 1}, Shape{7, 1, 5}) == Shape{8, 7, 6, 5});
    CHECK(*broadcast_shapes(Shape{}, Shape{3, 4}) == Shape{3, 4});
    CHECK(*broadcast_shapes(Shape{768}, Shape{1, 128, 768}) == Shape{1, 128, 768});
    CHECK_FALSE(broadcast_shapes(Shape{3}, Shape{4}).has_value());
    CHECK_FALSE(broadcast_shapes(Shape{2, 1}, Shape{8, 4, 3}).has_value());
}

TEST_CASE("shapes beyond rank 6 are rejected with a shape error") {
    CHECK_NOTHROW(Shape{1, 2, 3, 4, 5, 6});
    CHECK_THROWS_AS(Shape({1, 2, 3, 4, 5, 6, 7}), shape_error);
    Shape s{1, 2, 3, 4, 5, 6};
    CHECK_THROWS_AS(s.push_back(7), shape_error);
}

TEST_CASE("shape arithmetic: numel, axes and printing") {
    const Shape s{2, 3, 4};
    CHECK(s.numel() == 24);
    CHECK(Shape{}.numel() == 1);
    CHECK(s.product(1, 3) == 12);
    CHECK(s.normalize_axis(-1) == 2);
    CHECK_THROWS_WITH_AS((void)s.normalize_axis(3), "[rlflow.shape_error] axis 3 out of range for shape (2,3,4)", shape_error);
    CHECK(s.to_string() == "(2,3,4)");
    CHECK(Shape{5}.to_string() == "(5,)");
    const Shape u{1, Shape::unknown};
    CHECK_FALSE(u.is_static());
    CHECK(u.to_string() == "(1,?)");
}

TEST_CASE("tensors hold float data and carry other dtypes as raw bytes") {
    const Tensor f = Tensor::from_floats(Shape{2, 2}, {1, 2, 3, 4});
    CHECK(f.floats()[3] == 4.0f);
    CHECK(f.raw().size() == 16);
    const Tensor i = Tensor::from_values<std::int64_t>(DType::Int64, Shape{3}, {7, -1, 9});
    CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, -1, 9});
    CHECK_THROWS_AS((void)i.floats(), precondition_error);
    CHECK_THROWS_AS(Tensor::from_floats(Shape{3}, {1, 2}), shape_error);
    const Tensor z(TensorType{DType::Float16, Shape{4}});
    CHECK(z.raw().size() == 8);
}
