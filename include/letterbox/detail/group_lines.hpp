// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// The waiting lines of message groups: which item of which group may run next. One line per
/// group that has an item running or waiting, in arrival order; at most one item per group
/// runs, and at most `limit` groups run at once (0: no bound). Groups whose next item may run
/// wait for a free place in the order they became ready, so a busy group cannot starve the
/// others. An admission or a finish frees at most one place or fills at most one line, so each
/// starts at most one item. Not thread-safe: the consumer uses it from the transport's executor
/// only.
template <class Item>
class group_lines {
public:
    explicit group_lines(std::size_t limit)
        : limit_(limit) {}

    /// Adds `item` at the end of `group`'s line; returns what may run now, if anything.
    std::optional<Item> admit(const std::string& group, Item item) {
        auto& l = lines_[group];
        l.waiting.push_back(std::move(item));
        if (!l.running && l.waiting.size() == 1)
            ready_.push_back(group);
        return next();
    }

    /// The running item of `group` is finished; returns what may run now, if anything.
    std::optional<Item> finish(const std::string& group) {
        const auto it = lines_.find(group);
        if (it == lines_.end() || !it->second.running)
            return std::nullopt;
        it->second.running = false;
        --running_;
        if (it->second.waiting.empty())
            lines_.erase(it);
        else
            ready_.push_back(group);
        return next();
    }

    /// Groups with an item running.
    std::size_t running() const noexcept { return running_; }
    /// Items waiting for their group or for a place.
    std::size_t waiting() const noexcept {
        std::size_t n = 0;
        for (const auto& [group, l] : lines_)
            n += l.waiting.size();
        return n;
    }

private:
    struct line {
        std::deque<Item> waiting;
        bool running = false;
    };

    // The head of the first ready line, when a place is free.
    std::optional<Item> next() {
        if (ready_.empty() || (limit_ != 0 && running_ >= limit_))
            return std::nullopt;
        auto& l = lines_.at(ready_.front());
        ready_.pop_front();
        l.running = true;
        ++running_;
        Item item = std::move(l.waiting.front());
        l.waiting.pop_front();
        return item;
    }

    std::size_t limit_;
    std::size_t running_ = 0;
    std::unordered_map<std::string, line> lines_;
    std::deque<std::string> ready_;
};

} // namespace letterbox::detail
