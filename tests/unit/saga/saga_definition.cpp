// SPDX-License-Identifier: BSL-1.0
// A saga definition keeps its steps in order and refuses the ones the orchestrator could not
// tell apart from its own states.

#include <letterbox/saga/saga_definition.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/saga/saga_step.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace unit_saga_saga_definition {

namespace {

struct data {};

letterbox::saga_step<data> step(std::string name) {
    return {.name = std::move(name),
            .invoke = [](const data&) { return letterbox::message{}; },
            .compensate = {},
            .on_reply = {},
            .timeout = {}};
}

} // namespace

TEST_CASE("saga_definition keeps its name and its steps in order", "[saga]") {
    const auto d = letterbox::saga_definition<data>("fulfilment").step(step("a")).step(step("b"));
    CHECK(d.name() == "fulfilment");
    REQUIRE(d.steps().size() == 2);
    CHECK(d.steps()[0].name == "a");
    CHECK(d.steps()[1].name == "b");
}

TEST_CASE("saga_definition refuses a nameless saga and steps it could not tell apart", "[saga]") {
    using letterbox::saga_definition;
    const auto refused = [](auto&& f) {
        try {
            f();
        } catch (const letterbox::error& e) {
            return e.code() == letterbox::errc::invalid_argument;
        }
        return false;
    };
    CHECK(refused([] { saga_definition<data>(""); }));
    for (const char* name : {"", "completed", "failed", "compensation_failed", "compensating:a"})
        CHECK(refused([&] { saga_definition<data>("s").step(step(name)); }));
    CHECK(refused([] { saga_definition<data>("s").step(step("a")).step(step("a")); }));
    auto no_command = step("a");
    no_command.invoke = nullptr;
    CHECK(refused([&] { saga_definition<data>("s").step(no_command); }));
    CHECK_FALSE(refused([] { saga_definition<data>("s").step(step("a")).step(step("b")); }));
}

} // namespace unit_saga_saga_definition
