// SPDX-License-Identifier: BSL-1.0
// Writes the seed corpus of amqp_frame_fuzzer (tests/fuzz/corpus/amqp_frame/): small valid
// server streams made with the codec's own writer, and one invalid stream per hostile case of
// the research's D1/D2 tables, written byte by byte.
//
// usage: make_amqp_frame_corpus <dir>           writes the files
//        make_amqp_frame_corpus --check <dir>   fails if a file is missing or differs (ctest)
// Files the generator does not know (inputs a fuzz run found) are left alone either way.
//
// Each file is: one byte for the read size, one byte for the limits (see the fuzzer's header
// comment), then the stream.

#include <letterbox/amqp/codec.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

namespace {

namespace codec = letterbox::amqp::codec;
using letterbox::field_array;
using letterbox::field_table;
using letterbox::field_value;

// Limits byte: frame_max 4096 (0), 131072 (2), none (3); +4 channel_max 2047; +8 1 KiB bodies.
constexpr char frame_max_4096 = 0;
constexpr char frame_max_131072 = 2;
constexpr char channel_max_2047 = 4;
constexpr char small_bodies = 8;

std::string bytes(std::initializer_list<int> octets) {
    std::string out;
    for (const int o : octets)
        out.push_back(static_cast<char>(static_cast<unsigned char>(o)));
    return out;
}

std::string raw_frame(int type, std::uint16_t channel, std::string_view payload, std::uint32_t size,
                      int end = 0xCE) {
    std::string out = bytes({type, channel >> 8, channel & 0xFF, static_cast<int>(size >> 24),
                             static_cast<int>((size >> 16) & 0xFF),
                             static_cast<int>((size >> 8) & 0xFF), static_cast<int>(size & 0xFF)});
    out.append(payload);
    out.push_back(static_cast<char>(static_cast<unsigned char>(end)));
    return out;
}

std::string raw_frame(int type, std::uint16_t channel, std::string_view payload) {
    return raw_frame(type, channel, payload, static_cast<std::uint32_t>(payload.size()));
}

std::string method_frame(std::uint16_t channel, const codec::method& m,
                         std::uint32_t frame_max = 131072) {
    codec::frame_writer w;
    (void)w.set_frame_max(frame_max);
    std::string out;
    if (w.write_method(out, channel, m))
        throw std::runtime_error("cannot write a seed method");
    return out;
}

std::string content(std::uint16_t channel, const codec::method& m, const codec::basic_properties& p,
                    std::string_view body, std::uint32_t frame_max = 4096) {
    codec::frame_writer w;
    (void)w.set_frame_max(frame_max);
    std::string out;
    if (w.write_content(out, channel, m, p, body))
        throw std::runtime_error("cannot write seed content");
    return out;
}

std::string method_payload(const codec::method& m) {
    std::string out;
    (void)codec::encode(m, out);
    return out;
}

std::string header_payload(const codec::content_header& h) {
    std::string out;
    (void)codec::encode(h, out);
    return out;
}

std::string heartbeat() {
    return raw_frame(8, 0, "");
}

field_table rich_headers() {
    field_table death{{"count", std::int64_t{2}},
                      {"reason", "rejected"},
                      {"queue", "orders"},
                      {"time", letterbox::timestamp{std::chrono::seconds{1700000000}}},
                      {"exchange", ""},
                      {"routing-keys", field_array{field_value("orders.new")}}};
    field_table t;
    t.set("x-death", field_array{field_value(death)});
    t.set("x-first-death-reason", "rejected");
    t.set("bool", true);
    t.set("i8", std::int8_t{-8});
    t.set("u8", std::uint8_t{200});
    t.set("i16", std::int16_t{-1600});
    t.set("u16", std::uint16_t{60000});
    t.set("i32", std::int32_t{-320000});
    t.set("u32", std::uint32_t{4000000000U});
    t.set("i64", std::int64_t{-6400000000LL});
    t.set("f", 1.5F);
    t.set("d", -2.25);
    t.set("dec", letterbox::decimal{2, 12345});
    t.set("bytes", letterbox::byte_array{std::byte{0}, std::byte{0xCE}, std::byte{0xFF}});
    t.set("void", nullptr);
    return t;
}

codec::basic_properties every_property() {
    codec::basic_properties p;
    p.content_type = "application/json";
    p.content_encoding = "identity";
    p.headers = rich_headers();
    p.delivery_mode = 2;
    p.priority = 5;
    p.correlation_id = "corr-1";
    p.reply_to = "amq.rabbitmq.reply-to";
    p.expiration = "60000";
    p.message_id = "8d3c1a54-2f7e-4c0b-9a51-0c3e6d2b7f10";
    p.timestamp = letterbox::timestamp{std::chrono::seconds{1700000000}};
    p.type = "order.created";
    p.user_id = "guest";
    p.app_id = "shop";
    p.cluster_id = "c1";
    return p;
}

std::string nested_table(int depth) {
    // A table holding a table ... `depth` levels deep, written by hand.
    std::string inner = bytes({0, 0, 0, 0});
    for (int level = 1; level < depth; ++level) {
        const std::string entry = bytes({1, 'n', 'F'}) + inner;
        const auto n = static_cast<std::uint32_t>(entry.size());
        inner = bytes({static_cast<int>(n >> 24), static_cast<int>((n >> 16) & 0xFF),
                       static_cast<int>((n >> 8) & 0xFF), static_cast<int>(n & 0xFF)}) +
                entry;
    }
    return inner;
}

std::map<std::string, std::string> corpus() {
    std::map<std::string, std::string> files;
    const auto add = [&files](const std::string& name, char chunk, char limits,
                              const std::string& stream) {
        files[name] = std::string{chunk, limits} + stream;
    };
    const codec::basic_deliver deliver{
        .consumer_tag = "ctag-1", .delivery_tag = 1, .exchange = "orders", .routing_key = "new"};

    // ---- valid streams ----------------------------------------------------------------------
    codec::connection_start start;
    start.server_properties.set("product", "RabbitMQ");
    start.server_properties.set("version", "3.10.8");
    start.server_properties.set("capabilities", field_table{{"publisher_confirms", true},
                                                            {"consumer_cancel_notify", true},
                                                            {"connection.blocked", true},
                                                            {"basic.nack", true},
                                                            {"exchange_exchange_bindings", true}});
    start.mechanisms = "AMQPLAIN PLAIN";
    start.locales = "en_US";
    add("valid-handshake", 63, frame_max_4096,
        method_frame(0, start, 4096) +
            method_frame(
                0,
                codec::connection_tune{.channel_max = 2047, .frame_max = 131072, .heartbeat = 60}) +
            method_frame(0, codec::connection_open_ok{}));
    add("valid-handshake-read-by-byte", 0, frame_max_4096,
        method_frame(0, start, 4096) + method_frame(0, codec::connection_tune{}));
    add("valid-consume-and-deliver", 7, frame_max_4096,
        method_frame(1, codec::channel_open_ok{}) + method_frame(1, codec::basic_qos_ok{}) +
            method_frame(1, codec::basic_consume_ok{.consumer_tag = "ctag-1"}) +
            content(1, deliver, every_property(), std::string(10000, 'b')));
    add("valid-deliver-empty-body", 16, frame_max_4096,
        content(1, deliver, codec::basic_properties{}, ""));
    add("valid-deliver-two-channels-interleaved", 5, channel_max_2047, [&] {
        // Method, header and body of channel 1 interleaved with channel 2's.
        const auto a = content(1, deliver, {}, "abc");
        const auto b = content(2, deliver, {}, "de");
        // Each content is three frames; split at frame boundaries by re-reading them.
        codec::frame_reader r;
        (void)r.set_limits(0, 0);
        std::vector<std::string> fa, fb;
        std::error_code ec;
        r.feed(a);
        while (auto f = r.next(ec))
            fa.push_back(raw_frame(static_cast<int>(f->type), f->channel, f->payload));
        r.feed(b);
        while (auto f = r.next(ec))
            fb.push_back(raw_frame(static_cast<int>(f->type), f->channel, f->payload));
        std::string out;
        for (std::size_t i = 0; i < fa.size(); ++i)
            out += fa[i] + fb[i];
        return out;
    }());
    add("valid-publisher-confirms", 9, frame_max_131072,
        method_frame(1, codec::confirm_select_ok{}) +
            method_frame(1, codec::basic_ack{.delivery_tag = 3, .multiple = true}) +
            method_frame(1, codec::basic_nack{.delivery_tag = 4, .multiple = false}) + heartbeat());
    add("valid-basic-return-then-ack", 11, frame_max_131072,
        content(1,
                codec::basic_return{.reply_code = 312,
                                    .reply_text = "NO_ROUTE",
                                    .exchange = "orders",
                                    .routing_key = "nowhere"},
                every_property(), "{\"id\":1}") +
            method_frame(1, codec::basic_ack{.delivery_tag = 1}));
    add("valid-get-ok-and-get-empty", 13, frame_max_4096,
        content(1,
                codec::basic_get_ok{.delivery_tag = 7,
                                    .redelivered = true,
                                    .exchange = "",
                                    .routing_key = "q",
                                    .message_count = 2},
                {}, "payload") +
            method_frame(1, codec::basic_get_empty{}));
    add("valid-server-cancel-and-channel-close", 3, frame_max_4096,
        method_frame(1, codec::basic_cancel{.consumer_tag = "ctag-1"}) +
            method_frame(1, codec::channel_close{.reply_code = 406,
                                                 .reply_text = "PRECONDITION_FAILED - unknown "
                                                               "delivery tag 9",
                                                 .failing_class_id = 60,
                                                 .failing_method_id = 80}));
    add("valid-blocked-unblocked-close", 2, frame_max_4096,
        method_frame(0, codec::connection_blocked{.reason = "low on memory"}) + heartbeat() +
            method_frame(0, codec::connection_unblocked{}) +
            method_frame(
                0, codec::connection_close{.reply_code = 320, .reply_text = "CONNECTION_FORCED"}));
    add("valid-declare-oks", 17, frame_max_4096,
        method_frame(1, codec::exchange_declare_ok{}) +
            method_frame(1, codec::queue_declare_ok{.queue = "amq.gen-1",
                                                    .message_count = 5,
                                                    .consumer_count = 1}) +
            method_frame(1, codec::queue_bind_ok{}) +
            method_frame(1, codec::queue_purge_ok{.message_count = 5}) +
            method_frame(1, codec::queue_delete_ok{.message_count = 0}));
    add("valid-every-method", 64, frame_max_131072, [] {
        std::string out;
        [&out]<std::size_t... I>(std::index_sequence<I...>) {
            ((out +=
              method_frame(std::variant_alternative_t<I, codec::method>::class_id == 10 ? 0 : 1,
                           codec::method{std::in_place_index<I>})),
             ...);
        }
        (std::make_index_sequence<std::variant_size_v<codec::method>>{});
        return out;
    }());
    add("valid-field-table-only", 64, frame_max_131072, [] {
        std::string out;
        (void)codec::encode(rich_headers(), out);
        return out;
    }());
    add("valid-nested-table-depth-32", 64, frame_max_131072, nested_table(32));
    add("valid-large-frame-max", 64, 3, content(1, deliver, {}, std::string(20000, 'x'), 0));

    // ---- invalid streams --------------------------------------------------------------------
    add("invalid-frame-larger-than-frame-max", 64, frame_max_4096,
        raw_frame(3, 1, std::string(4089, 'x')));
    add("invalid-frame-size-header-only", 7, frame_max_4096,
        raw_frame(3, 1, "", 5000).substr(0, 7));
    add("invalid-32bit-length-wrap", 3, 3, raw_frame(3, 1, "", 0xFFFFFFF9U).substr(0, 7));
    add("invalid-length-ffffffff", 1, 3, raw_frame(1, 0, "", 0xFFFFFFFFU).substr(0, 7));
    add("invalid-undersized-method", 64, frame_max_4096,
        raw_frame(1, 1, bytes({0x00, 0x3C, 0x00})));
    add("invalid-undersized-header", 64, frame_max_4096, raw_frame(2, 1, std::string(13, '\0')));
    add("invalid-heartbeat-with-payload", 64, frame_max_4096, raw_frame(8, 0, "x"));
    add("invalid-heartbeat-on-channel-1", 64, frame_max_4096, raw_frame(8, 1, ""));
    add("invalid-bad-frame-end", 64, frame_max_4096, raw_frame(3, 1, "abc", 3, 0x00));
    add("invalid-size-one-short", 64, frame_max_4096, raw_frame(3, 1, "abcd", 3));
    add("invalid-unknown-frame-type-4", 64, frame_max_4096, raw_frame(4, 0, ""));
    add("invalid-unknown-frame-type-0", 64, frame_max_4096, heartbeat() + raw_frame(0, 0, ""));
    add("invalid-protocol-header-reply", 64, frame_max_4096, std::string(codec::protocol_header));
    add("invalid-http-response", 5, frame_max_4096,
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    add("invalid-channel-above-channel-max", 64, channel_max_2047, raw_frame(3, 2048, "x"));
    add("invalid-body-longer-than-declared", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, header_payload(codec::content_header{.body_size = 3})) +
            raw_frame(3, 1, "abcd"));
    add("invalid-body-overrun-second-frame", 2, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, header_payload(codec::content_header{.body_size = 3})) +
            raw_frame(3, 1, "ab") + raw_frame(3, 1, "cd"));
    add("invalid-header-without-method", 64, frame_max_4096,
        raw_frame(2, 1, header_payload(codec::content_header{.body_size = 1})));
    add("invalid-body-without-header", 64, frame_max_4096,
        method_frame(1, deliver) + raw_frame(3, 1, "a"));
    add("invalid-method-during-content", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, header_payload(codec::content_header{.body_size = 10})) +
            raw_frame(3, 1, "abc") + method_frame(1, codec::basic_ack{.delivery_tag = 1}));
    add("invalid-content-too-large", 64, small_bodies,
        method_frame(1, deliver) +
            raw_frame(2, 1, header_payload(codec::content_header{.body_size = 1025})));
    add("invalid-declared-body-size-huge", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, header_payload(codec::content_header{.body_size = ~0ULL})));
    add("invalid-connection-method-on-channel-1", 64, frame_max_4096,
        method_frame(1, codec::connection_close{.reply_code = 200}));
    add("invalid-basic-method-on-channel-0", 64, frame_max_4096,
        method_frame(0, codec::basic_qos_ok{}));
    add("invalid-unknown-method", 64, frame_max_4096,
        raw_frame(1, 1, bytes({0x00, 0x3C, 0x00, 0x64, 0x00})));
    add("invalid-trailing-method-bytes", 64, frame_max_4096,
        raw_frame(1, 1, method_payload(codec::tx_select_ok{}) + "x"));
    add("invalid-shortstr-past-payload", 64, frame_max_4096,
        raw_frame(1, 1, bytes({0x00, 0x3C, 0x00, 0x3C, 0xC8, 'c'})));
    add("invalid-truncated-table", 64, frame_max_4096,
        raw_frame(1, 0,
                  bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, 0x00, 0x00, 0x00, 0x10, 0x01, 'a', 'S',
                         0x00, 0x00, 0x00, 0x02, 'x'})));
    add("invalid-table-length-wrap", 64, frame_max_4096,
        raw_frame(1, 0, bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, 0xFF, 0xFF, 0xFF, 0xFC, 0x00})));
    add("invalid-table-nesting-33", 64, frame_max_131072, nested_table(33));
    add("invalid-table-unknown-tag", 64, frame_max_131072,
        bytes({0x00, 0x00, 0x00, 0x04, 0x01, 'a', 'U', 0x00}));
    add("invalid-header-reserved-flag", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, bytes({0x00, 0x3C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x02})));
    add("invalid-header-continuation-flag", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1,
                      bytes({0x00, 0x3C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0x00, 0x00})));
    add("invalid-header-weight", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, bytes({0x00, 0x3C, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00})));
    add("invalid-header-class", 64, frame_max_4096,
        method_frame(1, deliver) +
            raw_frame(2, 1, bytes({0x00, 0x3D, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00})));
    add("invalid-truncated-stream", 64, frame_max_4096, method_frame(1, deliver).substr(0, 12));
    return files;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

int main(int argc, char** argv) {
    const bool check = argc == 3 && std::string_view(argv[1]) == "--check";
    if (argc != 2 && !check) {
        std::cerr << "usage: " << argv[0] << " [--check] <dir>\n";
        return 2;
    }
    const std::filesystem::path dir = argv[argc - 1];
    int problems = 0;
    const auto files = corpus();
    if (!check)
        std::filesystem::create_directories(dir);
    for (const auto& [name, data] : files) {
        const auto path = dir / name;
        if (check) {
            if (!std::filesystem::exists(path) || read_file(path) != data) {
                std::cerr << "out of date: " << path.string() << '\n';
                ++problems;
            }
        } else {
            std::ofstream(path, std::ios::binary)
                .write(data.data(), static_cast<std::streamsize>(data.size()));
        }
    }
    if (problems != 0) {
        std::cerr << problems << " corpus file(s) differ from the generator; regenerate with "
                  << argv[0] << ' ' << dir.string() << '\n';
        return 1;
    }
    std::cout << (check ? "checked " : "wrote ") << files.size() << " corpus files in "
              << dir.string() << '\n';
    return 0;
}
