// SPDX-License-Identifier: BSL-1.0
// The codec umbrella, used the way a connection uses it: bytes from a (scripted) server go
// through the reader and the per-channel assemblers; answers go through the writer. The regions
// between //[name and //] are shown in docs/amqp.md ("Codec").
#include <letterbox/amqp/codec.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <system_error>
#include <vector>

namespace unit_amqp_codec {

namespace codec = letterbox::amqp::codec;

namespace {

/// What a scripted server sends: the handshake, then a delivery on channel 1.
std::string server_bytes() {
    codec::frame_writer w;
    std::string out;
    codec::connection_start start;
    start.mechanisms = "PLAIN";
    start.locales = "en_US";
    REQUIRE_FALSE(w.write_method(out, 0, start));
    REQUIRE_FALSE(w.write_method(
        out, 0, codec::connection_tune{.channel_max = 2047, .frame_max = 131072, .heartbeat = 60}));
    REQUIRE_FALSE(w.write_method(out, 0, codec::connection_open_ok{}));
    REQUIRE_FALSE(w.set_frame_max(131072));
    REQUIRE_FALSE(w.write_method(out, 1, codec::channel_open_ok{}));
    letterbox::message m;
    m.id = *letterbox::parse_message_id("8d3c1a54-2f7e-4c0b-9a51-0c3e6d2b7f10");
    m.type = "order.created";
    m.body = std::string(300000, 'x'); // three body frames at 131072
    REQUIRE_FALSE(w.write_content(out, 1,
                                  codec::basic_deliver{.consumer_tag = "c1",
                                                       .delivery_tag = 1,
                                                       .exchange = "orders",
                                                       .routing_key = "orders.created"},
                                  codec::to_basic_properties(m), m.body));
    return out;
}

//[amqp_codec_connection
/// The codec side of a client connection: no socket, no timer. `on_bytes` takes what the socket
/// read; `outbox` collects what to write (one coalesced buffer per write).
class connection_sketch {
public:
    std::string outbox;
    std::vector<letterbox::message> delivered;
    std::error_code closed_with; // set when the connection must close: send connection.close
                                 // with amqp_reply_code(closed_with), then drop the socket

    connection_sketch() { codec::frame_writer::write_protocol_header(outbox); }

    void on_bytes(std::string_view bytes) {
        reader_.feed(bytes); // or: read into reader_.prepare(n), then reader_.commit(read)
        std::error_code ec;
        while (auto frame = reader_.next(ec)) {
            if (frame->type == codec::frame_type::heartbeat)
                continue; // note liveness
            // One assembler per open channel; a frame for a channel we never opened is refused
            // before any state exists for it.
            auto channel = channels_.find(frame->channel);
            if (channel == channels_.end()) {
                ec = letterbox::errc::channel_error;
                break;
            }
            if (auto command = channel->second.feed(*frame, ec))
                on_command(std::move(*command), ec);
            if (ec)
                break;
        }
        if (ec)
            closed_with = ec;
    }

private:
    void on_command(codec::command&& c, std::error_code& ec) {
        if (std::holds_alternative<codec::connection_start>(c.method)) {
            codec::connection_start_ok ok;
            ok.client_properties.set("product", "letterbox");
            ok.response = std::string("\0guest\0guest", 12);
            ec = writer_.write_method(outbox, 0, ok);
        } else if (const auto* tune = std::get_if<codec::connection_tune>(&c.method)) {
            const auto frame_max = codec::negotiate_frame_max(0, tune->frame_max, ec);
            if (ec)
                return; // a server below 4096: close with 502
            const auto channel_max = codec::negotiate_channel_max(0, tune->channel_max);
            (void)reader_.set_limits(frame_max, channel_max);
            (void)writer_.set_frame_max(frame_max);
            ec = writer_.write_method(outbox, 0,
                                      codec::connection_tune_ok{.channel_max = channel_max,
                                                                .frame_max = frame_max,
                                                                .heartbeat = tune->heartbeat});
            if (!ec)
                ec = writer_.write_method(outbox, 0, codec::connection_open{.virtual_host = "/"});
        } else if (std::holds_alternative<codec::connection_open_ok>(c.method)) {
            channels_.try_emplace(1);
            ec = writer_.write_method(outbox, 1, codec::channel_open{});
        } else if (c.header) { // basic.deliver, basic.get-ok, basic.return
            delivered.push_back(codec::to_message(std::move(c), ec));
        }
    }

    codec::frame_reader reader_;
    codec::frame_writer writer_;
    std::map<std::uint16_t, codec::content_assembler> channels_{{0, {}}};
};
//]

} // namespace

TEST_CASE("a connection built on the codec handshakes and receives a split delivery",
          "[amqp][codec]") {
    const auto stream = server_bytes();
    connection_sketch connection;
    // The server's bytes arrive in awkward pieces.
    for (std::size_t at = 0; at < stream.size(); at += 1000)
        connection.on_bytes(std::string_view(stream).substr(at, 1000));
    CHECK_FALSE(connection.closed_with);
    REQUIRE(connection.delivered.size() == 1);
    const auto& m = connection.delivered[0];
    CHECK(letterbox::to_string(m.id) == "8d3c1a54-2f7e-4c0b-9a51-0c3e6d2b7f10");
    CHECK(m.type == "order.created");
    CHECK(m.exchange == "orders");
    CHECK(m.body.size() == 300000);

    // What the client wrote: protocol header, start-ok, tune-ok, open, channel.open.
    codec::frame_reader reader;
    REQUIRE(connection.outbox.substr(0, 8) == codec::protocol_header);
    reader.feed(std::string_view(connection.outbox).substr(8));
    std::vector<std::string_view> names;
    std::error_code ec;
    while (auto f = reader.next(ec))
        names.push_back(codec::name_of(codec::decode_method(f->payload, ec)));
    CHECK(names == std::vector<std::string_view>{"connection.start-ok", "connection.tune-ok",
                                                 "connection.open", "channel.open"});
}

TEST_CASE("a hostile frame closes the sketch connection with the reply code", "[amqp][codec]") {
    connection_sketch connection;
    connection.on_bytes(std::string("\x03\x00\x07\x00\x00\x00\x00\xCE", 8)); // channel 7
    CHECK(connection.closed_with == letterbox::errc::channel_error);
    CHECK(letterbox::amqp_reply_code(letterbox::errc::channel_error) == 504);
}

} // namespace unit_amqp_codec
