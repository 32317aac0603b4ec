// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/detail/field_codec.hpp>
#include <letterbox/amqp/codec/detail/method_fields.hpp>
#include <letterbox/amqp/codec/detail/wire.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {
namespace detail {

/// Writes method arguments. Consecutive bits are packed into one octet, low bit first, and a
/// ninth bit starts a new octet; any other argument ends the run (spec 4.2.5.2).
class argument_writer {
public:
    explicit argument_writer(wire_writer& w) noexcept
        : w_(w) {}

    void bit(bool b) {
        if (count_ == 8)
            flush();
        if (b)
            bits_ = static_cast<std::uint8_t>(bits_ | (1U << count_));
        ++count_;
    }
    void u8(std::uint8_t v) {
        flush();
        w_.u8(v);
    }
    void u16(std::uint16_t v) {
        flush();
        w_.u16(v);
    }
    void u32(std::uint32_t v) {
        flush();
        w_.u32(v);
    }
    void u64(std::uint64_t v) {
        flush();
        w_.u64(v);
    }
    void shortstr(const std::string& s) {
        flush();
        w_.shortstr(s);
    }
    void longstr(const std::string& s) {
        flush();
        w_.longstr(s);
    }
    void table(const field_table& t) {
        flush();
        encode_field_table(w_, t, 1);
    }
    void reserved_u16() { u16(0); }
    void reserved_shortstr() { shortstr({}); }
    void reserved_longstr() { longstr({}); }
    void reserved_bit() { bit(false); }

    /// Writes the pending bits; call once after the last argument.
    void flush() {
        if (count_ == 0)
            return;
        w_.u8(bits_);
        bits_ = 0;
        count_ = 0;
    }

private:
    wire_writer& w_;
    std::uint8_t bits_ = 0;
    unsigned count_ = 0;
};

/// Reads method arguments, mirroring `argument_writer`. Values of reserved arguments are read
/// (bounds-checked) and dropped.
class argument_reader {
public:
    explicit argument_reader(wire_reader& r) noexcept
        : r_(r) {}

    void bit(bool& b) {
        if (count_ == 0 || count_ == 8) {
            bits_ = r_.u8();
            count_ = 0;
        }
        b = ((bits_ >> count_) & 1U) != 0;
        ++count_;
    }
    void u8(std::uint8_t& v) {
        count_ = 0;
        v = r_.u8();
    }
    void u16(std::uint16_t& v) {
        count_ = 0;
        v = r_.u16();
    }
    void u32(std::uint32_t& v) {
        count_ = 0;
        v = r_.u32();
    }
    void u64(std::uint64_t& v) {
        count_ = 0;
        v = r_.u64();
    }
    void shortstr(std::string& s) {
        count_ = 0;
        s.assign(r_.shortstr());
    }
    void longstr(std::string& s) {
        count_ = 0;
        s.assign(r_.longstr());
    }
    void table(field_table& t) {
        count_ = 0;
        field_budget budget;
        t = decode_field_table(r_, 1, budget);
    }
    void reserved_u16() {
        count_ = 0;
        (void)r_.u16();
    }
    void reserved_shortstr() {
        count_ = 0;
        (void)r_.shortstr();
    }
    void reserved_longstr() {
        count_ = 0;
        (void)r_.longstr();
    }
    void reserved_bit() {
        bool ignored = false;
        bit(ignored);
    }

private:
    wire_reader& r_;
    std::uint8_t bits_ = 0;
    unsigned count_ = 0;
};

constexpr std::uint32_t method_key(std::uint16_t class_id, std::uint16_t method_id) noexcept {
    return (std::uint32_t{class_id} << 16U) | method_id;
}

template <std::size_t... I>
method decode_arguments(std::uint32_t key, wire_reader& r, bool& known, std::index_sequence<I...>) {
    method out;
    // One comparison per alternative; the first match decodes into that alternative.
    (void)((key == method_key(std::variant_alternative_t<I, method>::class_id,
                              std::variant_alternative_t<I, method>::method_id)
                ? (
                      known = true,
                      [&] {
                          auto& m = out.template emplace<I>();
                          argument_reader reader(r);
                          method_fields<std::variant_alternative_t<I, method>>::apply(reader, m);
                      }(),
                      true)
                : false) ||
           ...);
    return out;
}

} // namespace detail

inline std::error_code encode(const method& m, std::string& out) {
    const auto size = out.size();
    detail::wire_writer w(out);
    std::visit(
        [&w](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            w.u16(T::class_id);
            w.u16(T::method_id);
            detail::argument_writer args(w);
            detail::method_fields<T>::apply(args, x);
            args.flush();
        },
        m);
    if (!w.ok())
        out.resize(size);
    return w.error();
}

inline method decode_method(std::string_view payload, std::error_code& ec) {
    detail::wire_reader r(payload);
    const auto class_id = r.u16();
    const auto method_id = r.u16();
    if (!r.ok()) {
        ec = r.error();
        return {};
    }
    bool known = false;
    auto m = detail::decode_arguments(detail::method_key(class_id, method_id), r, known,
                                      std::make_index_sequence<std::variant_size_v<method>>{});
    if (!known) {
        ec = errc::command_invalid;
        return {};
    }
    if (r.ok() && !r.empty())
        r.fail(errc::frame_error); // bytes after the last argument
    ec = r.error();
    if (ec)
        return {};
    return m;
}

inline std::string_view name_of(const method& m) noexcept {
    return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::name; }, m);
}

inline std::uint16_t class_id_of(const method& m) noexcept {
    return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::class_id; }, m);
}

inline std::uint16_t method_id_of(const method& m) noexcept {
    return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::method_id; }, m);
}

inline bool has_content(const method& m) noexcept {
    return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::has_content; }, m);
}

} // namespace letterbox::amqp::codec
