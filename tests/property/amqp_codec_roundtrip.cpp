// SPDX-License-Identifier: BSL-1.0
//
// Property (issue 5, "Codec round trips"): encode then decode gives the same thing, for random
// methods (every alternative, every argument), basic properties, field tables (every value type,
// nested) and messages; and a random sequence of commands written by the frame writer and read
// back in random pieces comes out as the same commands.
//
// The method generator fills each method's arguments through the codec's own argument list
// (detail::method_fields), so it reaches every argument of every method; the known byte vectors
// of tests/unit/amqp/codec/method.cpp pin those lists to the spec.
//
// Randomness comes only from RapidCheck, seeded with LETTERBOX_SEED by the shared test main.
// Replay: LETTERBOX_SEED=<n> ./letterbox_property_tests "[amqp]", or the RC_PARAMS="reproduce=..."
// line RapidCheck prints. RC_PARAMS max_success overrides the default of 300 cases per property.

#include <letterbox/amqp/codec.hpp>

#include <letterbox/amqp/codec/detail/method_fields.hpp>
#include <letterbox/testing/seed.hpp>

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace property_amqp_codec_roundtrip {

namespace {

namespace codec = letterbox::amqp::codec;
using letterbox::field_array;
using letterbox::field_table;
using letterbox::field_value;

constexpr int kMaxSuccess = 300;

// ---- generators -------------------------------------------------------------------------------

/// Byte strings of up to `max` bytes, mostly short, sometimes exactly `max`.
rc::Gen<std::string> text(std::size_t max) {
    return rc::gen::weightedOneOf<std::string>({
        {8, rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, std::min<std::size_t>(max, 24) + 1),
                            [](std::size_t n) {
                                return rc::gen::container<std::string>(n,
                                                                       rc::gen::arbitrary<char>());
                            })},
        {1, rc::gen::container<std::string>(max, rc::gen::arbitrary<char>())},
    });
}

rc::Gen<std::string> short_text() {
    return text(255);
}

template <class F>
rc::Gen<F> finite() {
    return rc::gen::suchThat(rc::gen::arbitrary<F>(), [](F x) { return !std::isnan(x); });
}

rc::Gen<field_table> tables(int depth);

/// A value of any type but the containers.
rc::Gen<field_value> scalars() {
    using letterbox::byte_array;
    using letterbox::decimal;
    using letterbox::timestamp;
    return rc::gen::weightedOneOf<field_value>({
        {1, rc::gen::just(field_value{})},
        {1, rc::gen::map(rc::gen::arbitrary<bool>(), [](bool v) { return field_value(v); })},
        {1, rc::gen::map(rc::gen::arbitrary<std::int8_t>(), [](auto v) { return field_value(v); })},
        {1,
         rc::gen::map(rc::gen::arbitrary<std::uint8_t>(), [](auto v) { return field_value(v); })},
        {1,
         rc::gen::map(rc::gen::arbitrary<std::int16_t>(), [](auto v) { return field_value(v); })},
        {1,
         rc::gen::map(rc::gen::arbitrary<std::uint16_t>(), [](auto v) { return field_value(v); })},
        {1,
         rc::gen::map(rc::gen::arbitrary<std::int32_t>(), [](auto v) { return field_value(v); })},
        {1,
         rc::gen::map(rc::gen::arbitrary<std::uint32_t>(), [](auto v) { return field_value(v); })},
        {1,
         rc::gen::map(rc::gen::arbitrary<std::int64_t>(), [](auto v) { return field_value(v); })},
        {1, rc::gen::map(finite<float>(), [](float v) { return field_value(v); })},
        {1, rc::gen::map(finite<double>(), [](double v) { return field_value(v); })},
        {1, rc::gen::exec([] {
             return field_value(
                 decimal{*rc::gen::arbitrary<std::uint8_t>(), *rc::gen::arbitrary<std::int32_t>()});
         })},
        {2, rc::gen::map(text(300), [](std::string v) { return field_value(std::move(v)); })},
        {1, rc::gen::map(
                rc::gen::arbitrary<std::int64_t>(),
                [](std::int64_t s) { return field_value(timestamp{std::chrono::seconds{s}}); })},
        {1, rc::gen::map(text(40),
                         [](const std::string& s) {
                             const auto* p = reinterpret_cast<const std::byte*>(s.data());
                             return field_value(byte_array(p, p + s.size()));
                         })},
    });
}

/// A value of any type; tables and arrays only while `depth` allows.
rc::Gen<field_value> values(int depth) {
    if (depth <= 0)
        return scalars();
    return rc::gen::weightedOneOf<field_value>({
        {14, scalars()},
        {1,
         rc::gen::map(tables(depth - 1), [](field_table t) { return field_value(std::move(t)); })},
        {1, rc::gen::mapcat(rc::gen::inRange(0, 5),
                            [depth](int n) {
                                return rc::gen::map(
                                    rc::gen::container<std::vector<field_value>>(
                                        static_cast<std::size_t>(n), values(depth - 1)),
                                    [](std::vector<field_value> v) {
                                        return field_value(field_array(std::move(v)));
                                    });
                            })},
    });
}

rc::Gen<field_table> tables(int depth) {
    return rc::gen::exec([depth] {
        field_table t;
        const auto n = *rc::gen::inRange(0, 6);
        for (int i = 0; i < n; ++i)
            t.set(*text(255), *values(depth));
        return t;
    });
}

/// Fills a method's arguments with random values (the decoding half of the visitor protocol).
struct random_arguments {
    void bit(bool& v) { v = *rc::gen::arbitrary<bool>(); }
    void u8(std::uint8_t& v) { v = *rc::gen::arbitrary<std::uint8_t>(); }
    void u16(std::uint16_t& v) { v = *rc::gen::arbitrary<std::uint16_t>(); }
    void u32(std::uint32_t& v) { v = *rc::gen::arbitrary<std::uint32_t>(); }
    void u64(std::uint64_t& v) { v = *rc::gen::arbitrary<std::uint64_t>(); }
    void shortstr(std::string& v) { v = *short_text(); }
    void longstr(std::string& v) { v = *text(1000); }
    void table(field_table& v) { v = *tables(2); }
    void reserved_u16() {}
    void reserved_shortstr() {}
    void reserved_longstr() {}
    void reserved_bit() {}
};

template <std::size_t... I>
codec::method method_at(std::size_t index, std::index_sequence<I...>) {
    codec::method m;
    (void)((index == I
                ? (
                      [&] {
                          auto& alternative = m.template emplace<I>();
                          random_arguments filler;
                          codec::detail::method_fields<
                              std::variant_alternative_t<I, codec::method>>::apply(filler,
                                                                                   alternative);
                      }(),
                      true)
                : false) ||
           ...);
    return m;
}

rc::Gen<codec::method> methods() {
    return rc::gen::exec([] {
        constexpr auto n = std::variant_size_v<codec::method>;
        const auto index = *rc::gen::inRange<std::size_t>(0, n);
        return method_at(index, std::make_index_sequence<n>{});
    });
}

template <class T>
std::optional<T> maybe(const rc::Gen<T>& gen) {
    if (*rc::gen::arbitrary<bool>())
        return *gen;
    return std::nullopt;
}

rc::Gen<codec::basic_properties> properties() {
    return rc::gen::exec([] {
        codec::basic_properties p;
        p.content_type = maybe(short_text());
        p.content_encoding = maybe(short_text());
        p.headers = maybe(tables(2));
        p.delivery_mode = maybe(rc::gen::arbitrary<std::uint8_t>());
        p.priority = maybe(rc::gen::arbitrary<std::uint8_t>());
        p.correlation_id = maybe(short_text());
        p.reply_to = maybe(short_text());
        p.expiration = maybe(short_text());
        p.message_id = maybe(short_text());
        p.timestamp = maybe(rc::gen::map(rc::gen::arbitrary<std::int64_t>(), [](std::int64_t s) {
            return letterbox::timestamp{std::chrono::seconds{s}};
        }));
        p.type = maybe(short_text());
        p.user_id = maybe(short_text());
        p.app_id = maybe(short_text());
        p.cluster_id = maybe(short_text());
        return p;
    });
}

rc::Gen<letterbox::message> messages() {
    return rc::gen::exec([] {
        letterbox::message m;
        if (*rc::gen::arbitrary<bool>()) {
            letterbox::message_id_generator ids(*rc::gen::arbitrary<std::uint64_t>());
            m.id = ids();
        }
        m.type = *short_text();
        m.headers = *tables(2);
        m.body = *text(5000);
        auto& p = m.properties;
        p.content_type = maybe(short_text());
        p.content_encoding = maybe(short_text());
        p.correlation_id = maybe(short_text());
        p.reply_to = maybe(short_text());
        p.expiration = maybe(short_text());
        p.timestamp = maybe(rc::gen::map(rc::gen::arbitrary<std::int64_t>(), [](std::int64_t s) {
            return letterbox::timestamp{std::chrono::seconds{s}};
        }));
        p.persistent = *rc::gen::arbitrary<bool>();
        p.priority = maybe(rc::gen::arbitrary<std::uint8_t>());
        p.app_id = maybe(short_text());
        p.user_id = maybe(short_text());
        return m;
    });
}

// ---- running ----------------------------------------------------------------------------------

rc::detail::TestParams test_params() {
    auto params = rc::detail::configuration().testParams;
    const char* env = std::getenv("RC_PARAMS");
    const auto mentions = [env](std::string_view key) {
        return env != nullptr && std::string_view(env).find(key) != std::string_view::npos;
    };
    if (!mentions("seed="))
        params.seed = letterbox::testing::test_seed();
    if (!mentions("max_success="))
        params.maxSuccess = kMaxSuccess;
    return params;
}

template <class Testable>
void check_property(const char* id, Testable&& testable) {
    const auto params = test_params();
    INFO("LETTERBOX_SEED=" << letterbox::testing::test_seed() << " (RapidCheck seed " << params.seed
                           << ", " << params.maxSuccess << " cases)");
    rc::detail::TestMetadata metadata;
    metadata.id = id;
    metadata.description = id;
    const auto result =
        rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
    std::ostringstream report;
    rc::detail::printResultMessage(result, report);
    INFO(report.str());
    REQUIRE(result.template is<rc::detail::SuccessResult>());
}

} // namespace

TEST_CASE("every method encodes and decodes to itself", "[property][amqp][codec]") {
    check_property("amqp_codec/method", [] {
        const auto m = *methods();
        RC_TAG(std::string(codec::name_of(m)));
        std::string wire;
        RC_ASSERT_FALSE(codec::encode(m, wire));
        std::error_code ec;
        const auto back = codec::decode_method(wire, ec);
        RC_ASSERT_FALSE(ec);
        RC_ASSERT(back == m);
    });
}

TEST_CASE("basic properties round-trip through a content header", "[property][amqp][codec]") {
    check_property("amqp_codec/content_header", [] {
        codec::content_header h;
        h.body_size = *rc::gen::arbitrary<std::uint64_t>();
        h.properties = *properties();
        std::string wire;
        RC_ASSERT_FALSE(codec::encode(h, wire));
        std::error_code ec;
        RC_ASSERT(codec::decode_content_header(wire, ec) == h);
        RC_ASSERT_FALSE(ec);
    });
}

TEST_CASE("field tables with every value type round-trip", "[property][amqp][codec]") {
    check_property("amqp_codec/field_table", [] {
        const auto t = *tables(4);
        std::string wire;
        RC_ASSERT_FALSE(codec::encode(t, wire));
        std::error_code ec;
        RC_ASSERT(codec::decode_field_table(wire, ec) == t);
        RC_ASSERT_FALSE(ec);
    });
}

TEST_CASE("a message maps to properties and back, through the wire", "[property][amqp][codec]") {
    check_property("amqp_codec/message", [] {
        const auto m = *messages();
        codec::content_header h;
        h.body_size = m.body.size();
        h.properties = codec::to_basic_properties(m);
        std::string wire;
        RC_ASSERT_FALSE(codec::encode(h, wire));
        std::error_code ec;
        const auto decoded = codec::decode_content_header(wire, ec);
        RC_ASSERT_FALSE(ec);
        RC_ASSERT(codec::to_message(decoded.properties, m.body) == m);
    });
}

TEST_CASE("properties from a foreign publisher survive the trip through a message",
          "[property][amqp][codec]") {
    check_property("amqp_codec/foreign_properties", [] {
        auto p = *properties();
        // What a message cannot tell apart (documented in message_mapping.hpp), made canonical.
        if (p.type && p.type->empty())
            p.type.reset();
        if (p.headers && p.headers->empty())
            p.headers.reset();
        if (p.headers) {
            p.headers->erase(codec::foreign_message_id_header);
            p.headers->erase(codec::cluster_id_header);
        }
        p.delivery_mode = p.delivery_mode == std::uint8_t{2} ? std::uint8_t{2} : std::uint8_t{1};
        const auto m = codec::to_message(p, "");
        auto back = codec::to_basic_properties(m);
        // The mapping headers come back out of the table; nothing else moved.
        RC_ASSERT(back == p);
    });
}

TEST_CASE("commands written by the frame writer read back the same in random pieces",
          "[property][amqp][codec]") {
    check_property("amqp_codec/stream", [] {
        const auto frame_max = *rc::gen::element(std::uint32_t{4096}, std::uint32_t{8192},
                                                 std::uint32_t{131072}, std::uint32_t{0});
        codec::frame_writer writer;
        RC_ASSERT_FALSE(writer.set_frame_max(frame_max));
        std::vector<codec::command> sent;
        std::string stream;
        const auto count = *rc::gen::inRange(1, 8);
        for (int i = 0; i < count; ++i) {
            codec::command c;
            c.method = *methods();
            c.channel = codec::class_id_of(c.method) == 10
                            ? std::uint16_t{0}
                            : *rc::gen::inRange<std::uint16_t>(1, 2048);
            std::error_code ec;
            if (codec::has_content(c.method)) {
                c.body = *text(20000);
                c.header =
                    codec::content_header{.body_size = c.body.size(), .properties = *properties()};
                ec =
                    writer.write_content(stream, c.channel, c.method, c.header->properties, c.body);
            } else {
                ec = writer.write_method(stream, c.channel, c.method);
            }
            if (ec) { // too large for this frame_max: nothing was written
                RC_ASSERT(ec == letterbox::errc::invalid_argument);
                continue;
            }
            sent.push_back(std::move(c));
        }

        codec::frame_reader reader;
        RC_ASSERT_FALSE(reader.set_limits(frame_max, 2047));
        std::vector<std::pair<std::uint16_t, codec::content_assembler>> channels;
        std::vector<codec::command> received;
        std::string_view rest = stream;
        std::error_code ec;
        while (!rest.empty()) {
            const auto n = std::min(rest.size(), *rc::gen::inRange<std::size_t>(1, 3000));
            reader.feed(rest.substr(0, n));
            rest.remove_prefix(n);
            while (auto f = reader.next(ec)) {
                auto it = std::find_if(channels.begin(), channels.end(),
                                       [&](const auto& e) { return e.first == f->channel; });
                if (it == channels.end())
                    it = channels.insert(channels.end(), {f->channel, codec::content_assembler{}});
                if (auto c = it->second.feed(*f, ec))
                    received.push_back(std::move(*c));
                RC_ASSERT_FALSE(ec);
            }
            RC_ASSERT_FALSE(ec);
        }
        RC_ASSERT(reader.buffered() == 0U);
        RC_ASSERT(received == sent);
    });
}

} // namespace property_amqp_codec_roundtrip
