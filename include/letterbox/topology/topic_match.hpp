// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

namespace detail {

// Words are separated by '.'. The empty string has zero words; every other string has one more
// word than it has dots, and words may be empty ("a..b" has three). A position is the offset
// of a word's first character; `end` (size + 1) is one past the last word.
struct topic_words {
    std::string_view s;

    std::size_t begin() const noexcept { return s.empty() ? end() : 0; }
    std::size_t end() const noexcept { return s.size() + 1; }
    std::size_t next(std::size_t pos) const noexcept {
        auto dot = s.find('.', pos);
        return dot == std::string_view::npos ? end() : dot + 1;
    }
    std::string_view word(std::size_t pos) const noexcept {
        auto dot = s.find('.', pos);
        return s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    }
};

} // namespace detail

/// Whether a topic-exchange binding `pattern` matches a routing `key`, as RabbitMQ decides.
///
/// `*` matches exactly one word and `#` matches zero or more words; both are wildcards only
/// when they are a whole word (`simply#carrots` is literal). `orders.#` matches `orders`;
/// `orders.*` does not match `orders.a.b`; the empty key matches `#` and the empty pattern.
///
/// Runs in O(words(pattern) x words(key)) time in the worst case and allocates nothing: it is
/// glob matching over words, backtracking only to the most recent `#`.
inline bool topic_matches(std::string_view pattern, std::string_view key) noexcept {
    const detail::topic_words p{pattern};
    const detail::topic_words k{key};
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::size_t pi = p.begin();
    std::size_t ki = k.begin();
    std::size_t star_p = none;
    std::size_t star_k = none;
    while (ki != k.end()) {
        if (pi != p.end()) {
            const auto pw = p.word(pi);
            if (pw == "#") {
                star_p = pi;
                star_k = ki;
                pi = p.next(pi);
                continue;
            }
            if (pw == "*" || pw == k.word(ki)) {
                pi = p.next(pi);
                ki = k.next(ki);
                continue;
            }
        }
        if (star_p == none)
            return false;
        // Let the last '#' absorb one more key word and retry from there.
        pi = p.next(star_p);
        star_k = k.next(star_k);
        ki = star_k;
    }
    while (pi != p.end() && p.word(pi) == "#")
        pi = p.next(pi);
    return pi == p.end();
}

/// How many words of `pattern` are exactly `#`. RabbitMQ 4.3 refuses bindings with more
/// than two (see `broker_profile::max_topic_hash_words`).
inline std::size_t topic_hash_words(std::string_view pattern) noexcept {
    const detail::topic_words p{pattern};
    std::size_t n = 0;
    for (auto i = p.begin(); i != p.end(); i = p.next(i))
        n += p.word(i) == "#";
    return n;
}

} // namespace letterbox::topology
