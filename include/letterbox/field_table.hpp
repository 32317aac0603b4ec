// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

class field_value;

/// An AMQP decimal: `value * 10^-scale`.
struct decimal {
    std::uint8_t scale = 0;
    std::int32_t value = 0;
    friend bool operator==(const decimal&, const decimal&) = default;
};

/// An AMQP timestamp: POSIX seconds.
using timestamp = std::chrono::sys_seconds;

/// An AMQP byte array (type `x`): bytes that are not text.
using byte_array = std::vector<std::byte>;

/// An AMQP field array (type `A`).
using field_array = std::vector<field_value>;

/// An AMQP field table (type `F`): named values in insertion order.
///
/// Names are unique: `set` replaces an existing entry in place. Lookup is linear, which is
/// the right trade for the handful of entries messages carry. Comparison is order-sensitive,
/// like the wire encoding.
class field_table {
public:
    using entry = std::pair<std::string, field_value>;
    using const_iterator = std::vector<entry>::const_iterator;

    field_table() = default;
    field_table(std::initializer_list<entry> entries);
    field_table(const field_table&);
    field_table(field_table&&) noexcept;
    field_table& operator=(const field_table&);
    field_table& operator=(field_table&&) noexcept;
    ~field_table();

    /// The value named `name`, or null.
    const field_value* find(std::string_view name) const noexcept;
    field_value* find(std::string_view name) noexcept;
    bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }

    /// Sets `name` to `value`, replacing an existing entry in place or appending a new one.
    field_table& set(std::string_view name, field_value value);
    /// Removes `name`; returns whether it was present.
    bool erase(std::string_view name) noexcept;

    /// Typed access: the value if present and holding exactly `T`, else `std::nullopt`.
    template <class T>
    std::optional<T> get(std::string_view name) const;

    // Defined after `field_value`, which must be complete for them (clang instantiates eagerly).
    std::size_t size() const noexcept;
    bool empty() const noexcept;
    const_iterator begin() const noexcept;
    const_iterator end() const noexcept;
    void clear() noexcept;

    friend bool operator==(const field_table&, const field_table&);

private:
    std::vector<entry> entries_;
};

/// One AMQP field value: every type of the RabbitMQ field-table grammar.
///
/// `std::monostate` is the void value (`V`); `std::string` is a longstr (`S`) and may hold
/// arbitrary bytes. Unsigned 64-bit integers are not offered because RabbitMQ does not accept
/// them in tables.
class field_value {
public:
    using variant_type =
        std::variant<std::monostate, bool, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t,
                     std::int32_t, std::uint32_t, std::int64_t, float, double, decimal, std::string,
                     timestamp, byte_array, field_array, field_table>;

    field_value() = default;
    field_value(const field_value&);
    field_value(field_value&&) noexcept;
    field_value& operator=(const field_value&);
    field_value& operator=(field_value&&) noexcept;
    ~field_value();
    field_value(std::nullptr_t) {}
    field_value(bool v)
        : v_(v) {}
    field_value(std::int8_t v)
        : v_(v) {}
    field_value(std::uint8_t v)
        : v_(v) {}
    field_value(std::int16_t v)
        : v_(v) {}
    field_value(std::uint16_t v)
        : v_(v) {}
    field_value(std::int32_t v)
        : v_(v) {}
    field_value(std::uint32_t v)
        : v_(v) {}
    field_value(std::int64_t v)
        : v_(v) {}
    /// `long long` and `long` map to a signed 64-bit long, as RabbitMQ writes counts.
    template <class I>
        requires(std::is_same_v<I, long> || std::is_same_v<I, long long>)
    &&(!std::is_same_v<I, std::int64_t>)field_value(I v)
        : v_(static_cast<std::int64_t>(v)) {}
    field_value(float v)
        : v_(v) {}
    field_value(double v)
        : v_(v) {}
    field_value(decimal v)
        : v_(v) {}
    field_value(std::string v)
        : v_(std::move(v)) {}
    field_value(std::string_view v)
        : v_(std::string(v)) {}
    field_value(const char* v)
        : v_(std::string(v)) {}
    field_value(timestamp v)
        : v_(v) {}
    field_value(byte_array v)
        : v_(std::move(v)) {}
    field_value(field_array v)
        : v_(std::move(v)) {}
    field_value(field_table v)
        : v_(std::move(v)) {}

    const variant_type& variant() const noexcept { return v_; }
    variant_type& variant() noexcept { return v_; }

    template <class T>
    bool is() const noexcept {
        return std::holds_alternative<T>(v_);
    }
    template <class T>
    const T* get_if() const noexcept {
        return std::get_if<T>(&v_);
    }
    template <class T>
    T* get_if() noexcept {
        return std::get_if<T>(&v_);
    }
    bool is_void() const noexcept { return is<std::monostate>(); }

    /// The value as a signed 64-bit integer if it holds any integer type.
    std::optional<std::int64_t> as_integer() const noexcept;

    friend bool operator==(const field_value& a, const field_value& b);

private:
    variant_type v_;
};

inline std::size_t field_table::size() const noexcept {
    return entries_.size();
}
inline bool field_table::empty() const noexcept {
    return entries_.empty();
}
inline field_table::const_iterator field_table::begin() const noexcept {
    return entries_.begin();
}
inline field_table::const_iterator field_table::end() const noexcept {
    return entries_.end();
}
inline void field_table::clear() noexcept {
    entries_.clear();
}

template <class T>
std::optional<T> field_table::get(std::string_view name) const {
    if (const auto* v = find(name))
        if (const auto* p = v->get_if<T>())
            return *p;
    return std::nullopt;
}

/// Renders a field value as JSON for logs, dumps and the ops API. Integers and floats become
/// numbers, strings stay strings, void becomes null; the types JSON lacks are tagged objects:
/// `{"$timestamp": seconds}`, `{"$decimal": [scale, value]}`, `{"$bytes": "hex"}`.
/// (Templates, so that this header needs only <nlohmann/json_fwd.hpp>: the JSON type is complete
/// where a conversion is used.)
template <class Json>
    requires std::same_as<Json, nlohmann::json>
void to_json(Json& j, const field_value& v);

template <class Json>
    requires std::same_as<Json, nlohmann::json>
void to_json(Json& j, const field_table& t) {
    j = Json::object();
    for (const auto& [name, value] : t)
        to_json(j[name], value);
}

template <class Json>
    requires std::same_as<Json, nlohmann::json>
void to_json(Json& j, const field_value& v) {
    std::visit(
        [&j](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                j = nullptr;
            } else if constexpr (std::is_same_v<T, timestamp>) {
                j = {{"$timestamp", x.time_since_epoch().count()}};
            } else if constexpr (std::is_same_v<T, decimal>) {
                j = {{"$decimal", {x.scale, x.value}}};
            } else if constexpr (std::is_same_v<T, byte_array>) {
                static constexpr char digits[] = "0123456789abcdef";
                std::string hex;
                hex.reserve(x.size() * 2);
                for (std::byte b : x) {
                    hex.push_back(digits[std::to_integer<unsigned>(b) >> 4]);
                    hex.push_back(digits[std::to_integer<unsigned>(b) & 0xF]);
                }
                j = {{"$bytes", hex}};
            } else if constexpr (std::is_same_v<T, field_array>) {
                j = Json::array();
                for (const auto& e : x) {
                    Json item;
                    to_json(item, e);
                    j.push_back(std::move(item));
                }
            } else if constexpr (std::is_same_v<T, field_table>) {
                to_json(j, x);
            } else {
                j = x;
            }
        },
        v.variant());
}

} // namespace letterbox

#if LETTERBOX_HEADER_ONLY
#include <letterbox/impl/field_table.hpp>
#endif
