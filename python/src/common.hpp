#pragma once
// What every part of the Python module shares: rlflow's errors as Python exceptions, JSON
// as Python objects, and C++ vectors handed to NumPy without a copy.

#include <rlflow/core/error.hpp>

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::python {

namespace py = pybind11;

/// The Python class of each rlflow error kind, all derived from rlflow.Error.
inline std::map<std::string, py::object>& error_classes() {
    static auto* classes = new std::map<std::string, py::object>();  // lives as long as the interpreter
    return *classes;
}

/// Defines rlflow.Error (a RuntimeError) and one subclass per error kind, and translates
/// each rlflow::error into its class with rlflow's message.
inline void register_errors(py::module_& m) {
    const py::object base = py::reinterpret_steal<py::object>(
        PyErr_NewExceptionWithDoc("rlflow.Error", "Base of rlflow's errors; str() is rlflow's message.", PyExc_RuntimeError, nullptr));
    m.attr("Error") = base;
    // Kind as C++ throws it, the Python name, and a second base where one fits.
    const std::vector<std::tuple<std::string, std::string, PyObject*>> kinds{
        {"onnx_error", "OnnxError", nullptr},         {"shape_error", "ShapeError", nullptr},
        {"graph_error", "GraphError", nullptr},       {"rule_error", "RuleError", nullptr},
        {"checkpoint_error", "CheckpointError", nullptr}, {"training_error", "TrainingError", nullptr},
        {"cuda_error", "CudaError", nullptr},         {"io_error", "IoError", PyExc_OSError},
        {"resource_error", "ResourceError", PyExc_MemoryError}, {"precondition_error", "PreconditionError", PyExc_ValueError},
        {"verification_error", "VerificationError", nullptr}};
    for (const auto& [kind, name, extra] : kinds) {
        const py::tuple bases = extra ? py::make_tuple(base, py::handle(extra)) : py::make_tuple(base);
        const py::object cls = py::reinterpret_steal<py::object>(
            PyErr_NewException(("rlflow." + name).c_str(), bases.ptr(), nullptr));
        m.attr(name.c_str()) = cls;
        error_classes()[kind] = cls;
    }
    error_classes()[""] = base;
    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const ::rlflow::error& e) {
            const auto it = error_classes().find(e.kind());
            const py::object& cls = it != error_classes().end() ? it->second : error_classes().at("");
            PyErr_SetString(cls.ptr(), e.message().c_str());
        }
    });
}

/// A JSON value as the Python object json.loads gives.
inline py::object to_python(const nlohmann::json& j) {
    return py::module_::import("json").attr("loads")(j.dump());
}

/// `values` as a NumPy array of `shape` that owns them: moved, not copied.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
    auto* owner = new std::vector<T>(std::move(values));
    const py::capsule free_with_array(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(std::move(shape), owner->data(), free_with_array);
}

/// 0/1 bytes as a NumPy bool array of `shape`, without a copy.
inline py::array to_bool_numpy(std::vector<std::uint8_t>&& values, std::vector<py::ssize_t> shape) {
    auto* owner = new std::vector<std::uint8_t>(std::move(values));
    const py::capsule free_with_array(owner, [](void* p) { delete static_cast<std::vector<std::uint8_t>*>(p); });
    return py::array(py::dtype("bool"), std::move(shape), {}, owner->data(), free_with_array);
}

/// Throws precondition_error unless `value` is one of `allowed`: an argument's check, with
/// the choices in the message.
inline void expect_one_of(const std::string& argument, const std::string& value, const std::set<std::string>& allowed) {
    if (allowed.contains(value)) return;
    std::string choices;
    for (const std::string& a : allowed) choices += (choices.empty() ? "" : ", ") + a;
    throw precondition_error(argument + "='" + value + "' is not one of: " + choices);
}

/// The same check against a table the command line's checks read.
inline void expect_listed(const std::string& argument, const std::string& value, const std::vector<std::string>& allowed) {
    expect_one_of(argument, value, std::set<std::string>(allowed.begin(), allowed.end()));
}

}  // namespace rlflow::python
