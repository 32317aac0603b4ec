// SPDX-License-Identifier: BSL-1.0
// Method payloads against byte vectors written by hand from the AMQP 0-9-1 spec (class and
// method ids, argument order, bit packing) and RabbitMQ's extensions.
#include <letterbox/amqp/codec/method.hpp>

#include "bytes.hpp"

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <system_error>

namespace unit_amqp_codec_method {

using namespace letterbox::amqp::codec;
using amqp_test::bytes;
using letterbox::errc;

namespace {

std::string encoded(const method& m) {
    std::string out;
    const auto ec = encode(m, out);
    REQUIRE_FALSE(ec);
    return out;
}

method decoded(const std::string& payload) {
    std::error_code ec;
    auto m = decode_method(payload, ec);
    INFO(ec.message());
    REQUIRE_FALSE(ec);
    return m;
}

void check_vector(const method& m, const std::string& wire) {
    CHECK(encoded(m) == wire);
    CHECK(decoded(wire) == m);
}

std::error_code decode_error(const std::string& payload) {
    std::error_code ec;
    (void)decode_method(payload, ec);
    return ec;
}

} // namespace

TEST_CASE("connection.tune-ok encodes class 10, method 31, then short, long, short",
          "[amqp][codec][method]") {
    check_vector(connection_tune_ok{.channel_max = 2047, .frame_max = 131072, .heartbeat = 60},
                 bytes({0x00, 0x0A, 0x00, 0x1F, 0x07, 0xFF, 0x00, 0x02, 0x00, 0x00, 0x00, 0x3C}));
}

TEST_CASE("connection.start carries the server properties table and two longstrs",
          "[amqp][codec][method]") {
    connection_start start;
    start.server_properties.set("product", "RabbitMQ");
    start.mechanisms = "PLAIN";
    start.locales = "en_US";
    check_vector(start, bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, // class, method, 0-9
                               0x00, 0x00, 0x00, 0x15,             // table length 21
                               0x07, 'p',  'r',  'o',  'd',  'u',  'c', 't', 'S', 0x00, 0x00,
                               0x00, 0x08, 'R',  'a',  'b',  'b',  'i', 't', 'M', 'Q', //
                               0x00, 0x00, 0x00, 0x05, 'P',  'L',  'A', 'I', 'N',      //
                               0x00, 0x00, 0x00, 0x05, 'e',  'n',  '_', 'U', 'S'}));
}

TEST_CASE("connection.close carries the reply code, text and the failing class and method",
          "[amqp][codec][method]") {
    check_vector(connection_close{.reply_code = 404,
                                  .reply_text = "NOT_FOUND",
                                  .failing_class_id = 60,
                                  .failing_method_id = 20},
                 bytes({0x00, 0x0A, 0x00, 0x32, 0x01, 0x94, 0x09, 'N',  'O',  'T',
                        '_',  'F',  'O',  'U',  'N',  'D',  0x00, 0x3C, 0x00, 0x14}));
}

TEST_CASE("connection.open writes the reserved shortstr and bit and skips them when reading",
          "[amqp][codec][method]") {
    check_vector(connection_open{.virtual_host = "/"},
                 bytes({0x00, 0x0A, 0x00, 0x28, 0x01, '/', 0x00, 0x00}));
    // Whatever a peer puts in the reserved arguments is read and dropped.
    CHECK(decoded(bytes({0x00, 0x0A, 0x00, 0x28, 0x01, '/', 0x02, 'x', 'y', 0x01})) ==
          method(connection_open{.virtual_host = "/"}));
}

TEST_CASE("connection.blocked and unblocked are RabbitMQ's 10/60 and 10/61",
          "[amqp][codec][method]") {
    check_vector(connection_blocked{.reason = "low on memory"},
                 bytes({0x00, 0x0A, 0x00, 0x3C, 0x0D, 'l', 'o', 'w', ' ', 'o', 'n', ' ', 'm', 'e',
                        'm', 'o', 'r', 'y'}));
    check_vector(connection_unblocked{}, bytes({0x00, 0x0A, 0x00, 0x3D}));
}

TEST_CASE("channel.open and channel.open-ok carry only reserved arguments",
          "[amqp][codec][method]") {
    check_vector(channel_open{}, bytes({0x00, 0x14, 0x00, 0x0A, 0x00}));
    check_vector(channel_open_ok{}, bytes({0x00, 0x14, 0x00, 0x0B, 0x00, 0x00, 0x00, 0x00}));
}

TEST_CASE("queue.declare packs its five bits into one octet, low bit first",
          "[amqp][codec][method]") {
    // passive=0 durable=1 exclusive=0 auto-delete=1 no-wait=0 -> 0b01010
    queue_declare d;
    d.queue = "q1";
    d.durable = true;
    d.auto_delete = true;
    check_vector(d, bytes({0x00, 0x32, 0x00, 0x0A, 0x00, 0x00, 0x02, 'q', '1', 0x0A, 0x00, 0x00,
                           0x00, 0x00}));
}

TEST_CASE("exchange.declare packs passive, durable, auto-delete, internal and no-wait",
          "[amqp][codec][method]") {
    exchange_declare d;
    d.exchange = "x";
    d.type = "topic";
    d.passive = true;
    d.no_wait = true;
    check_vector(d, bytes({0x00, 0x28, 0x00, 0x0A, 0x00, 0x00, 0x01, 'x', 0x05, 't', 'o', 'p', 'i',
                           'c', 0x11, 0x00, 0x00, 0x00, 0x00}));
}

TEST_CASE("exchange.unbind-ok is method 51, as RabbitMQ numbers it", "[amqp][codec][method]") {
    check_vector(exchange_unbind_ok{}, bytes({0x00, 0x28, 0x00, 0x33}));
}

TEST_CASE("basic.publish: reserved short, exchange, routing key, mandatory and immediate bits",
          "[amqp][codec][method]") {
    check_vector(basic_publish{.exchange = "ex", .routing_key = "rk", .mandatory = true},
                 bytes({0x00, 0x3C, 0x00, 0x28, 0x00, 0x00, 0x02, 'e', 'x', 0x02, 'r', 'k', 0x01}));
}

TEST_CASE("basic.deliver: consumer tag, 64-bit delivery tag, redelivered bit, exchange, key",
          "[amqp][codec][method]") {
    check_vector(basic_deliver{.consumer_tag = "c",
                               .delivery_tag = 0x0102030405060708ULL,
                               .redelivered = true,
                               .exchange = "",
                               .routing_key = "k"},
                 bytes({0x00, 0x3C, 0x00, 0x3C, 0x01, 'c', 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                        0x08, 0x01, 0x00, 0x01, 'k'}));
}

TEST_CASE("basic.get-ok ends with the message count after the two shortstrs",
          "[amqp][codec][method]") {
    check_vector(basic_get_ok{.delivery_tag = 1,
                              .redelivered = false,
                              .exchange = "e",
                              .routing_key = "",
                              .message_count = 7},
                 bytes({0x00, 0x3C, 0x00, 0x47, 0,   0,    0,    0,    0,    0,
                        0,    1,    0x00, 0x01, 'e', 0x00, 0x00, 0x00, 0x00, 0x07}));
}

TEST_CASE("basic.nack (RabbitMQ, 60/120) packs multiple and requeue", "[amqp][codec][method]") {
    check_vector(basic_nack{.delivery_tag = 5, .multiple = true, .requeue = true},
                 bytes({0x00, 0x3C, 0x00, 0x78, 0, 0, 0, 0, 0, 0, 0, 5, 0x03}));
    check_vector(basic_ack{.delivery_tag = 5, .multiple = false},
                 bytes({0x00, 0x3C, 0x00, 0x50, 0, 0, 0, 0, 0, 0, 0, 5, 0x00}));
}

TEST_CASE("basic.qos: prefetch size, prefetch count, global", "[amqp][codec][method]") {
    check_vector(basic_qos{.prefetch_size = 0, .prefetch_count = 100, .global = false},
                 bytes({0x00, 0x3C, 0x00, 0x0A, 0, 0, 0, 0, 0x00, 0x64, 0x00}));
}

TEST_CASE("confirm.select (85/10) and the tx methods (90/x)", "[amqp][codec][method]") {
    check_vector(confirm_select{.no_wait = false}, bytes({0x00, 0x55, 0x00, 0x0A, 0x00}));
    check_vector(confirm_select_ok{}, bytes({0x00, 0x55, 0x00, 0x0B}));
    check_vector(tx_select{}, bytes({0x00, 0x5A, 0x00, 0x0A}));
    check_vector(tx_rollback_ok{}, bytes({0x00, 0x5A, 0x00, 0x1F}));
}

TEST_CASE("every method alternative encodes to its own class and method id and decodes back",
          "[amqp][codec][method]") {
    // Walks the whole variant: default-constructed values round-trip, ids are unique.
    std::vector<std::pair<std::uint16_t, std::uint16_t>> seen;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
                const method m{std::in_place_index<I>};
                const auto wire = encoded(m);
                REQUIRE(wire.size() >= 4);
                CHECK(decoded(wire) == m);
                const auto id = std::pair{class_id_of(m), method_id_of(m)};
                CHECK(std::find(seen.begin(), seen.end(), id) == seen.end());
                seen.push_back(id);
                CHECK_FALSE(name_of(m).empty());
            }(),
            ...);
    }
    (std::make_index_sequence<std::variant_size_v<method>>{});
    CHECK(seen.size() == 61);
}

TEST_CASE("has_content is true exactly for publish, return, deliver and get-ok",
          "[amqp][codec][method]") {
    CHECK(has_content(basic_publish{}));
    CHECK(has_content(basic_return{}));
    CHECK(has_content(basic_deliver{}));
    CHECK(has_content(basic_get_ok{}));
    CHECK_FALSE(has_content(basic_get{}));
    CHECK_FALSE(has_content(basic_ack{}));
    CHECK(name_of(basic_return{}) == "basic.return");
    CHECK(name_of(connection_start_ok{}) == "connection.start-ok");
}

TEST_CASE("an unknown class or method id is command_invalid (503)", "[amqp][codec][method]") {
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x64, 0x00})) == errc::command_invalid); // 60/100
    CHECK(decode_error(bytes({0x00, 0x1E, 0x00, 0x0A})) == errc::command_invalid);       // access.*
    CHECK(decode_error(bytes({0xFF, 0xFF, 0xFF, 0xFF})) == errc::command_invalid);
    CHECK(letterbox::amqp_reply_code(errc::command_invalid) == 503);
}

TEST_CASE("a truncated method, a shortstr past the end and trailing bytes are frame_error (501)",
          "[amqp][codec][method]") {
    CHECK(decode_error(bytes({0x00, 0x0A, 0x00})) == errc::frame_error);
    CHECK(decode_error(bytes({0x00, 0x0A, 0x00, 0x1F, 0x07, 0xFF})) == errc::frame_error);
    // basic.deliver whose consumer tag claims 200 bytes of a 2-byte payload
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x3C, 0xC8, 'c'})) == errc::frame_error);
    // tx.select with a stray byte
    CHECK(decode_error(bytes({0x00, 0x5A, 0x00, 0x0A, 0x00})) == errc::frame_error);
}

TEST_CASE("a shortstr argument over 255 bytes is refused and leaves the output untouched",
          "[amqp][codec][method]") {
    std::string out = "prefix";
    CHECK(encode(basic_publish{.exchange = std::string(256, 'e')}, out) == errc::invalid_argument);
    CHECK(out == "prefix");
    CHECK(letterbox::amqp_reply_code(errc::invalid_argument) == 0);
    std::string ok;
    CHECK_FALSE(encode(basic_publish{.exchange = std::string(255, 'e')}, ok));
}

} // namespace unit_amqp_codec_method
