// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/dlq/detail/scan.hpp>
#include <letterbox/error.hpp>
#include <letterbox/error_code.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

namespace detail {

/// Starts a scan of `kind` on the transport's executor; completes with `Signature`, whose
/// second argument `extract` takes from the scan's outcome.
template <class Signature, class Transport, class Token, class Extract>
auto launch_scan(Transport* t, const std::string& queue,
                 const std::shared_ptr<const dead_letter_queue_options>& options, scan_kind kind,
                 dead_letter_filter filter, page p, std::ostream* out, Token&& token,
                 Extract extract) {
    using op_type = scan<Transport>;
    return letterbox::detail::async_start<Signature>(
        std::forward<Token>(token), t->get_executor(),
        [t, queue, options, kind, p, out, extract,
         f = std::move(filter)](letterbox::detail::async_op<Signature> op) mutable {
            typename op_type::completion done = [op, extract](std::error_code ec,
                                                              typename op_type::outcome r) {
                op(ec, extract(r));
            };
            auto scan =
                std::make_shared<op_type>(*t, queue, kind, std::move(f), options, std::move(done));
            scan->set_page(p);
            scan->set_output(out);
            op.on_cancel(
                [weak = std::weak_ptr<op_type>(scan)](auto) {
                    if (auto s = weak.lock())
                        s->cancel();
                },
                boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial);
            scan->start();
        });
}

} // namespace detail

template <queue_reader Transport>
dead_letter_queue<Transport>::dead_letter_queue(Transport& transport, std::string queue,
                                                dead_letter_queue_options options)
    : transport_(&transport)
    , queue_(std::move(queue)) {
    if (options.max_messages == 0)
        throw letterbox::error(errc::invalid_argument,
                               "dead_letter_queue_options::max_messages must be at least 1");
    options_ = std::make_shared<const dead_letter_queue_options>(std::move(options));
}

template <queue_reader Transport>
auto dead_letter_queue<Transport>::get_executor() const -> executor_type {
    return transport_->get_executor();
}

template <queue_reader Transport>
template <class Token>
auto dead_letter_queue<Transport>::async_browse(dead_letter_filter filter, page p, Token&& token) {
    return detail::launch_scan<void(error_code, std::vector<dead_letter_entry>)>(
        transport_, queue_, options_, detail::scan_kind::browse, std::move(filter), p, nullptr,
        std::forward<Token>(token),
        [](typename detail::scan<Transport>::outcome& r) { return std::move(r.entries); });
}

template <queue_reader Transport>
template <class Token>
auto dead_letter_queue<Transport>::async_replay(dead_letter_filter filter, Token&& token) {
    return detail::launch_scan<void(error_code, replay_result)>(
        transport_, queue_, options_, detail::scan_kind::replay, std::move(filter), page{}, nullptr,
        std::forward<Token>(token),
        [](typename detail::scan<Transport>::outcome& r) { return std::move(r.replay); });
}

template <queue_reader Transport>
template <class Token>
auto dead_letter_queue<Transport>::async_purge(dead_letter_filter filter, Token&& token) {
    return detail::launch_scan<void(error_code, std::size_t)>(
        transport_, queue_, options_, detail::scan_kind::purge, std::move(filter), page{}, nullptr,
        std::forward<Token>(token),
        [](typename detail::scan<Transport>::outcome& r) { return r.count; });
}

template <queue_reader Transport>
template <class Token>
auto dead_letter_queue<Transport>::async_export(dead_letter_filter filter, std::ostream& out,
                                                Token&& token) {
    return detail::launch_scan<void(error_code, std::size_t)>(
        transport_, queue_, options_, detail::scan_kind::export_lines, std::move(filter), page{},
        &out, std::forward<Token>(token),
        [](typename detail::scan<Transport>::outcome& r) { return r.count; });
}

template <queue_reader Transport>
template <class Token>
auto dead_letter_queue<Transport>::async_depth(Token&& token) {
    return transport_->async_queue_depth(queue_, std::forward<Token>(token));
}

} // namespace letterbox::dlq
