// SPDX-License-Identifier: BSL-1.0
// W3C traceparent: what is read, what is refused, and that writing reads back.

#include <letterbox/trace_context.hpp>

#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace unit_trace_context {

TEST_CASE("trace_context reads the specification's example and writes it back", "[tracing]") {
    const std::string text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const auto t = letterbox::trace_context::parse(text);
    REQUIRE(t);
    CHECK(t->trace_id[0] == 0x4b);
    CHECK(t->trace_id[15] == 0x36);
    CHECK(t->span_id[0] == 0x00);
    CHECK(t->span_id[7] == 0xb7);
    CHECK(t->sampled());
    CHECK(t->to_string() == text);
    CHECK_FALSE(
        letterbox::trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
            ->sampled());
}

TEST_CASE("trace_context refuses what the specification makes invalid", "[tracing]") {
    for (const char* bad : {
             "",
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",     // short
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", // 00 is 55 long
             "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
             "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero span id
             "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
             "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
             "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // separator
             "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",  // not hex
         })
        CHECK_FALSE(letterbox::trace_context::parse(bad));
    // A later version may be longer, after a dash: its first 55 characters are read.
    CHECK(letterbox::trace_context::parse(
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));
}

TEST_CASE("trace_context_of reads a message's traceparent header", "[tracing]") {
    letterbox::message m;
    CHECK_FALSE(letterbox::trace_context_of(m));
    m.headers.set(letterbox::headers::traceparent,
                  std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    CHECK(letterbox::trace_context_of(m));
    m.headers.set(letterbox::headers::traceparent, std::string("garbage"));
    CHECK_FALSE(letterbox::trace_context_of(m));
}

} // namespace unit_trace_context
