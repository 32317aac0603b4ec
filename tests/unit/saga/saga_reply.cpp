// SPDX-License-Identifier: BSL-1.0
// A participant's reply goes back where the command asked, with the saga's headers, and a
// command carries its payload under its type's name.

#include <letterbox/saga/saga_reply.hpp>

#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/saga/saga_command.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <system_error>

namespace unit_saga_saga_reply {

namespace {

struct charge {
    static constexpr std::string_view message_type = "charge-payment";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(charge, order_id)

letterbox::message command() {
    auto m = letterbox::saga_command(charge{42}, "payments");
    m.properties.reply_to = "order-saga.replies";
    m.properties.correlation_id = "saga-1";
    m.headers.set(letterbox::headers::saga_type, std::string("order-fulfilment"));
    m.headers.set(letterbox::headers::saga_id, std::string("saga-1"));
    m.headers.set(letterbox::headers::saga_step, std::string("charge-payment"));
    m.headers.set(letterbox::headers::saga_phase, std::string("invoke"));
    m.headers.set("x-unrelated", std::string("not copied"));
    return m;
}

} // namespace

TEST_CASE("saga_command carries its payload under its type's name", "[saga]") {
    const auto m = letterbox::saga_command(charge{42}, "payments", "commands");
    CHECK(m.type == "charge-payment");
    CHECK(m.routing_key == "payments");
    CHECK(m.exchange == "commands");
    CHECK(m.id.is_nil()); // the orchestrator's to give
    std::error_code ec;
    const auto decoded = letterbox::decode_payload<charge>(m, ec);
    REQUIRE(decoded);
    CHECK(decoded->order_id == 42);
}

TEST_CASE("saga_reply answers the command's reply_to with its saga headers and the outcome",
          "[saga]") {
    letterbox::message_id_generator ids{5};
    const auto c = command();
    const auto ok = letterbox::saga_reply(c, ids, letterbox::saga_outcome::success);
    CHECK_FALSE(ok.id.is_nil());
    CHECK(ok.exchange.empty());
    CHECK(ok.routing_key == "order-saga.replies");
    CHECK(ok.properties.correlation_id == "saga-1");
    for (const auto name : {letterbox::headers::saga_type, letterbox::headers::saga_id,
                            letterbox::headers::saga_step, letterbox::headers::saga_phase})
        CHECK(ok.headers.get<std::string>(name) == c.headers.get<std::string>(name));
    CHECK(ok.headers.get<std::string>(letterbox::headers::saga_outcome) == "success");
    CHECK_FALSE(ok.headers.contains(letterbox::headers::saga_reason));
    CHECK_FALSE(ok.headers.contains("x-unrelated"));

    const auto failed =
        letterbox::saga_reply(c, ids, letterbox::saga_outcome::failure, "card declined");
    CHECK(failed.id != ok.id);
    CHECK(failed.headers.get<std::string>(letterbox::headers::saga_outcome) == "failure");
    CHECK(failed.headers.get<std::string>(letterbox::headers::saga_reason) == "card declined");
}

} // namespace unit_saga_saga_reply
