// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// The pending `async_wait_disconnected` operations of a transport's state (`connection_watcher`):
/// each runs once, at the next loss of the connection or when the transport closes.
class disconnect_watchers {
public:
    using completion = unique_function<void(std::error_code)>;

    std::uint64_t add(completion f) {
        const auto id = ++next_;
        waiting_.emplace(id, std::move(f));
        return id;
    }
    void remove(std::uint64_t id) { waiting_.erase(id); }

    /// Runs every waiting one with `ec` (those it adds meanwhile wait for the next time).
    void notify(std::error_code ec) {
        auto now = std::move(waiting_);
        waiting_.clear();
        for (auto& [id, f] : now)
            f(ec);
    }

private:
    std::map<std::uint64_t, completion> waiting_;
    std::uint64_t next_ = 0;
};

/// The start of `async_wait_disconnected` on a transport's `state`, on its strand: registers
/// `op` with `state.watch_disconnect` and makes a cancellation (any type) take it back.
template <class State, class Op>
void start_wait_disconnected(State& state, Op op) {
    const auto id = state.watch_disconnect([op](std::error_code ec) { op(ec); });
    std::weak_ptr<State> weak = state.shared_from_this();
    op.on_cancel(
        [weak, id](auto cancelled) {
            if (auto s = weak.lock())
                s->unwatch_disconnect(id);
            cancelled.cancelled();
        },
        boost::asio::cancellation_type::all);
}

} // namespace letterbox::detail
