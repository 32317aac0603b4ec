// SPDX-License-Identifier: BSL-1.0
#pragma once

// Channel and connection errors, and the checks that raise them.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL std::error_code broker_state::check_open(channel_state& ch) const {
    if (ch.open)
        return {};
    return ch.connection_closed ? make_error_code(errc::connection_closed)
                                : make_error_code(errc::channel_closed);
}

LETTERBOX_DECL std::error_code broker_state::channel_error(channel_state& ch, errc e,
                                                           const std::string& text) {
    close_channel(ch, {make_error_code(e), reply_text(amqp_reply_name(e), text)});
    return make_error_code(e);
}

LETTERBOX_DECL std::error_code broker_state::connection_error(channel_state& ch, errc e,
                                                              const std::string& text) {
    close_connection(*ch.connection, {make_error_code(e), reply_text(amqp_reply_name(e), text)});
    return make_error_code(e);
}

LETTERBOX_DECL std::error_code broker_state::inequivalent(channel_state& ch, const std::string& arg,
                                                          const char* kind, const std::string& name,
                                                          const std::string& received,
                                                          const std::string& current) {
    return channel_error(ch, errc::precondition_failed,
                         "inequivalent arg '" + arg + "' for " + kind + " '" + name +
                             "' in vhost '/': received " + received + " but current is " + current);
}

LETTERBOX_DECL std::error_code
broker_state::check_exclusive(channel_state& ch, const queue_state& q, bool flag_differs) {
    if (flag_differs || (q.exclusive && q.owner != ch.connection->id))
        return channel_error(ch, errc::resource_locked,
                             "cannot obtain exclusive access to locked queue '" + q.name +
                                 "' in vhost '/'. It could be originally declared on another "
                                 "connection or the exclusive property value does not match "
                                 "that of the original declaration.");
    return {};
}

LETTERBOX_DECL queue_state* broker_state::find_queue(channel_state& ch, std::string_view name,
                                                     std::error_code& ec) {
    auto it = queues_.find(name);
    if (it == queues_.end()) {
        ec =
            channel_error(ch, errc::not_found, "no queue '" + std::string(name) + "' in vhost '/'");
        return nullptr;
    }
    return it->second.get();
}

} // namespace letterbox::in_memory::detail
