// SPDX-License-Identifier: BSL-1.0
#pragma once

// The three pieces of the Erlang runtime that RabbitMQ's consistent-hash exchange routes with,
// ported so that the in-memory broker picks the queue the real broker picks. Private to the
// in-memory broker (consistent_hash_ring.hpp).
//
// - `term_hash`: `erlang:phash2/1` (ERTS make_hash2) for the terms a message gives the
//   exchange: binaries, atoms, integers, floats, tuples and proper lists.
// - `exs1024`: OTP's `rand` module with the `exs1024` algorithm (xorshift1024*), seeded from a
//   triple as `rand:seed_s(exs1024, {K, K, K})` does, and its `uniform_s/1`.
// - `jump_consistent_hash`: the plugin's jump consistent hash (Lamping and Veach), which draws
//   from that generator.
//
// Written from the algorithms in the Erlang/OTP 25 sources (erts/emulator/beam/utils.c,
// lib/stdlib/src/rand.erl) and rabbit_exchange_type_consistent_hash.erl at v3.10.8. phash2 is
// documented to be the same on every ERTS version and platform. The unit test
// tests/unit/transport/in_memory/consistent_hash_exchange.cpp compares every piece with values
// that Erlang/OTP 25.2.3 (Debian 12's, the test broker's) computed.

#include <letterbox/config.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

/// `erlang:phash2/1`, fed one term at a time in the order make_hash2 walks them: a tuple's
/// arity first, then each element in order, depth first; a list's elements in order, then its
/// end (`nil()`). The result is the same as phash2 of the whole term.
class term_hash {
public:
    void atom(std::string_view name) noexcept {
        const std::uint32_t h = atom_hash(name);
        if (hash_ == 0) // make_hash2 takes an atom's own hash as is when nothing came before
            hash_ = h;
        else
            mix_in(h, 0, c3);
    }

    void integer(std::int64_t v) noexcept {
        if (v >= -(std::int64_t{1} << 27) && v < (std::int64_t{1} << 27)) {
            const auto y = static_cast<std::int32_t>(v);
            if (y < 0) // negative numbers are mixed twice (as the runtime does)
                mix_in(static_cast<std::uint32_t>(-y), 0, c1);
            mix_in(static_cast<std::uint32_t>(y), 0, c1);
            return;
        }
        // Beyond 28 bits the runtime hashes the magnitude's 32-bit halves, the same on 32- and
        // 64-bit machines, with the sign in the constant.
        const std::uint64_t m = v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v)
                                      : static_cast<std::uint64_t>(v);
        mix_in(static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(m >> 32),
               v < 0 ? c10 : c11);
    }

    /// An integer that may pass 2^63 (a timestamp, which AMQP sends unsigned).
    void unsigned_integer(std::uint64_t v) noexcept {
        if (v < (std::uint64_t{1} << 63))
            integer(static_cast<std::int64_t>(v));
        else
            mix_in(static_cast<std::uint32_t>(v), static_cast<std::uint32_t>(v >> 32), c11);
    }

    void binary(std::string_view bytes) noexcept {
        const std::uint32_t con = c13 + hash_;
        hash_ = bytes.empty() ? con : block_hash(bytes, con);
    }

    void float64(double d) noexcept {
        if (d == 0.0)
            d = 0.0; // -0.0 hashes as 0.0
        const auto bits = std::bit_cast<std::uint64_t>(d);
        mix_in(static_cast<std::uint32_t>(bits >> 32), static_cast<std::uint32_t>(bits), c12);
    }

    void tuple(std::uint32_t arity) noexcept { mix_in(arity, 0, c9); }

    void nil() noexcept {
        if (hash_ == 0)
            hash_ = 3468870702U;
        else
            mix_in(2, 0, c2); // NIL_DEF
    }

    /// phash2's result: the hash in its default range, 0 to 2^27 - 1.
    std::uint32_t phash2() const noexcept { return hash_ & ((std::uint32_t{1} << 27) - 1); }

private:
    // The golden ratio (HCONST) and its multiples the terms above use: (HCONST * n) mod 2^32.
    static constexpr std::uint32_t c1 = 0x9e3779b9U;
    static constexpr std::uint32_t c2 = 0x3c6ef372U;
    static constexpr std::uint32_t c3 = 0xdaa66d2bU;
    static constexpr std::uint32_t c9 = 0x8ff34781U;
    static constexpr std::uint32_t c10 = 0x2e2ac13aU;
    static constexpr std::uint32_t c11 = 0xcc623af3U;
    static constexpr std::uint32_t c12 = 0x6a99b4acU;
    static constexpr std::uint32_t c13 = 0x08d12e65U;

    // Bob Jenkins' 96-bit mix.
    static void mix(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) noexcept {
        a -= b, a -= c, a ^= c >> 13;
        b -= c, b -= a, b ^= a << 8;
        c -= a, c -= b, c ^= b >> 13;
        a -= b, a -= c, a ^= c >> 12;
        b -= c, b -= a, b ^= a << 16;
        c -= a, c -= b, c ^= b >> 5;
        a -= b, a -= c, a ^= c >> 3;
        b -= c, b -= a, b ^= a << 10;
        c -= a, c -= b, c ^= b >> 15;
    }

    void mix_in(std::uint32_t x, std::uint32_t y, std::uint32_t k) noexcept {
        std::uint32_t a = k + x;
        std::uint32_t b = k + y;
        mix(a, b, hash_);
    }

    // Jenkins' lookup2 over the bytes, 12 at a time, little-endian words.
    static std::uint32_t block_hash(std::string_view bytes, std::uint32_t init) noexcept {
        const auto byte = [&](std::size_t i) {
            return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]));
        };
        const auto word = [&](std::size_t i) {
            return byte(i) | byte(i + 1) << 8 | byte(i + 2) << 16 | byte(i + 3) << 24;
        };
        std::uint32_t a = c1;
        std::uint32_t b = c1;
        std::uint32_t c = init;
        std::size_t i = 0;
        for (; bytes.size() - i >= 12; i += 12) {
            a += word(i);
            b += word(i + 4);
            c += word(i + 8);
            mix(a, b, c);
        }
        c += static_cast<std::uint32_t>(bytes.size());
        // The last 0 to 11 bytes; c's lowest byte holds the length.
        std::array<std::uint32_t*, 3> parts = {&a, &b, &c};
        for (std::size_t j = i; j < bytes.size(); ++j) {
            const std::size_t at = j - i;
            const unsigned shift = 8U * static_cast<unsigned>(at % 4) + (at >= 8 ? 8U : 0U);
            *parts[at / 4] += byte(j) << shift;
        }
        mix(a, b, c);
        return c;
    }

    // The runtime's atom table hash (hashpjw) of a Latin-1 name.
    static std::uint32_t atom_hash(std::string_view name) noexcept {
        std::uint32_t h = 0;
        for (const char ch : name) {
            h = (h << 4) + static_cast<unsigned char>(ch);
            if (const std::uint32_t g = h & 0xf0000000U; g != 0) {
                h ^= g >> 24;
                h ^= g;
            }
        }
        return h;
    }

    std::uint32_t hash_ = 0;
};

/// OTP `rand`'s `exs1024` algorithm (xorshift1024*) as `rand:seed_s(exs1024, {A, A, A})`
/// seeds it; `uniform()` is `rand:uniform_s/1`.
class exs1024 {
public:
    explicit exs1024(std::uint64_t a) noexcept {
        // rand's seed from a triple: three 21-bit products, then 16 steps of xorshift64*.
        constexpr std::uint64_t mask21 = (std::uint64_t{1} << 21) - 1;
        const std::uint64_t b1 = (((a & mask21) + 1) * 2097131) & mask21;
        const std::uint64_t b2 = (((a & mask21) + 1) * 2097133) & mask21;
        const std::uint64_t b3 = (((a & mask21) + 1) * 2097143) & mask21;
        std::uint64_t r = b1 << 43 | b2 << 22 | b3 << 1 | 1;
        // rand keeps the 16 words as a list built by prepending, so the last one made comes
        // first: s_[0] is the head.
        for (std::size_t i = 16; i-- > 0;) {
            r ^= r >> 12;
            r ^= r << 25;
            r ^= r >> 27;
            s_[i] = r * 2685821657736338717ULL;
        }
    }

    std::uint64_t next() noexcept {
        const std::uint64_t s0 = s_[p_];
        p_ = (p_ + 1) & 15;
        std::uint64_t s1 = s_[p_];
        s1 ^= s1 << 31;
        s_[p_] = s1 ^ (s1 >> 11) ^ s0 ^ (s0 >> 30);
        return s_[p_] * 1181783497276652981ULL;
    }

    /// A float in [0, 1): the top 53 bits of the next word, times 2^-53.
    double uniform() noexcept { return static_cast<double>(next()) * 0x1.0p-64; }

    /// The state word at `i` of rand's list (for the tests).
    std::uint64_t word(std::size_t i) const noexcept { return s_[(p_ + i) & 15]; }

private:
    std::array<std::uint64_t, 16> s_{};
    std::size_t p_ = 0;
};

/// The bucket, 0 to `buckets - 1`, that rabbit_exchange_type_consistent_hash's
/// `jump_consistent_hash` picks for the integer `key` (a phash2); `buckets` is at least 1.
inline std::uint64_t jump_consistent_hash(std::uint32_t key, std::uint64_t buckets) noexcept {
    if (buckets <= 1)
        return 0;
    exs1024 g(key);
    std::int64_t b = -1;
    std::uint64_t j = 0;
    while (j < buckets) {
        b = static_cast<std::int64_t>(j);
        const double r = g.uniform();
        // Erlang computes trunc((B + 1) / R). R is 0.0 once in 2^53 draws, where Erlang fails
        // with badarith; the model ends the walk instead.
        const double f = r == 0.0 ? 0x1.0p64 : static_cast<double>(b + 1) / r;
        j = f >= 0x1.0p63 ? buckets : static_cast<std::uint64_t>(f);
    }
    return static_cast<std::uint64_t>(b);
}

} // namespace letterbox::in_memory::detail
