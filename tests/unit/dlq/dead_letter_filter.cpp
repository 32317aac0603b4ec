// SPDX-License-Identifier: BSL-1.0
// dead_letter_filter: each criterion, and reading a filter from JSON with clear errors.

#include <letterbox/dlq/dead_letter_filter.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <string>

namespace unit_dlq_dead_letter_filter {

namespace {

namespace headers = letterbox::headers;
using letterbox::dlq::dead_letter_entry;
using letterbox::dlq::dead_letter_filter;

letterbox::store_time t(const char* text) {
    return *letterbox::detail::parse_rfc3339(text);
}

dead_letter_entry sample() {
    letterbox::message m;
    m.id = letterbox::message_id_generator{3}();
    m.type = "order.placed";
    m.headers.set(headers::death_reason, "poison");
    m.headers.set(headers::exception_type, "std::invalid_argument");
    m.headers.set(headers::dead_lettered_time, "2026-03-01T10:00:00Z");
    m.headers.set("x-tenant", "acme");
    m.headers.set("x-priority", std::int64_t{3});
    m.headers.set("x-urgent", true);
    m.headers.set("x-ratio", 0.5);
    m.headers.set("x-table", letterbox::field_table{{"a", "b"}});
    return dead_letter_entry::from(m);
}

/// The text of the error `from_json` throws for `j`, or "" when it does not throw.
std::string from_json_error(const nlohmann::json& j) {
    try {
        dead_letter_filter::from_json(j);
    } catch (const letterbox::error& e) {
        CHECK(e.code() == letterbox::errc::invalid_argument);
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("the default filter matches everything", "[dlq]") {
    CHECK(dead_letter_filter{}.matches(sample()));
    CHECK(dead_letter_filter{}.matches(dead_letter_entry{}));
}

TEST_CASE("a filter matches reason, exception type and message type exactly", "[dlq]") {
    const auto e = sample();
    dead_letter_filter f;
    f.reason = "poison";
    CHECK(f.matches(e));
    f.reason = "rejected";
    CHECK_FALSE(f.matches(e));

    f = {};
    f.exception_type = "std::invalid_argument";
    CHECK(f.matches(e));
    f.exception_type = "std::invalid";
    CHECK_FALSE(f.matches(e));

    f = {};
    f.message_type = "order.placed";
    CHECK(f.matches(e));
    f.message_type = "order";
    CHECK_FALSE(f.matches(e));

    f.message_type = "order.placed";
    f.reason = "poison";
    f.exception_type = "other";
    CHECK_FALSE(f.matches(e)); // all must match
}

TEST_CASE("since is inclusive and until exclusive, on the dead-lettered time", "[dlq]") {
    const auto e = sample();
    dead_letter_filter f;
    f.since = t("2026-03-01T10:00:00Z");
    CHECK(f.matches(e));
    f.since = t("2026-03-01T10:00:00.001Z");
    CHECK_FALSE(f.matches(e));
    f = {};
    f.until = t("2026-03-01T10:00:00.001Z");
    CHECK(f.matches(e));
    f.until = t("2026-03-01T10:00:00Z");
    CHECK_FALSE(f.matches(e));
}

TEST_CASE("time bounds fall back on the last failure, without either time nothing matches",
          "[dlq]") {
    letterbox::message m;
    m.headers.set(headers::last_failure_time, "2026-03-01T09:00:00Z");
    const auto e = dead_letter_entry::from(m);
    dead_letter_filter f;
    f.since = t("2026-03-01T08:00:00Z");
    f.until = t("2026-03-01T09:30:00Z");
    CHECK(f.matches(e));
    CHECK_FALSE(f.matches(dead_letter_entry{}));
}

TEST_CASE("header criteria compare text: strings, integers, booleans and floats", "[dlq]") {
    const auto e = sample();
    dead_letter_filter f;
    f.headers = {{"x-tenant", "acme"}, {"x-priority", "3"}};
    CHECK(f.matches(e));
    f.headers = {{"x-urgent", "true"}, {"x-ratio", "0.5"}};
    CHECK(f.matches(e));
    f.headers = {{"x-tenant", "other"}};
    CHECK_FALSE(f.matches(e));
    f.headers = {{"x-missing", ""}};
    CHECK_FALSE(f.matches(e));
    f.headers = {{"x-table", "{}"}};
    CHECK_FALSE(f.matches(e));
}

TEST_CASE("ids match the message id in any case", "[dlq]") {
    const auto e = sample();
    dead_letter_filter f;
    f.ids = {"00000000-0000-0000-0000-000000000000", e.id};
    CHECK(f.matches(e));
    auto upper = e.id;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    f.ids = {upper};
    CHECK(f.matches(e));
    f.ids = {"00000000-0000-0000-0000-000000000000"};
    CHECK_FALSE(f.matches(e));
}

TEST_CASE("from_json reads every criterion", "[dlq]") {
    const auto e = sample();
    const auto f = dead_letter_filter::from_json(nlohmann::json::parse(R"({
        "reason": "poison",
        "exception_type": "std::invalid_argument",
        "message_type": "order.placed",
        "since": "2026-03-01T00:00:00Z",
        "until": "2026-03-02T00:00:00.500Z",
        "headers": {"x-tenant": "acme", "x-priority": 3, "x-urgent": true, "x-ratio": 0.5},
        "ids": [")" + e.id + R"("]
    })"));
    CHECK(f.reason == "poison");
    CHECK(f.exception_type == "std::invalid_argument");
    CHECK(f.message_type == "order.placed");
    CHECK(f.since == t("2026-03-01T00:00:00Z"));
    CHECK(f.until == t("2026-03-02T00:00:00.500Z"));
    REQUIRE(f.headers.size() == 4);
    CHECK(f.ids == std::vector<std::string>{e.id});
    CHECK(f.matches(e));
}

TEST_CASE("from_json: null and absent members mean no criterion", "[dlq]") {
    CHECK(dead_letter_filter::from_json(nullptr).matches(dead_letter_entry{}));
    CHECK(dead_letter_filter::from_json(nlohmann::json::object()).matches(dead_letter_entry{}));
    const auto f = dead_letter_filter::from_json(
        nlohmann::json::parse(R"({"reason": null, "headers": null, "ids": null})"));
    CHECK_FALSE(f.reason.has_value());
    CHECK(f.headers.empty());
    CHECK(f.ids.empty());
}

TEST_CASE("from_json refuses bad input with errors that name the member", "[dlq]") {
    using nlohmann::json;
    CHECK_THAT(from_json_error(json::array()), Catch::Contains("expected a JSON object"));
    CHECK_THAT(from_json_error(json::parse(R"({"reasons": "x"})")),
               Catch::Contains("unknown member \"reasons\""));
    CHECK_THAT(from_json_error(json::parse(R"({"reason": 5})")),
               Catch::Contains("\"reason\" must be a string"));
    CHECK_THAT(from_json_error(json::parse(R"({"message_type": ["a"]})")),
               Catch::Contains("\"message_type\" must be a string"));
    CHECK_THAT(from_json_error(json::parse(R"({"since": "yesterday"})")),
               Catch::Contains("\"since\" must be an RFC 3339 UTC time"));
    CHECK_THAT(from_json_error(json::parse(R"({"until": "2026-03-01T10:00:00+01:00"})")),
               Catch::Contains("\"until\" must be an RFC 3339 UTC time"));
    CHECK_THAT(from_json_error(json::parse(R"({"since": "2026-03-02T00:00:00Z",
                                               "until": "2026-03-01T00:00:00Z"})")),
               Catch::Contains("\"since\" is later than \"until\""));
    CHECK_THAT(from_json_error(json::parse(R"({"headers": ["x-tenant", "acme"]})")),
               Catch::Contains("\"headers\" must be an object"));
    CHECK_THAT(from_json_error(json::parse(R"({"headers": {"x-tenant": {"a": 1}}})")),
               Catch::Contains("header \"x-tenant\" must have a string, number or boolean"));
    CHECK_THAT(from_json_error(json::parse(R"({"ids": "abc"})")),
               Catch::Contains("\"ids\" must be an array"));
    CHECK_THAT(from_json_error(json::parse(R"({"ids": [1]})")),
               Catch::Contains("\"ids\" must hold strings"));
    CHECK_THAT(from_json_error(json::parse(R"({"ids": ["not-a-uuid"]})")),
               Catch::Contains("\"not-a-uuid\", which is neither a message id"));
    for (const auto& text : {from_json_error(json::parse(R"({"reason": 5})")),
                             from_json_error(json::parse(R"({"x": 1})"))})
        CHECK_THAT(text, Catch::StartsWith("dead_letter_filter: "));
}

} // namespace unit_dlq_dead_letter_filter
