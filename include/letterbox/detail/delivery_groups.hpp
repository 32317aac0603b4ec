// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/group_lines.hpp>
#include <letterbox/group_options.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// A consumer's message groups (`consumer_options::groups`): the line each delivery waits in,
/// and which deliveries may run. Not thread-safe: the consumer uses it from the transport's
/// executor only.
class delivery_groups {
public:
    using item = std::shared_ptr<const delivery>;

    /// At most `options.concurrency` groups at once, or `prefetch` when that is 0.
    delivery_groups(group_options options, std::size_t prefetch)
        : options_(std::move(options))
        , lines_(options_.concurrency > 0 ? options_.concurrency : prefetch) {}

    /// Whether a group waits for its head (`group_order::strict`).
    bool strict() const noexcept { return options_.order == group_order::strict; }

    /// Puts `d` at the end of its group's line. Returns false, admitting nothing, for a message
    /// without a group that the options refuse; else `start` is what may run now, if anything.
    bool admit(item d, std::optional<item>& start) {
        auto group = line_of(d->msg);
        if (!group)
            return false;
        groups_.emplace(place_of(*d), *group);
        start = lines_.admit(*group, std::move(d));
        return true;
    }

    /// `d` was settled: returns the next of its line, if it may run now.
    std::optional<item> settled(const delivery& d) {
        const auto it = groups_.find(place_of(d));
        if (it == groups_.end())
            return std::nullopt;
        auto next = lines_.finish(it->second);
        groups_.erase(it);
        return next;
    }

private:
    /// The line a message waits in: `=` and its key, or `#` and a number of its own (a message
    /// without a key, when `missing_group_key::own_group`); none to refuse it.
    std::optional<std::string> line_of(const message& m) {
        std::optional<std::string> key;
        try {
            key = options_.key(m);
        } catch (...) { // a key function that throws finds no key
        }
        if (key && !key->empty())
            return "=" + *key;
        if (options_.on_missing_key == missing_group_key::refuse)
            return std::nullopt;
        return "#" + std::to_string(++own_groups_);
    }

    /// What identifies a delivery while it is unsettled.
    static std::pair<std::uint64_t, std::uint64_t> place_of(const delivery& d) noexcept {
        return {d.channel, d.delivery_tag};
    }

    group_options options_;
    group_lines<item> lines_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> groups_; // of each admitted
    std::uint64_t own_groups_ = 0; // the number of the last group of its own
};

} // namespace letterbox::detail
