// SPDX-License-Identifier: BSL-1.0
// What a message caused carries of its cause: the trace, the causation and the conversation.

#include <letterbox/caused_by.hpp>

#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/trace_context.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace unit_caused_by {

namespace {

std::string header(const letterbox::message& m, std::string_view name) {
    return m.headers.get<std::string>(name).value_or("(none)");
}

} // namespace

TEST_CASE("caused_by carries the trace, the tracestate and the conversation, and names the cause",
          "[tracing]") {
    letterbox::message_id_generator ids{3};
    letterbox::message root;
    root.id = ids();
    letterbox::begin_conversation(root);
    const auto root_trace = letterbox::trace_context_of(root);
    REQUIRE(root_trace);
    CHECK(header(root, letterbox::headers::conversation_id) == letterbox::to_string(root.id));
    CHECK_FALSE(root.headers.contains(letterbox::headers::causation_id));
    root.headers.set(letterbox::headers::tracestate, std::string("vendor=abc"));
    root.properties.correlation_id = "request-1";

    letterbox::message child;
    child.id = ids();
    child.properties.correlation_id = "own";
    letterbox::caused_by(root, child);
    const auto child_trace = letterbox::trace_context_of(child);
    REQUIRE(child_trace);
    CHECK(child_trace->trace_id == root_trace->trace_id);
    CHECK(child_trace->span_id != root_trace->span_id);
    CHECK(child_trace->flags == root_trace->flags);
    CHECK(header(child, letterbox::headers::tracestate) == "vendor=abc");
    CHECK(header(child, letterbox::headers::causation_id) == letterbox::to_string(root.id));
    CHECK(header(child, letterbox::headers::conversation_id) == letterbox::to_string(root.id));
    CHECK(child.properties.correlation_id == "own"); // left alone

    letterbox::message grandchild;
    grandchild.id = ids();
    letterbox::caused_by(child, grandchild);
    CHECK(letterbox::trace_context_of(grandchild)->trace_id == root_trace->trace_id);
    CHECK(header(grandchild, letterbox::headers::causation_id) == letterbox::to_string(child.id));
    CHECK(header(grandchild, letterbox::headers::conversation_id) == letterbox::to_string(root.id));
}

TEST_CASE("caused_by joins a trace that came from elsewhere, and starts one without", "[tracing]") {
    letterbox::message_id_generator ids{4};
    letterbox::message foreign; // from an OpenTelemetry-instrumented producer
    foreign.id = ids();
    foreign.headers.set(letterbox::headers::traceparent,
                        std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
    letterbox::message effect;
    effect.id = ids();
    effect.headers.set(letterbox::headers::tracestate, std::string("stale=1"));
    letterbox::caused_by(foreign, effect);
    const auto t = letterbox::trace_context_of(effect);
    REQUIRE(t);
    CHECK(t->to_string().substr(0, 36) == "00-4bf92f3577b34da6a3ce929d0e0e4736-");
    CHECK_FALSE(t->sampled()); // the producer's decision is kept
    CHECK_FALSE(effect.headers.contains(letterbox::headers::tracestate));
    CHECK(header(effect, letterbox::headers::conversation_id) == letterbox::to_string(foreign.id));

    letterbox::message untraced;
    untraced.id = ids();
    letterbox::message next;
    next.id = ids();
    letterbox::caused_by(untraced, next);
    const auto started = letterbox::trace_context_of(next);
    REQUIRE(started);
    CHECK(std::equal(started->trace_id.begin(), started->trace_id.end(), untraced.id.begin()));
    CHECK(started->sampled());
}

TEST_CASE("caused_by refuses an effect without a message id", "[tracing]") {
    letterbox::message cause;
    letterbox::message effect;
    CHECK_THROWS_AS(letterbox::caused_by(cause, effect), letterbox::error);
    CHECK_THROWS_AS(letterbox::begin_conversation(effect), letterbox::error);
    CHECK(effect.headers.empty());
}

} // namespace unit_caused_by
