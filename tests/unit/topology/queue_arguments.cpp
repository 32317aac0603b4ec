// SPDX-License-Identifier: BSL-1.0
#include <letterbox/topology/queue_arguments.hpp>

#include <catch2/catch.hpp>

namespace unit_topology_queue_arguments {

using namespace letterbox;
using namespace letterbox::topology;

TEST_CASE("queue arguments round-trip through their field table", "[topology][queue_arguments]") {
    queue_arguments a;
    a.dead_letter_exchange = "dlx";
    a.dead_letter_routing_key = "dead";
    a.message_ttl = std::chrono::milliseconds(1500);
    a.max_length = 10;
    a.max_length_bytes = 1024;
    a.overflow = overflow_behaviour::reject_publish_dlx;
    a.delivery_limit = 3;
    a.max_priority = 7;
    a.type = queue_type::quorum;
    a.single_active_consumer = true;
    a.dead_letter_strategy = dead_lettering::at_least_once;
    const auto t = a.to_table();
    CHECK(t.get<std::string>(args::dead_letter_strategy) == "at-least-once");
    CHECK(t.get<std::string>(args::queue_type) == "quorum");
    CHECK(t.get<bool>(args::single_active_consumer) == true);
    CHECK(t.get<std::string>(args::overflow) == "reject-publish-dlx");
    std::error_code ec;
    std::string why;
    auto back = queue_arguments::parse(t, ec, why);
    REQUIRE(back);
    CHECK_FALSE(ec);
    CHECK(*back == a);
}

TEST_CASE("queue arguments accept any integer width, as RabbitMQ does",
          "[topology][queue_arguments]") {
    field_table t{{std::string(args::max_length), std::int16_t{5}},
                  {std::string(args::message_ttl), std::uint32_t{7}}};
    std::error_code ec;
    std::string why;
    auto a = queue_arguments::parse(t, ec, why);
    REQUIRE(a);
    CHECK(a->max_length == 5);
    CHECK(a->message_ttl == std::chrono::milliseconds(7));
}

TEST_CASE("invalid queue arguments are refused with precondition_failed and a reason",
          "[topology][queue_arguments]") {
    struct bad_case {
        field_table table;
        std::string needle;
    };
    std::vector<bad_case> cases{
        {{{std::string(args::max_length), std::int64_t{-1}}}, "value_negative"},
        {{{std::string(args::message_ttl), "soon"}}, "\"expected integer, got longstr\""},
        {{{std::string(args::overflow), "explode"}}, "invalid_overflow"},
        {{{std::string(args::max_priority), std::int64_t{256}}}, "{max_value_exceeded,256}"},
        {{{std::string(args::queue_type), "stream"}}, "\"unsupported queue type 'stream'\""},
        {{{std::string(args::dead_letter_exchange), std::int32_t{1}}},
         "invalid type 'signedint' for arg 'x-dead-letter-exchange'"},
        {{{std::string(args::overflow), std::int64_t{1}}}, "{unacceptable_type,long}"},
        {{{std::string(args::dead_letter_routing_key), "k"}}, "routing_key_but_no_dlx_defined"},
        {{{std::string(args::expires), std::int64_t{0}}}, "value_zero"},
    };
    for (const auto& c : cases) {
        std::error_code ec;
        std::string why;
        CAPTURE(c.needle);
        CHECK_FALSE(queue_arguments::parse(c.table, ec, why));
        CHECK(ec == errc::precondition_failed);
        CHECK(why.find(c.needle) != std::string::npos);
    }
}

TEST_CASE("a negative delivery limit is accepted (its meaning depends on the broker's version)",
          "[topology][queue_arguments]") {
    std::error_code ec;
    std::string why;
    auto a =
        queue_arguments::parse({{std::string(args::delivery_limit), std::int64_t{-1}}}, ec, why);
    REQUIRE(a);
    CHECK(a->delivery_limit == -1);
}

TEST_CASE("x-dead-letter-strategy is read as RabbitMQ 3.10 reads it",
          "[topology][queue_arguments]") {
    std::error_code ec;
    std::string why;
    auto parsed = [&](field_value v) {
        return queue_arguments::parse({{std::string(args::dead_letter_strategy), std::move(v)}}, ec,
                                      why);
    };
    auto a = parsed(std::string("at-most-once"));
    REQUIRE(a);
    CHECK(a->dead_letter_strategy == dead_lettering::at_most_once);
    a = parsed(std::string("at-least-once"));
    REQUIRE(a);
    CHECK(a->dead_letter_strategy == dead_lettering::at_least_once);
    // The texts of 3.10.8's refusals, without the queue's name.
    CHECK_FALSE(parsed(std::string("exactly-once")));
    CHECK(ec == errc::precondition_failed);
    CHECK(why == "invalid arg 'x-dead-letter-strategy': invalid_dlx_strategy");
    CHECK_FALSE(parsed(std::int64_t{1}));
    CHECK(why == "invalid arg 'x-dead-letter-strategy': {unacceptable_type,long}");
}

} // namespace unit_topology_queue_arguments
