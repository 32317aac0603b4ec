// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <libpq-fe.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// The rows of a statement run by `connection::exec` (a `PGresult`, in text format), or an empty
/// result when the statement failed. Columns are read by index, in the order of the SELECT or
/// RETURNING list.
class result {
public:
    result() noexcept = default;
    /// Takes ownership of `r` (may be null).
    explicit result(PGresult* r) noexcept
        : r_(r) {}

    explicit operator bool() const noexcept { return r_ != nullptr; }
    PGresult* native_handle() const noexcept { return r_.get(); }

    /// Rows returned (0 for a statement that returns none).
    std::size_t rows() const noexcept {
        return r_ ? static_cast<std::size_t>(PQntuples(r_.get())) : 0;
    }
    /// Rows the INSERT, UPDATE or DELETE changed (its command tag's count).
    std::size_t affected() const noexcept {
        if (!r_)
            return 0;
        const std::string_view tag = PQcmdTuples(r_.get());
        std::size_t n = 0;
        std::from_chars(tag.data(), tag.data() + tag.size(), n);
        return n;
    }
    bool is_null(std::size_t row, int column) const noexcept {
        return PQgetisnull(r_.get(), static_cast<int>(row), column) != 0;
    }
    /// The value's text; empty for NULL. Valid while this result lives.
    std::string_view text(std::size_t row, int column) const noexcept {
        const int r = static_cast<int>(row);
        return {PQgetvalue(r_.get(), r, column),
                static_cast<std::size_t>(PQgetlength(r_.get(), r, column))};
    }
    /// The value as a 64-bit integer; `std::nullopt` for NULL or text that is not one.
    std::optional<std::int64_t> int64(std::size_t row, int column) const noexcept {
        if (is_null(row, column))
            return std::nullopt;
        const auto t = text(row, column);
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec != std::errc{} || end != t.data() + t.size())
            return std::nullopt;
        return v;
    }
    /// A `bytea` value (the server's hex text `\x...`, decoded); `std::nullopt` for NULL or text
    /// that is not that encoding.
    std::optional<std::string> bytes(std::size_t row, int column) const {
        if (is_null(row, column))
            return std::nullopt;
        const auto t = text(row, column);
        if (t.size() < 2 || t[0] != '\\' || t[1] != 'x' || t.size() % 2 != 0)
            return std::nullopt;
        std::string out;
        out.reserve((t.size() - 2) / 2);
        for (std::size_t i = 2; i < t.size(); i += 2) {
            const int hi = hex_digit(t[i]);
            const int lo = hex_digit(t[i + 1]);
            if (hi < 0 || lo < 0)
                return std::nullopt;
            out.push_back(static_cast<char>((hi << 4) | lo));
        }
        return out;
    }

private:
    static int hex_digit(char c) noexcept {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    }
    struct deleter {
        void operator()(PGresult* r) const noexcept { PQclear(r); }
    };
    std::unique_ptr<PGresult, deleter> r_;
};

} // namespace letterbox::postgres
