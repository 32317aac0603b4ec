// SPDX-License-Identifier: BSL-1.0
#pragma once

// Which policy applies to a queue, as RabbitMQ decides (rabbit_policy.erl matches/3,
// rabbit_queue_type.erl is_policy_applicable): private to lint/.

#include <letterbox/config.hpp>
#include <letterbox/lint/detail/queue_facts.hpp>
#include <letterbox/lint/policy.hpp>

#include <cstddef>
#include <exception>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

/// Patterns longer than this are not compiled (a definitions file is untrusted input).
inline constexpr std::size_t max_policy_pattern = 1000;

/// How patterns are compiled: ECMAScript (close to the PCRE of Erlang's `re`), and with
/// libstdc++ in its polynomial mode, which matches without backtracking (no exponential time
/// on a pattern such as `(a*)*b`) and refuses back-references.
inline constexpr std::regex::flag_type policy_regex_flags = std::regex::ECMAScript
#if defined(__GLIBCXX__)
                                                            | std::regex_constants::__polynomial
#endif
    ;

/// Whether a policy with `apply_to` can apply to a queue of this kind.
inline bool applies_to_kind(std::string_view apply_to, queue_kind k) noexcept {
    if (apply_to == "all" || apply_to == "queues")
        return true;
    if (apply_to == "classic_queues")
        return k == queue_kind::classic;
    if (apply_to == "quorum_queues")
        return k == queue_kind::quorum;
    if (apply_to == "streams")
        return k == queue_kind::stream;
    return false;
}

/// Whether queues of this kind support the policy key (`unsupported_policies` of the queue
/// type's capabilities; docs: "Policies containing QQ and CMQ rules are ignored", #7350).
inline bool supports_key(queue_kind k, std::string_view key) noexcept {
    // The `unsupported_policies` of rabbit_classic_queue and rabbit_quorum_queue's
    // capabilities (v3.10.0 and v4.0.0 alike, but for the in-memory limits 4.0 added).
    constexpr std::string_view stream_keys[] = {"max-age", "stream-max-segment-size-bytes",
                                                "initial-cluster-size"};
    constexpr std::string_view classic_unsupported[] = {"delivery-limit", "dead-letter-strategy",
                                                        "max-in-memory-length",
                                                        "max-in-memory-bytes", "target-group-size"};
    constexpr std::string_view quorum_unsupported[] = {
        "max-priority", "queue-mode", "single-active-consumer", "queue-master-locator"};
    auto in = [&](const auto& list) {
        for (auto s : list)
            if (s == key)
                return true;
        return false;
    };
    switch (k) {
    case queue_kind::classic:
        return !in(classic_unsupported) && !in(stream_keys);
    case queue_kind::quorum:
        return !in(quorum_unsupported) && !in(stream_keys) && !key.starts_with("ha-");
    case queue_kind::stream:
        return true;
    }
    return true;
}

/// The first key of `p` that queues of kind `k` do not support, empty when none.
inline std::string_view unsupported_key(const policy& p, queue_kind k) {
    for (const auto& [key, value] : p.definition)
        if (!supports_key(k, key))
            return key;
    return {};
}

/// The policies of a topology with their patterns compiled once.
class policy_set {
public:
    explicit policy_set(std::span<const policy> policies) {
        entries_.reserve(policies.size());
        for (const auto& p : policies) {
            entry e{&p, std::nullopt};
            if (p.pattern.size() <= max_policy_pattern) {
                try {
                    e.re.emplace(p.pattern, policy_regex_flags);
                } catch (const std::exception&) {
                    e.re.reset();
                }
            }
            entries_.push_back(std::move(e));
        }
    }

    /// What applies to a queue: the user policy and the operator policy (each the one of
    /// highest priority, the first listed on a tie, whose pattern matches the name, whose
    /// apply-to fits and whose keys the queue's type all supports), and the policies that
    /// match but do not apply for an unsupported key while outranking the one that does.
    struct resolution {
        const policy* user = nullptr;
        const policy* op = nullptr;
        std::vector<const policy*> ignored{};
    };

    resolution resolve(std::string_view name, queue_kind k) const {
        resolution r;
        std::vector<const policy*> unsupported;
        for (const auto& e : entries_) {
            const policy& p = *e.p;
            if (!applies_to_kind(p.apply_to, k) || !matches(e, name))
                continue;
            if (!unsupported_key(p, k).empty()) {
                unsupported.push_back(&p);
                continue;
            }
            const policy*& best = p.operator_policy ? r.op : r.user;
            if (!best || p.priority > best->priority)
                best = &p;
        }
        for (const policy* p : unsupported) {
            const policy* winner = p->operator_policy ? r.op : r.user;
            if (!winner || p->priority >= winner->priority)
                r.ignored.push_back(p);
        }
        return r;
    }

    /// The policies whose pattern could not be compiled, in their order.
    std::vector<const policy*> invalid() const {
        std::vector<const policy*> out;
        for (const auto& e : entries_)
            if (!e.re)
                out.push_back(e.p);
        return out;
    }

private:
    struct entry {
        const policy* p;
        std::optional<std::regex> re;
    };

    static bool matches(const entry& e, std::string_view name) {
        if (!e.re)
            return false;
        try {
            return std::regex_search(name.begin(), name.end(), *e.re);
        } catch (const std::exception&) {
            return false; // std::regex_error (complexity, stack): treated as no match
        }
    }

    std::vector<entry> entries_;
};

} // namespace letterbox::lint::detail
