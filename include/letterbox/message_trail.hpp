// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/relay_event.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The last messages a process published or received, without their bodies: the history that
/// `causal_tree` reads to show what happened to one conversation (docs/tracing.md), and that
/// the operations endpoint serves at `/conversations/{id}` (`ops::http_server::
/// set_message_trail`).
///
/// - **What it keeps.** Each message's id, type, routing, properties and headers, with its body
///   cleared (bodies hold business data, and a trail is for seeing who caused what). A message
///   recorded again (a redelivery, a republish after a lost confirm) is kept once.
/// - **How much.** At most `capacity` messages: the oldest go first.
/// - **Where from.** `record(m)`, or the observers: `relay_observer()` for
///   `relay_options::on_event` (the messages the broker confirmed), `consumer_observer()` for
///   `receive_endpoint_options::on_event` or `consumer_options::on_event` (the messages
///   delivered).
///
/// Thread safety: every member function may be called concurrently (relays, consumers and the
/// operations endpoint may run on different threads). The observers hold a pointer to the
/// trail, which must outlive them.
///
/// Example:
///
///     letterbox::message_trail trail;
///     relay_options o;
///     o.on_event = trail.relay_observer();
///     // ... later: what happened to the conversation `order_placed` began?
///     const auto id = letterbox::to_string(order_placed.id);
///     std::cout << letterbox::to_text(letterbox::causal_tree(trail.conversation(id), id));
class message_trail {
public:
    /// A trail of the last `capacity` messages. Throws `letterbox::error`
    /// (`errc::invalid_argument`) for a capacity of 0.
    explicit message_trail(std::size_t capacity = 1000)
        : capacity_(capacity) {
        if (capacity_ == 0)
            throw error(errc::invalid_argument, "a message_trail needs a capacity above 0");
    }

    message_trail(const message_trail&) = delete;
    message_trail& operator=(const message_trail&) = delete;

    /// Records `m` without its body, unless a message with its id is already in the trail (a
    /// message without an id is always recorded).
    void record(const message& m) {
        std::lock_guard lock(mutex_);
        if (!m.id.is_nil() && !ids_.insert(m.id).second)
            return;
        auto& kept = messages_.emplace_back(); // everything but the body
        kept.id = m.id;
        kept.type = m.type;
        kept.exchange = m.exchange;
        kept.routing_key = m.routing_key;
        kept.headers = m.headers;
        kept.properties = m.properties;
        if (messages_.size() > capacity_) {
            ids_.erase(messages_.front().id);
            messages_.pop_front();
        }
    }

    /// An observer for `relay_options::on_event` that records each message the broker
    /// confirmed.
    std::function<void(const relay_event&)> relay_observer() {
        return [this](const relay_event& e) {
            if (e.what == relay_event::kind::confirmed)
                record(e.record.msg);
        };
    }

    /// An observer for `consumer_options::on_event` that records each message delivered.
    std::function<void(const consumer_event&)> consumer_observer() {
        return [this](const consumer_event& e) {
            if (e.what == consumer_event::kind::delivered)
                record(e.d.msg);
        };
    }

    /// The messages in the trail, oldest first.
    std::vector<message> recent() const {
        std::lock_guard lock(mutex_);
        return {messages_.begin(), messages_.end()};
    }

    /// The messages of the conversation `conversation_id` (their
    /// `x-letterbox-conversation-id`), oldest first.
    std::vector<message> conversation(std::string_view conversation_id) const {
        std::vector<message> found;
        std::lock_guard lock(mutex_);
        for (const auto& m : messages_)
            if (const auto* id = m.headers.find(headers::conversation_id))
                if (const auto* text = id->get_if<std::string>(); text && *text == conversation_id)
                    found.push_back(m);
        return found;
    }

    /// How many messages it holds, and at most.
    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return messages_.size();
    }
    std::size_t capacity() const noexcept { return capacity_; }

private:
    mutable std::mutex mutex_;
    std::size_t capacity_;
    std::deque<message> messages_;
    std::set<message_id> ids_;
};

} // namespace letterbox
