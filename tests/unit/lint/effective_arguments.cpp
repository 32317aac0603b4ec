// SPDX-License-Identifier: BSL-1.0

// lint::effective_arguments: a queue's arguments merged with the policy and the operator
// policy that apply to it, as RabbitMQ merges them (research notes §7).

#include <letterbox/lint/effective_arguments.hpp>

#include <letterbox/field_table.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unit_lint_effective_arguments {

namespace lint = letterbox::lint;
namespace topology = letterbox::topology;
using letterbox::field_table;

namespace {

topology::queue queue(std::string name, field_table args = {}) {
    return {.name = std::move(name), .arguments = std::move(args)};
}

topology::queue quorum(std::string name, field_table args = {}) {
    args.set("x-queue-type", "quorum");
    return queue(std::move(name), std::move(args));
}

lint::policy policy(std::string name, std::string pattern, field_table definition,
                    std::int64_t priority = 0, std::string apply_to = "all") {
    return {.name = std::move(name),
            .pattern = std::move(pattern),
            .apply_to = std::move(apply_to),
            .priority = priority,
            .definition = std::move(definition)};
}

std::optional<std::int64_t> integer(const field_table& t, const char* name) {
    if (const auto* v = t.find(name))
        return v->as_integer();
    return std::nullopt;
}

} // namespace

TEST_CASE("effective_arguments takes the lower of a policy's and an argument's message TTL, "
          "max-length and expires",
          "[lint]") {
    const std::vector<lint::policy> ps{policy("limits", "orders",
                                              field_table{{"message-ttl", std::int64_t{1000}},
                                                          {"max-length", std::int64_t{50}},
                                                          {"expires", std::int64_t{60000}}})};
    for (const auto& q : {queue("orders", field_table{{"x-message-ttl", std::int64_t{500}},
                                                      {"x-max-length", std::int64_t{100}}}),
                          quorum("orders", field_table{{"x-message-ttl", std::int64_t{500}},
                                                       {"x-max-length", std::int64_t{100}}})}) {
        const auto a = lint::effective_arguments(q, ps);
        CHECK(integer(a, "x-message-ttl") == 500);
        CHECK(integer(a, "x-max-length") == 50);
        CHECK(integer(a, "x-expires") == 60000);
    }
}

TEST_CASE("effective_arguments lets the argument's dead-letter exchange win over a policy's",
          "[lint]") {
    const std::vector<lint::policy> ps{
        policy("dl", ".*",
               field_table{{"dead-letter-exchange", "from-policy"},
                           {"dead-letter-routing-key", "policy-key"}})};
    const auto a = lint::effective_arguments(
        quorum("orders", field_table{{"x-dead-letter-exchange", "from-argument"}}), ps);
    CHECK(a.get<std::string>("x-dead-letter-exchange") == "from-argument");
    CHECK(a.get<std::string>("x-dead-letter-routing-key") == "policy-key");
    CHECK(
        lint::effective_arguments(queue("plain"), ps).get<std::string>("x-dead-letter-exchange") ==
        "from-policy");
}

TEST_CASE("effective_arguments lets the argument's overflow win on a classic queue and the "
          "policy's on a quorum queue",
          "[lint]") {
    const std::vector<lint::policy> ps{policy("o", ".", field_table{{"overflow", "drop-head"}})};
    const field_table args{{"x-overflow", "reject-publish"}};
    CHECK(lint::effective_arguments(queue("q", args), ps).get<std::string>("x-overflow") ==
          "reject-publish");
    CHECK(lint::effective_arguments(quorum("q", args), ps).get<std::string>("x-overflow") ==
          "drop-head");
}

TEST_CASE("effective_arguments takes the higher delivery limit when either is negative and "
          "the lower otherwise",
          "[lint]") {
    auto limit = [](std::int64_t argument, std::int64_t from_policy) {
        const std::vector<lint::policy> ps{
            policy("dl", "q", field_table{{"delivery-limit", from_policy}})};
        return integer(
            lint::effective_arguments(quorum("q", field_table{{"x-delivery-limit", argument}}), ps),
            "x-delivery-limit");
    };
    CHECK(limit(5, 10) == 5);
    CHECK(limit(10, 5) == 5);
    CHECK(limit(5, -1) == 5);
    CHECK(limit(-1, 5) == 5);
    CHECK(limit(-1, -1) == -1);
}

TEST_CASE("effective_arguments applies the policy of highest priority whose unanchored "
          "pattern matches and whose apply-to fits the queue type",
          "[lint]") {
    const std::vector<lint::policy> ps{
        policy("low", "ord", field_table{{"message-ttl", std::int64_t{1}}}, 1),
        policy("high", "ers$", field_table{{"max-length", std::int64_t{2}}}, 5),
        policy("classic-only", "orders", field_table{{"expires", std::int64_t{3}}}, 9,
               "classic_queues"),
        policy("exchanges", "orders", field_table{{"expires", std::int64_t{4}}}, 10, "exchanges"),
        policy("other", "^x", field_table{{"expires", std::int64_t{5}}}, 20)};
    const auto classic = lint::effective_arguments(queue("orders"), ps);
    CHECK(classic == field_table{{"x-expires", std::int64_t{3}}});
    const auto qq = lint::effective_arguments(quorum("orders"), ps);
    CHECK_FALSE(qq.contains("x-message-ttl")); // only one policy applies
    CHECK(integer(qq, "x-max-length") == 2);
}

TEST_CASE("effective_arguments skips a policy holding a key the queue type does not support "
          "and applies the next one",
          "[lint]") {
    const std::vector<lint::policy> ps{
        policy("mixed", "q",
               field_table{{"max-length", std::int64_t{1}}, {"delivery-limit", std::int64_t{3}}},
               5),
        policy("fallback", "q", field_table{{"max-length", std::int64_t{2}}}, 1)};
    CHECK(integer(lint::effective_arguments(queue("q"), ps), "x-max-length") == 2);
    const auto qq = lint::effective_arguments(quorum("q"), ps);
    CHECK(integer(qq, "x-max-length") == 1);
    CHECK(integer(qq, "x-delivery-limit") == 3);
}

TEST_CASE("effective_arguments combines an operator policy with the user policy by the more "
          "conservative value",
          "[lint]") {
    auto op = policy("op", ".*",
                     field_table{{"message-ttl", std::int64_t{100}},
                                 {"max-length", std::int64_t{1000}},
                                 {"overflow", "reject-publish"}});
    op.operator_policy = true;
    const std::vector<lint::policy> ps{policy("user", "q",
                                              field_table{{"message-ttl", std::int64_t{50}},
                                                          {"max-length", std::int64_t{5000}},
                                                          {"overflow", "drop-head"}}),
                                       op};
    const auto a = lint::effective_arguments(queue("q"), ps);
    CHECK(integer(a, "x-message-ttl") == 50);
    CHECK(integer(a, "x-max-length") == 1000);
    CHECK(a.get<std::string>("x-overflow") == "reject-publish");
}

TEST_CASE("effective_arguments applies no policy whose pattern is invalid or overlong", "[lint]") {
    const std::vector<lint::policy> ps{
        policy("broken", "q(", field_table{{"message-ttl", std::int64_t{1}}}, 5),
        policy("long", std::string(1001, '.'), field_table{{"message-ttl", std::int64_t{2}}}, 4),
        policy("catastrophic", "(a*)*b", field_table{{"message-ttl", std::int64_t{3}}}, 3)};
    CHECK(lint::effective_arguments(queue("q"), ps).empty());
#if defined(__GLIBCXX__)
    // libstdc++'s polynomial mode: no exponential backtracking on a hostile pattern.
    CHECK(lint::effective_arguments(queue(std::string(200, 'a')), ps).empty());
    CHECK(integer(lint::effective_arguments(queue("aab"), ps), "x-message-ttl") == 3);
#endif
}

} // namespace unit_lint_effective_arguments
