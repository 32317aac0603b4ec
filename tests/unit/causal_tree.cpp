// SPDX-License-Identifier: BSL-1.0
// The causal tree of one conversation, from a history with other conversations, repeats and
// messages whose cause was not recorded.

#include <letterbox/causal_tree.hpp>

#include <letterbox/caused_by.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace unit_causal_tree {

TEST_CASE("causal_tree puts each message of one conversation under its cause", "[tracing]") {
    letterbox::message_id_generator ids{8};
    const auto make = [&](std::string type, const letterbox::message* cause) {
        letterbox::message m;
        m.id = ids();
        m.type = std::move(type);
        if (cause)
            letterbox::caused_by(*cause, m);
        else
            letterbox::begin_conversation(m);
        return m;
    };
    const auto placed = make("order-placed", nullptr);
    const auto reserve = make("reserve-stock", &placed);
    const auto reserved = make("reserve-stock.reply", &reserve);
    const auto charge = make("charge-payment", &reserved);
    const auto email = make("send-email", &placed);
    const auto other = make("order-placed", nullptr); // another order
    const auto other_child = make("reserve-stock", &other);
    auto orphan = make("audit", &charge);
    orphan.headers.set(letterbox::headers::causation_id, std::string("not-recorded"));

    const std::vector<letterbox::message> history{
        placed,      reserve, other, reserved, reserve /* republished */,
        other_child, charge,  email, orphan};
    const auto conversation = letterbox::to_string(placed.id);
    const auto trees = letterbox::causal_tree(history, conversation);
    REQUIRE(trees.size() == 2); // the order, and the message whose cause is not in the history
    CHECK(letterbox::to_text(trees) == "order-placed\n"
                                       "  reserve-stock\n"
                                       "    reserve-stock.reply\n"
                                       "      charge-payment\n"
                                       "  send-email\n"
                                       "audit\n");
    CHECK(letterbox::to_text(trees, [](const letterbox::message& m) {
              return m.type.substr(0, 5);
          }).starts_with("order\n  reser\n"));
    CHECK(letterbox::causal_tree(history, "no-such-conversation").empty());
}

} // namespace unit_causal_tree
