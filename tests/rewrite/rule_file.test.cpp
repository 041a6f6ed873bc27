#include "rule_samples.hpp"

#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_text.hpp>

#include <doctest/doctest.h>

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace rlflow;
using namespace rlflow::rewrite;
using rule_samples::sample_rules;

namespace {

namespace fs = std::filesystem;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

/// Builds protobuf messages field by field with libprotobuf's UnknownFieldSet, so that
/// test files are encoded independently of rlflow's own writer. A message is the
/// concatenation of its encoded fields.
class Proto {
public:
    Proto& text(int field, const std::string& value) {
        return add([&](UnknownFieldSet& f) { f.AddLengthDelimited(field, value); });
    }
    Proto& number(int field, std::uint64_t value) {
        return add([&](UnknownFieldSet& f) { f.AddVarint(field, value); });
    }
    Proto& fixed64(int field, std::uint64_t bits) {
        return add([&](UnknownFieldSet& f) { f.AddFixed64(field, bits); });
    }
    Proto& message(int field, const Proto& value) { return text(field, value.bytes()); }
    [[nodiscard]] const std::string& bytes() const noexcept { return m_bytes; }

private:
    template <class AddField>
    Proto& add(AddField add_field) {
        UnknownFieldSet fields;
        add_field(fields);
        std::string encoded;
        REQUIRE(fields.SerializeToString(&encoded));
        m_bytes += encoded;
        return *this;
    }

    std::string m_bytes;
};

/// A RuleFile around `rules`, with `count` as its rule count.
std::string rule_file(const std::vector<Proto>& rules, std::uint64_t count, std::uint64_t version = 1) {
    Proto file;
    file.text(1, "rlflow.rules").number(2, version);
    for (const Proto& r : rules) file.message(3, r);
    return file.number(4, count).bytes();
}

Proto variable_ref(std::uint64_t index) { return Proto().number(2, index); }
Proto node_ref(std::uint64_t index) { return Proto().number(1, 1).number(2, index); }

/// cancel_transpose_pair from rule_samples, encoded by hand; the constraint's symbols
/// are unpacked, which readers must accept like packed ones.
Proto cancel_transpose_pair(const std::string& op = "Transpose",
                            const std::string& constraint = "permutation_is_identity") {
    const auto transpose = [&](const Proto& input, std::uint64_t symbol, const std::string& label) {
        const Proto perm = Proto().text(1, "perm").message(2, Proto().number(1, 1).number(3, symbol));
        return Proto().text(1, op).message(2, input).message(3, perm).text(5, label);
    };
    return Proto()
        .text(1, "cancel_transpose_pair")
        .text(2, "x")
        .text(3, "p")
        .text(3, "q")
        .message(4, transpose(variable_ref(0), 0, "t1"))
        .message(4, transpose(node_ref(0), 1, "t2"))
        .message(6, Proto().message(1, node_ref(1)).message(2, variable_ref(0)))
        .message(7, Proto().text(1, constraint).number(3, 0).number(3, 1));
}

/// A rule `softmax` whose only attribute, Softmax's int "axis", is `literal`.
Proto softmax_with_axis(const Proto& literal) {
    const Proto axis = Proto().text(1, "axis").message(2, Proto().message(2, literal));
    return Proto()
        .text(1, "softmax")
        .text(2, "x")
        .message(4, Proto().text(1, "Softmax").message(2, variable_ref(0)).message(3, axis).text(5, "s"))
        .message(6, Proto().message(1, node_ref(0)).message(2, variable_ref(0)));
}

/// Which length-delimited fields of each message of proto/rules.proto are messages.
const std::map<std::string, std::map<int, std::string>>& message_fields() {
    static const std::map<std::string, std::map<int, std::string>> fields = {
        {"RuleFile", {{3, "Rule"}}},
        {"Rule", {{4, "Node"}, {5, "Node"}, {6, "OutputMapping"}, {7, "Constraint"}, {8, "OrderedPair"}}},
        {"Node", {{2, "Ref"}, {3, "Attribute"}}},
        {"Attribute", {{2, "Expr"}}},
        {"Expr", {{2, "Literal"}, {5, "IntTerm"}}},
        {"Literal", {{4, "IntList"}, {5, "FloatList"}, {6, "StringList"}}},
        {"IntTerm", {{5, "Ref"}}},
        {"Constraint", {{2, "Ref"}}},
        {"OutputMapping", {{1, "Ref"}, {2, "Ref"}}},
    };
    return fields;
}

/// `bytes`, a message of `type`, with every nested message rewritten the same way, its
/// fields reordered by descending field number (same-numbered fields keep their order)
/// if `reorder`, and four unknown fields (one of each wire type) added if `add_unknown`.
std::string rewritten(const std::string& bytes, const std::string& type, bool reorder, bool add_unknown) {
    UnknownFieldSet fields;
    REQUIRE(fields.ParseFromString(bytes));
    const auto children = message_fields().find(type);
    for (int i = 0; i < fields.field_count(); ++i) {
        UnknownField* field = fields.mutable_field(i);
        if (children == message_fields().end() || field->type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
        const auto child = children->second.find(field->number());
        if (child != children->second.end())
            *field->mutable_length_delimited()
                = rewritten(field->length_delimited(), child->second, reorder, add_unknown);
    }
    std::vector<int> order(static_cast<std::size_t>(fields.field_count()));
    std::iota(order.begin(), order.end(), 0);
    if (reorder)
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return fields.field(a).number() > fields.field(b).number(); });
    UnknownFieldSet out;
    constexpr int unknown = 1000;
    if (add_unknown) {
        out.AddVarint(unknown, 7);
        out.AddLengthDelimited(unknown + 1, "written by a later version");
        out.AddFixed32(unknown + 2, 3);
        out.AddFixed64(unknown + 3, 4);
    }
    for (const int i : order) out.AddField(fields.field(i));
    std::string result;
    REQUIRE(out.SerializeToString(&result));
    return result;
}

/// A fresh directory under the system's temporary directory, removed at the end.
class TemporaryDirectory {
public:
    TemporaryDirectory() {
        static std::atomic<int> counter{0};
        m_path = fs::temp_directory_path()
                 / ("rlflow_rule_file_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(m_path);
        fs::create_directories(m_path);
    }
    ~TemporaryDirectory() {
        std::error_code ignored;
        fs::remove_all(m_path, ignored);
    }
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
    [[nodiscard]] const fs::path& path() const noexcept { return m_path; }

private:
    fs::path m_path;
};

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

bool protoc_available() { return std::system("command -v protoc >/dev/null 2>&1") == 0; }

/// Runs `protoc --decode` or `--encode` (`mode`) of a RuleFile with proto/rules.proto,
/// from `input` to `output`; true if it succeeded.
bool run_protoc(std::string_view mode, const fs::path& input, const fs::path& output) {
    const std::string command = "protoc --proto_path=" + std::string(RLFLOW_SOURCE_DIR) + "/proto --"
                                + std::string(mode) + "=rlflow.rules.RuleFile rules.proto < " + input.string() + " > "
                                + output.string();
    return std::system(command.c_str()) == 0;
}

}  // namespace

TEST_CASE("the sample rules survive serialize_rules and deserialize_rules unchanged") {
    const std::vector<Rule> rules = sample_rules();
    const std::vector<Rule> read_back = deserialize_rules(serialize_rules(rules), "samples.pb");
    REQUIRE(read_back.size() == rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i) {
        CAPTURE(rules[i].name);
        CHECK(read_back[i] == rules[i]);
    }
}

TEST_CASE("rules go through text and binary and back unchanged, in either order") {
    const std::vector<Rule> rules = sample_rules();
    CHECK(deserialize_rules(serialize_rules(parse_rules_text(to_text(rules))), "a.pb") == rules);
    CHECK(parse_rules_text(to_text(deserialize_rules(serialize_rules(rules), "b.pb"))) == rules);
    CHECK(to_text(deserialize_rules(serialize_rules(rules), "c.pb")) == rule_samples::sample_rules_text);
}

TEST_CASE("a rule's verification status survives text and binary, and an unknown one is refused") {
    std::vector<Rule> rules = sample_rules();
    REQUIRE(rules.size() >= 3);
    rules[0].verification = Verification::proved;
    rules[1].verification = Verification::tested;
    rules[2].verification = Verification::rejected;
    CHECK(deserialize_rules(serialize_rules(rules), "status.pb") == rules);
    const std::string text = to_text(rules);
    CHECK(text.find("  status proved\n") != std::string::npos);
    CHECK(parse_rules_text(text) == rules);
    // An unknown status must not be read as some other one.
    const Proto future = cancel_transpose_pair("Transpose").number(9, 7);
    CHECK_THROWS_WITH_AS((void)deserialize_rules(rule_file({future}, 1), "future.pb"),
                         doctest::Contains("future.pb: rule #0 'cancel_transpose_pair': unknown verification 7"),
                         rule_error);
    std::string bad = text;
    bad.replace(bad.find("status proved"), 13, "status trusted");
    CHECK_THROWS_WITH_AS((void)parse_rules_text(bad, "bad.rules"), doctest::Contains("unknown status 'trusted'"),
                         rule_error);
}

TEST_CASE("an empty rule set round-trips, but an empty file is not a rules file") {
    CHECK(deserialize_rules(serialize_rules({}), "empty_set.pb").empty());
    CHECK_THROWS_WITH_AS((void)deserialize_rules("", "empty.pb"),
                         doctest::Contains("empty.pb: not an rlflow rules file (it is empty)"), rule_error);
}

TEST_CASE("a rule's id is its position in the file, whatever it was when saved") {
    std::vector<Rule> rules = sample_rules();
    std::reverse(rules.begin(), rules.end());
    const std::vector<Rule> read_back = deserialize_rules(serialize_rules(rules), "reversed.pb");
    REQUIRE(read_back.size() == rules.size());
    for (std::size_t i = 0; i < read_back.size(); ++i) {
        CHECK(read_back[i].id == i);
        CHECK(read_back[i].name == rules[i].name);
    }
}

TEST_CASE("every strict prefix of a rules file is refused with rule_error") {
    const std::string bytes = serialize_rules(sample_rules());
    for (std::size_t length = 0; length < bytes.size(); ++length) {
        CAPTURE(length);
        CHECK_THROWS_WITH_AS((void)deserialize_rules(std::string_view(bytes).substr(0, length), "cut.pb"),
                             doctest::Contains("cut.pb"), rule_error);
    }
    // The count is written last (two bytes): a file cut just before it holds only whole rules.
    constexpr std::size_t count_bytes = 2;
    CHECK_THROWS_WITH_AS(
        (void)deserialize_rules(std::string_view(bytes).substr(0, bytes.size() - count_bytes), "cut.pb"),
        doctest::Contains("cut.pb: truncated: the rule count, written after the rules, is missing"), rule_error);
}

TEST_CASE("random byte changes never crash the reader: each mutant loads or throws rule_error") {
    const std::string original = serialize_rules(sample_rules());
    std::mt19937 random(31337);
    constexpr int mutants = 600;
    constexpr int most_changes = 3;
    int loaded = 0;
    int refused = 0;
    for (int i = 0; i < mutants; ++i) {
        std::string bytes = original;
        const int changes = std::uniform_int_distribution<int>(1, most_changes)(random);
        for (int c = 0; c < changes; ++c) {
            const std::size_t at = std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(random);
            bytes[at] = static_cast<char>(std::uniform_int_distribution<int>(0, UCHAR_MAX)(random));
        }
        try {
            const std::vector<Rule> rules = deserialize_rules(bytes, "mutant.pb");
            CHECK(deserialize_rules(serialize_rules(rules), "again.pb") == rules);
            ++loaded;
        } catch (const rule_error& e) {
            CHECK(std::string(e.what()).find("mutant.pb") != std::string::npos);
            ++refused;
        }
    }
    CHECK(loaded + refused == mutants);
    CHECK(refused > 0);
}

TEST_CASE("an ONNX model is not an rlflow rules file") {
    const fs::path onnx = fs::path(RLFLOW_SOURCE_DIR) / "tests/data/resnet18_op13.onnx";
    const std::string bytes = read_bytes(onnx);
    REQUIRE(!bytes.empty());
    CHECK_THROWS_WITH_AS((void)deserialize_rules(bytes, "resnet18_op13.onnx"),
                         doctest::Contains("resnet18_op13.onnx: not an rlflow rules file"), rule_error);
    CHECK_THROWS_WITH_AS((void)load_rules(onnx),
                         doctest::Contains((onnx.string() + ": not an rlflow rules file").c_str()), rule_error);
}

TEST_CASE("a file of another format or version is refused, saying which") {
    CHECK_THROWS_WITH_AS((void)deserialize_rules(rule_file({}, 0, 2), "v2.pb"),
                         doctest::Contains("v2.pb: version 2 is not supported (this build reads version 1)"),
                         rule_error);
    CHECK_THROWS_WITH_AS(
        (void)deserialize_rules(Proto().text(1, "onnx.model").number(2, 1).bytes(), "other.pb"),
        doctest::Contains("other.pb: not an rlflow rules file (format 'onnx.model', expected 'rlflow.rules')"),
        rule_error);
    CHECK_THROWS_WITH_AS((void)deserialize_rules(Proto().number(2, 1).bytes(), "nameless.pb"),
                         doctest::Contains("nameless.pb: not an rlflow rules file (no format field)"), rule_error);
}

TEST_CASE("a rule encoded independently, with unpacked repeated fields, reads as the same rule") {
    Rule expected = rule_samples::cancel_transpose_pair();
    expected.id = 0;
    const std::vector<Rule> rules = deserialize_rules(rule_file({cancel_transpose_pair()}, 1), "by_hand.pb");
    REQUIRE(rules.size() == 1);
    CHECK(rules.front() == expected);
}

TEST_CASE("unknown fields at every level are skipped") {
    const std::string bytes = rewritten(serialize_rules(sample_rules()), "RuleFile", false, true);
    CHECK(bytes.size() > serialize_rules(sample_rules()).size());
    CHECK(deserialize_rules(bytes, "future.pb") == sample_rules());
}

TEST_CASE("fields in any order read the same") {
    const std::string bytes = rewritten(serialize_rules(sample_rules()), "RuleFile", true, false);
    CHECK(bytes != serialize_rules(sample_rules()));
    CHECK(deserialize_rules(bytes, "reordered.pb") == sample_rules());
}

TEST_CASE("the rule count must match the rules in the file") {
    CHECK_THROWS_WITH_AS((void)deserialize_rules(rule_file({cancel_transpose_pair()}, 2), "count.pb"),
                         doctest::Contains("count.pb: says it holds 2 rules but holds 1 (truncated or corrupt)"),
                         rule_error);
}

TEST_CASE("malformed encodings are refused with the byte where they are") {
    const std::string header = Proto().text(1, "rlflow.rules").number(2, 1).bytes();  // 16 bytes
    CHECK_THROWS_WITH_AS((void)deserialize_rules(header + "\x1a\xff\xff\xff\xff\x0f", "long.pb"),
                         doctest::Contains("long.pb: corrupt or truncated data at byte 16: length 4294967295 runs past "
                                           "the end (0 bytes left)"),
                         rule_error);
    CHECK_THROWS_WITH_AS(
        (void)deserialize_rules(header + "\x20" + std::string(10, '\xff') + "\x01", "overlong.pb"),
        doctest::Contains("overlong.pb: corrupt or truncated data at byte 16: truncated or overlong varint"),
        rule_error);
    CHECK_THROWS_WITH_AS((void)deserialize_rules(header + std::string(1, '\0'), "tag.pb"),
                         doctest::Contains("tag.pb: corrupt or truncated data at byte 16: bad tag 0"), rule_error);
    CHECK_THROWS_WITH_AS((void)deserialize_rules(header + "\x7f", "group.pb"),
                         doctest::Contains("unsupported wire type 7 in field 15"), rule_error);
    CHECK_THROWS_WITH_AS((void)deserialize_rules(header + "\x1d", "type.pb"),
                         doctest::Contains("type.pb: corrupt or truncated data at byte 16: field 3 has wire type 5, "
                                           "expected 2"),
                         rule_error);
}

TEST_CASE("values this build does not know are refused, naming the rule") {
    CHECK_THROWS_WITH_AS((void)deserialize_rules(rule_file({cancel_transpose_pair("Transpose3D")}, 1), "op.pb"),
                         doctest::Contains("op.pb: rule #0 'cancel_transpose_pair': source node 0 't1': unknown op "
                                           "'Transpose3D'"),
                         rule_error);
    CHECK_THROWS_WITH_AS(
        (void)deserialize_rules(rule_file({cancel_transpose_pair("Transpose", "is_identity")}, 1), "constraint.pb"),
        doctest::Contains("constraint.pb: rule #0 'cancel_transpose_pair': unknown constraint 'is_identity'"),
        rule_error);
    const Proto future_kind = Proto().text(1, "axis").message(2, Proto().number(1, 9));
    const Proto rule = Proto()
                           .text(1, "future")
                           .text(2, "x")
                           .message(4, Proto().text(1, "Softmax").message(2, variable_ref(0)).message(3, future_kind))
                           .message(6, Proto().message(1, node_ref(0)).message(2, variable_ref(0)));
    CHECK_THROWS_WITH_AS((void)deserialize_rules(rule_file({rule}, 1), "kind.pb"),
                         doctest::Contains("kind.pb: rule #0 'future': unknown expression kind 9 (a newer file?)"),
                         rule_error);
}

TEST_CASE("literal types must match the op's attribute schema") {
    const auto load_with = [](const Proto& literal) {
        return deserialize_rules(rule_file({softmax_with_axis(literal)}, 1), "types.pb");
    };
    const std::vector<Rule> two = load_with(Proto().number(1, 4));  // sint64 4 is 2
    CHECK(std::get<std::int64_t>(two.front().source[0].attributes[0].value.literal) == 2);
    const std::uint64_t one_and_a_half = std::bit_cast<std::uint64_t>(1.5);
    const std::string wrong_type
        = "types.pb: rule #0 'softmax': source node 0 's' (Softmax): attribute 'axis' must be of type int";
    CHECK_THROWS_WITH_AS((void)load_with(Proto().fixed64(2, one_and_a_half)), doctest::Contains(wrong_type.c_str()),
                         rule_error);
    CHECK_THROWS_WITH_AS((void)load_with(Proto().message(5, Proto().fixed64(1, one_and_a_half))),
                         doctest::Contains(wrong_type.c_str()), rule_error);
    CHECK_THROWS_WITH_AS((void)load_with(Proto().message(6, Proto().text(1, "a"))),
                         doctest::Contains(wrong_type.c_str()), rule_error);
    CHECK_THROWS_WITH_AS((void)load_with(Proto()),
                         doctest::Contains("types.pb: rule #0 'softmax': a literal has no value"), rule_error);
}

TEST_CASE("loaded rules are validated, and names must be unique in the file") {
    const Proto from_variable = softmax_with_axis(Proto().number(1, 0)).message(6, Proto().message(2, variable_ref(0)));
    CHECK_THROWS_WITH_AS(
        (void)deserialize_rules(rule_file({from_variable}, 1), "invalid.pb"),
        doctest::Contains("[rlflow.rule_error] invalid.pb: rule #0 'softmax': output mapping 1: source "
                          "side must be a node output"),
        rule_error);
    std::vector<Rule> rules = {rule_samples::fuse_conv_relu(), rule_samples::fuse_transpose_pair()};
    rules[1].name = "fuse_conv_relx";  // as long as the first name, so that it can be patched in the bytes
    std::string bytes = serialize_rules(rules);
    bytes.replace(bytes.find("fuse_conv_relx"), rules[0].name.size(), rules[0].name);
    CHECK_THROWS_WITH_AS((void)deserialize_rules(bytes, "twice.pb"),
                         doctest::Contains("twice.pb: rule #1 'fuse_conv_relu': the name is already used by rule #0"),
                         rule_error);
    rules[1].name = rules[0].name;
    CHECK_THROWS_WITH_AS((void)serialize_rules(rules),
                         doctest::Contains("rule #1 'fuse_conv_relu': the name is already used"), rule_error);
}

TEST_CASE("save_rules picks the form from the extension and load_rules reads either") {
    const TemporaryDirectory directory;
    const std::vector<Rule> rules = sample_rules();
    for (const std::string name : {"rules.txt", "rules.rules", "rules.pb", "rules"}) {
        CAPTURE(name);
        const fs::path path = directory.path() / name;
        save_rules(path, rules);
        const bool text = path.extension() == ".txt" || path.extension() == ".rules";
        CHECK((read_bytes(path) == std::string(rule_samples::sample_rules_text)) == text);
        CHECK((read_bytes(path) == serialize_rules(rules)) == !text);
        CHECK(load_rules(path) == rules);
    }
    // Temporary files were renamed into place, none left behind.
    CHECK(std::distance(fs::directory_iterator(directory.path()), fs::directory_iterator()) == 4);
}

TEST_CASE("an explicit format overrides the extension, and load_rules sniffs the content") {
    const TemporaryDirectory directory;
    const std::vector<Rule> rules = sample_rules();
    save_rules(directory.path() / "text.pb", rules, RuleFormat::text);
    save_rules(directory.path() / "binary.txt", rules, RuleFormat::binary);
    CHECK(read_bytes(directory.path() / "text.pb").starts_with("rlflow-rules 1\n"));
    CHECK(load_rules(directory.path() / "text.pb") == rules);
    CHECK(load_rules(directory.path() / "binary.txt") == rules);
    write_bytes(directory.path() / "commented", "# my rules\n\n  \nrlflow-rules 1\n");
    CHECK(load_rules(directory.path() / "commented").empty());
}

TEST_CASE("load_rules names the path in every error") {
    const TemporaryDirectory directory;
    const fs::path missing = directory.path() / "missing.pb";
    CHECK_THROWS_WITH_AS((void)load_rules(missing), doctest::Contains((missing.string() + ": no such file").c_str()),
                         io_error);
    CHECK_THROWS_WITH_AS((void)load_rules(directory.path()), doctest::Contains("is a directory"), io_error);
    const fs::path broken = directory.path() / "broken.txt";
    write_bytes(broken, "rlflow-rules 1\nrule r\n");
    CHECK_THROWS_WITH_AS((void)load_rules(broken),
                         doctest::Contains((broken.string() + ":2: rule #0 'r': unterminated").c_str()), rule_error);
}

TEST_CASE("save_rules refuses an invalid rule and leaves the old file alone") {
    const TemporaryDirectory directory;
    const fs::path path = directory.path() / "rules.pb";
    save_rules(path, sample_rules());
    Rule invalid = rule_samples::fuse_conv_relu();
    invalid.outputs.clear();
    CHECK_THROWS_WITH_AS(save_rules(path, std::vector<Rule>{invalid}),
                         doctest::Contains("rule #0 'fuse_conv_relu': maps no outputs"), rule_error);
    CHECK(load_rules(path) == sample_rules());
}

TEST_CASE("protoc decodes a saved rules file with proto/rules.proto") {
    if (!protoc_available()) {
        MESSAGE("skipped: protoc not found");
        return;
    }
    const TemporaryDirectory directory;
    const fs::path file = directory.path() / "rules.pb";
    const fs::path decoded = directory.path() / "decoded.txt";
    save_rules(file, sample_rules());
    REQUIRE(run_protoc("decode", file, decoded));
    const std::string text = read_bytes(decoded);
    CHECK(text.find("format: \"rlflow.rules\"") != std::string::npos);
    CHECK(text.find("rule_count: 8") != std::string::npos);
    for (const Rule& rule : sample_rules()) CHECK(text.find("name: \"" + rule.name + "\"") != std::string::npos);
    // Every field written is in the schema: protoc would print unknown ones by number.
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t first = line.find_first_not_of(' ');
        CHECK_FALSE((first != std::string::npos && std::isdigit(static_cast<unsigned char>(line[first]))));
    }
}

TEST_CASE("a file protoc encodes from a textproto loads") {
    if (!protoc_available()) {
        MESSAGE("skipped: protoc not found");
        return;
    }
    const TemporaryDirectory directory;
    const fs::path textproto = directory.path() / "rules.textproto";
    const fs::path file = directory.path() / "rules.pb";
    write_bytes(textproto, R"(format: "rlflow.rules"
version: 1
rules {
  name: "cancel_transpose_pair"
  variables: "x"
  symbols: "p"
  symbols: "q"
  source { op: "Transpose" inputs {} attributes { name: "perm" value { kind: KIND_SYMBOL symbol: 0 } } label: "t1" }
  source {
    op: "Transpose"
    inputs { kind: KIND_NODE index: 0 }
    attributes { name: "perm" value { kind: KIND_SYMBOL symbol: 1 } }
    label: "t2"
  }
  outputs { source { kind: KIND_NODE index: 1 } target { kind: KIND_VARIABLE index: 0 } }
  constraints { kind: "permutation_is_identity" symbols: [0, 1] }
}
rule_count: 1
)");
    REQUIRE(run_protoc("encode", textproto, file));
    Rule expected = rule_samples::cancel_transpose_pair();
    expected.id = 0;
    CHECK(load_rules(file) == std::vector<Rule>{expected});
}
