// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of transport is necessary. Every type below has all the parts of a
// model but one, and the concept must reject it.

#include <letterbox/concepts/transport.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <string>

namespace unit_concepts_transport {

namespace {

using letterbox::consume_options;
using letterbox::delivery;
using letterbox::message;
namespace topology = letterbox::topology;
using executor = boost::asio::any_io_executor;

// One part per clause; a transport is the sum of its parts. The operations accept any
// completion token and do nothing: the concept only checks that the calls are well-formed.
struct opted_in {
    using transport_concept = letterbox::transport_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using transport_concept = other_tag;
};
struct has_executor {
    using executor_type = executor;
    executor_type get_executor() const { return {}; }
};
struct has_executor_type_only {
    using executor_type = executor;
};
struct has_get_executor_only {
    executor get_executor() const { return {}; }
};
struct has_unrelated_get_executor {
    struct not_an_executor {};
    using executor_type = executor;
    not_an_executor get_executor() const { return {}; }
};
struct declares {
    template <class Token>
    void async_declare(const topology::exchange&, Token&&) {}
    template <class Token>
    void async_declare(const topology::queue&, Token&&) {}
};
struct declares_exchanges_only {
    template <class Token>
    void async_declare(const topology::exchange&, Token&&) {}
};
struct declares_queues_only {
    template <class Token>
    void async_declare(const topology::queue&, Token&&) {}
};
struct binds {
    template <class Token>
    void async_bind(const topology::binding&, Token&&) {}
};
struct publishes {
    template <class Token>
    void async_publish(const message&, Token&&) {}
};
struct publishes_without_token {
    void async_publish(const message&) {}
};
struct consumes {
    template <class Token>
    void async_consume(const consume_options&, std::function<void(delivery)>, Token&&) {}
};
struct consumes_without_delivery_handler {
    template <class Token>
    void async_consume(const consume_options&, Token&&) {}
};
struct cancels {
    template <class Token>
    void async_cancel(const std::string&, Token&&) {}
};
struct acks {
    template <class Token>
    void async_ack(const delivery&, Token&&) {}
};
struct nacks {
    template <class Token>
    void async_nack(const delivery&, bool, Token&&) {}
};
struct nacks_without_requeue {
    template <class Token>
    void async_nack(const delivery&, Token&&) {}
};
struct rejects {
    template <class Token>
    void async_reject(const delivery&, bool, Token&&) {}
};
struct closes {
    template <class Token>
    void async_close(Token&&) {}
};
struct not_movable {
    not_movable() = default;
    not_movable(not_movable&&) = delete;
    not_movable& operator=(not_movable&&) = delete;
};
struct not_move_assignable {
    not_move_assignable() = default;
    not_move_assignable(not_move_assignable&&) = default;
    not_move_assignable& operator=(not_move_assignable&&) = delete;
};

struct gets {
    template <class Token>
    void async_get(const std::string&, Token&&) {}
};
struct gets_without_token {
    void async_get(const std::string&) {}
};
struct reads_depth {
    template <class Token>
    void async_queue_depth(const std::string&, Token&&) {}
};

template <class... Parts>
struct transport_of : Parts... {};

using complete = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                              acks, nacks, rejects, closes>;

} // namespace

TEST_CASE("a type with the transport tag and every member is a transport",
          "[concepts][transport]") {
    STATIC_REQUIRE(letterbox::transport<complete>);
}

TEST_CASE("a type that does not opt in is not a transport", "[concepts][transport]") {
    using t = transport_of<has_executor, declares, binds, publishes, consumes, cancels, acks, nacks,
                           rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type opted in with an unrelated tag is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in_elsewhere, has_executor, declares, binds, publishes, consumes,
                           cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type that is not movable is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects, closes, not_movable>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type that is not move-assignable is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects, closes, not_move_assignable>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without executor_type is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_get_executor_only, declares, binds, publishes, consumes,
                           cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without get_executor is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor_type_only, declares, binds, publishes, consumes,
                           cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type whose get_executor does not return its executor_type is not a transport",
          "[concepts][transport]") {
    using t = transport_of<opted_in, has_unrelated_get_executor, declares, binds, publishes,
                           consumes, cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_declare is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, binds, publishes, consumes, cancels, acks, nacks,
                           rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type that cannot declare queues is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares_exchanges_only, binds, publishes,
                           consumes, cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type that cannot declare exchanges is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares_queues_only, binds, publishes, consumes,
                           cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_bind is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, publishes, consumes, cancels, acks,
                           nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_publish is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, consumes, cancels, acks, nacks,
                           rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type whose async_publish takes no completion token is not a transport",
          "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes_without_token,
                           consumes, cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_consume is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, cancels, acks, nacks,
                           rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type whose async_consume takes no delivery handler is not a transport",
          "[concepts][transport]") {
    using t =
        transport_of<opted_in, has_executor, declares, binds, publishes,
                     consumes_without_delivery_handler, cancels, acks, nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_cancel is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, acks,
                           nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_ack is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           nacks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_nack is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type whose async_nack has no requeue flag is not a transport",
          "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks_without_requeue, rejects, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_reject is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, closes>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

TEST_CASE("a type without async_close is not a transport", "[concepts][transport]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects>;
    STATIC_REQUIRE(!letterbox::transport<t>);
}

// queue_reader: a transport that can also get single messages and read a queue's depth.

TEST_CASE("a transport with async_get and async_queue_depth is a queue_reader",
          "[concepts][transport][queue_reader]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects, closes, gets, reads_depth>;
    STATIC_REQUIRE(letterbox::queue_reader<t>);
}

TEST_CASE("a transport is not a queue_reader by itself", "[concepts][transport][queue_reader]") {
    STATIC_REQUIRE(letterbox::transport<complete>);
    STATIC_REQUIRE(!letterbox::queue_reader<complete>);
}

TEST_CASE("a transport without async_get is not a queue_reader",
          "[concepts][transport][queue_reader]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects, closes, reads_depth>;
    STATIC_REQUIRE(!letterbox::queue_reader<t>);
}

TEST_CASE("a transport whose async_get takes no completion token is not a queue_reader",
          "[concepts][transport][queue_reader]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects, closes, gets_without_token, reads_depth>;
    STATIC_REQUIRE(!letterbox::queue_reader<t>);
}

TEST_CASE("a transport without async_queue_depth is not a queue_reader",
          "[concepts][transport][queue_reader]") {
    using t = transport_of<opted_in, has_executor, declares, binds, publishes, consumes, cancels,
                           acks, nacks, rejects, closes, gets>;
    STATIC_REQUIRE(!letterbox::queue_reader<t>);
}

TEST_CASE("a type with async_get and async_queue_depth that is not a transport is not a "
          "queue_reader",
          "[concepts][transport][queue_reader]") {
    using t = transport_of<has_executor, declares, binds, publishes, consumes, cancels, acks, nacks,
                           rejects, closes, gets, reads_depth>;
    STATIC_REQUIRE(!letterbox::queue_reader<t>);
}

} // namespace unit_concepts_transport
