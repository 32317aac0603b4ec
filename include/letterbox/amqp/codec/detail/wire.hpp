// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec::detail {

/// Reads AMQP wire primitives (network byte order) from a byte range it does not own.
///
/// Every length is compared with what is left (`n <= remaining()`), never added to an offset,
/// so no length field can wrap an index or make a read run past the end (GHSA-jgjf-7fwf-f3c7).
/// The first failure sticks: later reads return zeros and empty views, and `error()` keeps the
/// first error. Nothing here allocates.
class wire_reader {
public:
    explicit wire_reader(std::string_view in) noexcept
        : in_(in) {}

    bool ok() const noexcept { return !ec_; }
    std::error_code error() const noexcept { return ec_; }
    std::size_t remaining() const noexcept { return in_.size(); }
    bool empty() const noexcept { return in_.empty(); }

    /// Records `e` unless an earlier error is already recorded, and stops reading.
    void fail(std::error_code e) noexcept {
        if (!ec_)
            ec_ = e;
        in_ = {};
    }
    void fail(errc e) noexcept { fail(make_error_code(e)); }

    /// The next `n` bytes, or an empty view and `errc::frame_error` when fewer are left.
    std::string_view take(std::size_t n) noexcept {
        if (ec_)
            return {};
        if (n > in_.size()) {
            fail(errc::frame_error);
            return {};
        }
        const auto out = in_.substr(0, n);
        in_.remove_prefix(n);
        return out;
    }

    std::uint8_t u8() noexcept {
        const auto b = take(1);
        return b.empty() ? 0 : static_cast<std::uint8_t>(b[0]);
    }
    std::uint16_t u16() noexcept { return static_cast<std::uint16_t>(big_endian(take(2), 2)); }
    std::uint32_t u32() noexcept { return static_cast<std::uint32_t>(big_endian(take(4), 4)); }
    std::uint64_t u64() noexcept { return big_endian(take(8), 8); }

    /// A shortstr: one length octet, then at most 255 bytes.
    std::string_view shortstr() noexcept {
        const std::size_t n = u8();
        return take(n);
    }
    /// A longstr: a 32-bit length, then that many bytes (checked against what is left).
    std::string_view longstr() noexcept {
        const std::size_t n = u32();
        return take(n);
    }

private:
    static std::uint64_t big_endian(std::string_view bytes, std::size_t width) noexcept {
        if (bytes.size() != width)
            return 0;
        std::uint64_t v = 0;
        for (const char c : bytes)
            v = (v << 8U) | static_cast<unsigned char>(c);
        return v;
    }

    std::string_view in_;
    std::error_code ec_{};
};

/// Appends AMQP wire primitives to a string. The first failure sticks (later writes are
/// dropped) so that a caller can write a whole structure and check once.
class wire_writer {
public:
    explicit wire_writer(std::string& out) noexcept
        : out_(out) {}

    bool ok() const noexcept { return !ec_; }
    std::error_code error() const noexcept { return ec_; }
    std::size_t size() const noexcept { return out_.size(); }

    void fail(errc e) noexcept {
        if (!ec_)
            ec_ = make_error_code(e);
    }

    void u8(std::uint8_t v) {
        if (!ec_)
            out_.push_back(static_cast<char>(v));
    }
    void u16(std::uint16_t v) { put(v, 2); }
    void u32(std::uint32_t v) { put(v, 4); }
    void u64(std::uint64_t v) { put(v, 8); }
    void bytes(std::string_view b) {
        if (!ec_)
            out_.append(b);
    }

    /// A shortstr; a string longer than 255 bytes is refused with `errc::invalid_argument`
    /// (S-AMQP-18: never truncate, never wrap the length octet).
    void shortstr(std::string_view s) {
        if (s.size() > 255) {
            fail(errc::invalid_argument);
            return;
        }
        u8(static_cast<std::uint8_t>(s.size()));
        bytes(s);
    }
    /// A longstr; more than 2^32 - 1 bytes is refused with `errc::invalid_argument`.
    void longstr(std::string_view s) {
        if (s.size() > std::numeric_limits<std::uint32_t>::max()) {
            fail(errc::invalid_argument);
            return;
        }
        u32(static_cast<std::uint32_t>(s.size()));
        bytes(s);
    }

    /// Overwrites the four bytes at `at` (written earlier as a placeholder) with `v`.
    void patch_u32(std::size_t at, std::uint32_t v) noexcept {
        if (ec_ || at + 4 > out_.size())
            return;
        for (int i = 3; i >= 0; --i) {
            out_[at + static_cast<std::size_t>(i)] = static_cast<char>(v & 0xFFU);
            v >>= 8U;
        }
    }

private:
    void put(std::uint64_t v, int width) {
        if (ec_)
            return;
        for (int shift = (width - 1) * 8; shift >= 0; shift -= 8)
            out_.push_back(static_cast<char>((v >> static_cast<unsigned>(shift)) & 0xFFU));
    }

    std::string& out_;
    std::error_code ec_{};
};

} // namespace letterbox::amqp::codec::detail
