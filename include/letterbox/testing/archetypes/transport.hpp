// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

namespace detail {
/// An Asio initiation that starts nothing.
struct noop_initiation {
    template <class Handler>
    void operator()(Handler&&) const {}
};

/// Starts an operation with completion signature `Signature` that never completes: returns
/// what `token` asks for (nothing for a callback, a future for `use_future`, ...).
template <class Signature, class Token>
auto never_complete(Token&& token) {
    return boost::asio::async_initiate<Token, Signature>(noop_initiation{}, token);
}
} // namespace detail

/// Exactly what `letterbox::transport` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else. It is movable only: not
/// default-constructible and not copyable. Each operation accepts any Asio completion token and
/// never completes.
//[transport_archetype
struct transport_archetype {
    using transport_concept = transport_tag;
    using executor_type = boost::asio::any_io_executor;

    transport_archetype(transport_archetype&&) = default;
    transport_archetype& operator=(transport_archetype&&) = default;

    executor_type get_executor() const { return {}; }

    template <class Token>
    auto async_declare(const topology::exchange&, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_declare(const topology::queue&, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_bind(const topology::binding&, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_publish(const message&, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_consume(const consume_options&, std::function<void(delivery)>, Token&& token) {
        return detail::never_complete<void(error_code, std::string)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_cancel(const std::string&, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_ack(const delivery&, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_nack(const delivery&, bool, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_reject(const delivery&, bool, Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
    template <class Token>
    auto async_close(Token&& token) {
        return detail::never_complete<void(error_code)>(std::forward<Token>(token));
    }
};
//]

/// Exactly what `letterbox::queue_reader` requires: the transport archetype plus `async_get`
/// and `async_queue_depth`, which never complete.
//[queue_reader_archetype
struct queue_reader_archetype : transport_archetype {
    template <class Token>
    auto async_get(const std::string&, Token&& token) {
        return detail::never_complete<void(error_code, std::optional<delivery>)>(
            std::forward<Token>(token));
    }
    template <class Token>
    auto async_queue_depth(const std::string&, Token&& token) {
        return detail::never_complete<void(error_code, std::uint32_t)>(std::forward<Token>(token));
    }
};
//]

} // namespace letterbox::testing
