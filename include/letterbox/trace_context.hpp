// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A W3C Trace Context `traceparent` (version 00), as a message carries it in its
/// `traceparent` header: the trace the message belongs to, the span that sent it, and the
/// trace flags (bit 0: sampled). What an OpenTelemetry SDK needs to continue the trace when the
/// message is consumed (docs/tracing.md); letterbox itself only carries it (`caused_by`).
struct trace_context {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};
    std::uint8_t flags = 0;

    /// Parses `00-<32 hex>-<16 hex>-<2 hex>` (lower-case hex, as the specification writes it).
    /// Returns nothing for anything else, or for an all-zero trace or span id, which the
    /// specification makes invalid. A later version's longer header is read by its first 55
    /// characters, as the specification asks.
    static std::optional<trace_context> parse(std::string_view text) noexcept {
        const auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9')
                return c - '0';
            if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
            return -1;
        };
        const auto bytes = [&](std::string_view digits, std::uint8_t* out) {
            for (std::size_t i = 0; i < digits.size(); i += 2) {
                const int hi = hex(digits[i]);
                const int lo = hex(digits[i + 1]);
                if (hi < 0 || lo < 0)
                    return false;
                out[i / 2] = static_cast<std::uint8_t>(hi * 16 + lo);
            }
            return true;
        };
        if (text.size() < 55 || text[2] != '-' || text[35] != '-' || text[52] != '-')
            return std::nullopt;
        std::uint8_t version = 0;
        if (!bytes(text.substr(0, 2), &version) || version == 0xff ||
            (version == 0 && text.size() != 55) || (text.size() > 55 && text[55] != '-'))
            return std::nullopt;
        trace_context t;
        if (!bytes(text.substr(3, 32), t.trace_id.data()) ||
            !bytes(text.substr(36, 16), t.span_id.data()) || !bytes(text.substr(53, 2), &t.flags))
            return std::nullopt;
        if (all_zero(t.trace_id) || all_zero(t.span_id))
            return std::nullopt;
        return t;
    }

    /// The `traceparent` text: `00-<trace id>-<span id>-<flags>`, in lower-case hex.
    std::string to_string() const {
        std::string text = "00-";
        append_hex(text, trace_id.data(), trace_id.size());
        text += '-';
        append_hex(text, span_id.data(), span_id.size());
        text += '-';
        append_hex(text, &flags, 1);
        return text;
    }

    /// Whether the trace is sampled (flag bit 0).
    bool sampled() const noexcept { return (flags & 1) != 0; }

    friend bool operator==(const trace_context&, const trace_context&) = default;

private:
    template <std::size_t N>
    static bool all_zero(const std::array<std::uint8_t, N>& a) noexcept {
        for (const auto b : a)
            if (b != 0)
                return false;
        return true;
    }

    static void append_hex(std::string& out, const std::uint8_t* data, std::size_t n) {
        constexpr std::string_view digits = "0123456789abcdef";
        for (std::size_t i = 0; i < n; ++i) {
            out += digits[data[i] >> 4];
            out += digits[data[i] & 0x0f];
        }
    }
};

/// The trace context `m` carries in its `traceparent` header, if it carries a valid one.
inline std::optional<trace_context> trace_context_of(const message& m) {
    const auto text = m.headers.get<std::string>(headers::traceparent);
    return text ? trace_context::parse(*text) : std::nullopt;
}

} // namespace letterbox
