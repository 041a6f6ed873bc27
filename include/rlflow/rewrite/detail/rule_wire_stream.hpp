#pragma once
/// \file
/// Protobuf's wire format by hand, over libprotobuf's coded streams: tags, varints,
/// zigzag, doubles and length-delimited fields, for hand-written messages (the library is
/// header-only and ships no generated code). Readers accept packed or unpacked repeated
/// scalars, as protobuf requires, and skip unknown fields; any malformed input (bad tag,
/// truncation, overlong varint, a length beyond the data) throws rule_error before
/// anything is allocated for it.

#include <rlflow/core/error.hpp>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace rlflow::rewrite::detail {

/// Protobuf wire types (the low three bits of a tag).
enum class WireType : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };
inline constexpr unsigned wire_type_bits = 3;
inline constexpr std::uint32_t wire_type_mask = (1U << wire_type_bits) - 1;
inline constexpr int fixed32_bytes = 4;
inline constexpr int fixed64_bytes = 8;

/// Protobuf's zigzag encoding of sint64 (small magnitudes, small varints).
[[nodiscard]] constexpr std::uint64_t zigzag(std::int64_t v) noexcept {
    constexpr unsigned sign_shift = 63;
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> sign_shift);
}
[[nodiscard]] constexpr std::int64_t unzigzag(std::uint64_t v) noexcept {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

/// Writes the fields of one message. Like proto3, it leaves out zeros and empty strings
/// unless asked to write them always (repeated elements, oneof members, presence).
class WireWriter {
public:
    explicit WireWriter(google::protobuf::io::CodedOutputStream& out) : m_out(out) {}

    template <class Field>
    void varint(Field field, std::uint64_t value, bool always = false) {
        if (value == 0 && !always) return;
        tag(field, WireType::varint);
        m_out.WriteVarint64(value);
    }
    template <class Field>
    void sint64(Field field, std::int64_t value, bool always = false) {
        varint(field, zigzag(value), always);
    }
    template <class Field>
    void float64(Field field, double value) {
        tag(field, WireType::fixed64);
        m_out.WriteLittleEndian64(std::bit_cast<std::uint64_t>(value));
    }
    template <class Field>
    void bytes(Field field, std::string_view value, bool always = false) {
        if (value.empty() && !always) return;
        tag(field, WireType::length_delimited);
        m_out.WriteVarint64(value.size());
        m_out.WriteRaw(value.data(), static_cast<int>(value.size()));
    }
    /// A nested message, written by `body(WireWriter&)`; always present.
    template <class Field, class Body>
    void message(Field field, Body&& body);
    /// A packed repeated scalar field: `write(WireWriter&, element)` writes each element
    /// with the raw_* functions.
    template <class Field, class Values, class Write>
    void packed(Field field, const Values& values, Write write);

    void raw_varint(std::uint64_t value) { m_out.WriteVarint64(value); }
    void raw_double(double value) { m_out.WriteLittleEndian64(std::bit_cast<std::uint64_t>(value)); }

private:
    template <class Field>
    void tag(Field field, WireType type) {
        m_out.WriteTag(static_cast<std::uint32_t>(field) << wire_type_bits | static_cast<std::uint32_t>(type));
    }

    google::protobuf::io::CodedOutputStream& m_out;
};

/// The bytes `body(WireWriter&)` writes.
template <class Body>
[[nodiscard]] std::string encode_message(Body&& body) {
    std::string bytes;
    {
        google::protobuf::io::StringOutputStream stream(&bytes);
        google::protobuf::io::CodedOutputStream out(&stream);
        WireWriter writer(out);
        body(writer);
    }  // the coded stream trims `bytes` to what was written when it goes
    return bytes;
}

template <class Field, class Body>
void WireWriter::message(Field field, Body&& body) {
    bytes(field, encode_message(std::forward<Body>(body)), true);
}

template <class Field, class Values, class Write>
void WireWriter::packed(Field field, const Values& values, Write write) {
    bytes(field, encode_message([&](WireWriter& w) {
              for (const auto& v : values) write(w, v);
          }));
}

/// Reads the fields of one message (and, through message(), of nested ones) from a
/// buffer of at most INT_MAX bytes (a coded stream's limit). Errors name `location` and
/// the byte offset in the whole file, where the buffer starts at `file_offset`.
class WireReader {
public:
    WireReader(std::string_view bytes, std::size_t file_offset, std::string location)
        : m_bytes(bytes),
          m_in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size())),
          m_file_offset(file_offset),
          m_location(std::move(location)) {
        RLFLOW_ASSERT(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()));
    }

    void set_location(std::string location) { m_location = std::move(location); }
    /// While sniffing, a malformed input is reported as "not an rlflow rules file".
    void set_sniffing(bool sniffing) noexcept { m_sniffing = sniffing; }

    /// A malformed input: a broken encoding, not a bad value. Names the byte where the
    /// field being read starts.
    [[noreturn]] void malformed(const std::string& what) const {
        const std::string at = "at byte " + std::to_string(m_file_offset + m_field_start);
        if (m_sniffing) throw rule_error(m_location + ": not an rlflow rules file (" + what + " " + at + ")");
        throw rule_error(m_location + ": corrupt or truncated data " + at + ": " + what);
    }
    /// A well-formed input with a value this build cannot accept.
    [[noreturn]] void reject(const std::string& what) const { throw rule_error(m_location + ": " + what); }

    /// Moves to the next field of the current message; false at its end.
    [[nodiscard]] bool next() {
        if (m_in.BytesUntilLimit() <= 0) return false;
        m_field_start = static_cast<std::size_t>(m_in.CurrentPosition());
        const std::uint32_t tag = m_in.ReadTag();
        m_field = tag >> wire_type_bits;
        m_type = static_cast<WireType>(tag & wire_type_mask);
        if (m_field == 0) malformed("bad tag " + std::to_string(tag));
        return true;
    }
    template <class Field>
    [[nodiscard]] Field field() const noexcept {
        return static_cast<Field>(m_field);
    }

    [[nodiscard]] std::uint64_t varint() {
        expect_type(WireType::varint);
        return raw_varint();
    }
    [[nodiscard]] std::uint32_t uint32() {
        const std::uint64_t v = varint();
        if (v > std::numeric_limits<std::uint32_t>::max())
            malformed("value " + std::to_string(v) + " overflows a uint32");
        return static_cast<std::uint32_t>(v);
    }
    [[nodiscard]] std::int64_t sint64() { return unzigzag(varint()); }
    [[nodiscard]] double float64() {
        expect_type(WireType::fixed64);
        return raw_double();
    }
    [[nodiscard]] std::string string() {
        const std::string_view view = length_delimited();
        return std::string(view);
    }
    /// The payload of a length-delimited field, as a view into the buffer.
    [[nodiscard]] std::string_view length_delimited() {
        expect_type(WireType::length_delimited);
        const int length = length_prefix();
        const std::string_view view
            = m_bytes.substr(static_cast<std::size_t>(m_in.CurrentPosition()), static_cast<std::size_t>(length));
        if (!m_in.Skip(length)) malformed("truncated field");
        return view;
    }
    /// Where in the file the next byte is.
    [[nodiscard]] std::size_t file_position() const noexcept {
        return m_file_offset + static_cast<std::size_t>(m_in.CurrentPosition());
    }
    /// Reads a nested message: `body()` reads its fields with next() and friends.
    template <class Body>
    void message(Body&& body) {
        expect_type(WireType::length_delimited);
        const auto limit = m_in.PushLimit(length_prefix());
        body();
        m_in.PopLimit(limit);
    }
    /// Calls `each(field)` for each field left in the current message, `field` being of
    /// the message's field enum; `each` reads or skips it.
    template <class Field, class Each>
    void for_each_field(Each each) {
        while (next()) each(field<Field>());
    }
    /// Reads a nested message field by field (see for_each_field).
    template <class Field, class Each>
    void read_message(Each each) {
        message([&] { for_each_field<Field>(each); });
    }
    /// One occurrence of a repeated varint field, packed or not: `each(value)` per element.
    template <class Each>
    void repeated_varints(Each each) {
        repeated(WireType::varint, [&] { each(raw_varint()); });
    }
    template <class Each>
    void repeated_doubles(Each each) {
        repeated(WireType::fixed64, [&] { each(raw_double()); });
    }
    /// Skips a field this build does not know.
    void skip();

private:
    void expect_type(WireType type) const {
        if (m_type != type)
            malformed("field " + std::to_string(m_field) + " has wire type "
                      + std::to_string(static_cast<unsigned>(m_type)) + ", expected "
                      + std::to_string(static_cast<unsigned>(type)));
    }
    [[nodiscard]] std::uint64_t raw_varint() {
        std::uint64_t v = 0;
        if (!m_in.ReadVarint64(&v)) malformed("truncated or overlong varint");
        return v;
    }
    [[nodiscard]] double raw_double() {
        std::uint64_t bits = 0;
        if (!m_in.ReadLittleEndian64(&bits)) malformed("truncated double");
        return std::bit_cast<double>(bits);
    }
    /// A length that fits in what is left of the current message.
    [[nodiscard]] int length_prefix() {
        const std::uint64_t length = raw_varint();
        const int left = m_in.BytesUntilLimit();
        if (length > static_cast<std::uint64_t>(left))
            malformed("length " + std::to_string(length) + " runs past the end (" + std::to_string(left)
                      + " bytes left)");
        return static_cast<int>(length);
    }
    template <class ReadElement>
    void repeated(WireType element, ReadElement read_element) {
        if (m_type != WireType::length_delimited) {
            expect_type(element);
            read_element();
            return;
        }
        const auto limit = m_in.PushLimit(length_prefix());
        while (m_in.BytesUntilLimit() > 0) read_element();
        m_in.PopLimit(limit);
    }

    std::string_view m_bytes;
    google::protobuf::io::CodedInputStream m_in;
    std::size_t m_file_offset;
    /// Where the field being read starts, in m_bytes.
    std::size_t m_field_start = 0;
    std::string m_location;
    bool m_sniffing = false;
    std::uint32_t m_field = 0;
    WireType m_type = WireType::varint;
};

inline void WireReader::skip() {
    switch (m_type) {
        case WireType::varint: (void)raw_varint(); return;
        case WireType::fixed64:
            if (!m_in.Skip(fixed64_bytes)) malformed("truncated field");
            return;
        case WireType::length_delimited: (void)length_delimited(); return;
        case WireType::fixed32:
            if (!m_in.Skip(fixed32_bytes)) malformed("truncated field");
            return;
    }
    malformed("unsupported wire type " + std::to_string(static_cast<unsigned>(m_type)) + " in field "
              + std::to_string(m_field));
}

}  // namespace rlflow::rewrite::detail
