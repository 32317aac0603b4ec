// SPDX-License-Identifier: BSL-1.0
// The broker is there and speaks AMQP 0-9-1: the smoke test of the `integration` tests. Written
// with Boost.Asio only (no letterbox component), so it runs whether or not letterbox::amqp is
// built: it connects to the broker LETTERBOX_AMQP_URL names (tests/tools/rabbitmq.sh start prints
// it; make test sets it), sends the protocol header and checks that the reply is RabbitMQ's
// connection.start for AMQP 0-9. Every step is bounded by one deadline, and the reply is parsed
// without trusting any length in it.

#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace integration_broker_smoke {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr std::string_view url_variable = "LETTERBOX_AMQP_URL";
constexpr std::chrono::seconds deadline{15};
// connection.start is a few hundred bytes; anything past this bound is not a sane reply.
constexpr std::uint32_t max_payload = 64 * 1024;

struct broker_address {
    std::string host;
    std::uint16_t port = 5672;
};

// amqp://[user[:password]@]host[:port][/vhost][?query]: host and port only. Not the URL parser
// of letterbox::amqp, just enough to find the broker.
std::optional<broker_address> parse_host_and_port(std::string_view url, std::string& why) {
    constexpr std::string_view scheme = "amqp://";
    if (!url.starts_with(scheme)) {
        why = "does not start with amqp:// (this smoke test speaks plain AMQP only)";
        return std::nullopt;
    }
    std::string_view authority = url.substr(scheme.size());
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        authority.remove_prefix(at + 1);
    }
    broker_address result;
    std::string_view port_text;
    if (authority.starts_with('[')) { // [::1]:5672
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            why = "has an unclosed [ in its host";
            return std::nullopt;
        }
        result.host = std::string(authority.substr(1, close - 1));
        const std::string_view rest = authority.substr(close + 1);
        if (!rest.empty() && !rest.starts_with(':')) {
            why = "has text after its [host]";
            return std::nullopt;
        }
        port_text = rest.empty() ? rest : rest.substr(1);
    } else {
        const auto colon = authority.find(':');
        result.host = std::string(authority.substr(0, colon));
        port_text =
            colon == std::string_view::npos ? std::string_view{} : authority.substr(colon + 1);
    }
    if (result.host.empty()) {
        result.host = "localhost";
    }
    if (!port_text.empty()) {
        unsigned long port = 0;
        for (const char c : port_text) {
            if (c < '0' || c > '9' || port > 65535) {
                why = "has a port that is not a number from 1 to 65535";
                return std::nullopt;
            }
            port = port * 10 + static_cast<unsigned long>(c - '0');
        }
        if (port == 0 || port > 65535) {
            why = "has a port that is not a number from 1 to 65535";
            return std::nullopt;
        }
        result.port = static_cast<std::uint16_t>(port);
    }
    return result;
}

// Reads big-endian integers and strings from a byte range; once a read would pass the end, it
// stays failed and every later read yields zero/empty.
class reader {
public:
    reader(const std::uint8_t* data, std::size_t size)
        : data_(data)
        , size_(size) {}

    bool ok() const { return ok_; }
    std::size_t remaining() const { return ok_ ? size_ - pos_ : 0; }

    std::uint64_t integer(std::size_t width) {
        if (!take(width)) {
            return 0;
        }
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < width; ++i) {
            value = (value << 8U) | data_[pos_ - width + i];
        }
        return value;
    }
    std::uint8_t u8() { return static_cast<std::uint8_t>(integer(1)); }
    std::uint16_t u16() { return static_cast<std::uint16_t>(integer(2)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(integer(4)); }

    std::string_view bytes(std::size_t n) {
        if (!take(n)) {
            return {};
        }
        return {reinterpret_cast<const char*>(data_ + pos_ - n), n};
    }
    std::string_view short_string() { return bytes(u8()); }
    std::string_view long_string() { return bytes(u32()); }
    void skip(std::size_t n) { (void)take(n); }

private:
    bool take(std::size_t n) {
        if (!ok_ || n > size_ - pos_) {
            ok_ = false;
            return false;
        }
        pos_ += n;
        return true;
    }

    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    bool ok_ = true;
};

// Skips one field value of type `type` (AMQP 0-9-1 with RabbitMQ's errata types); false if the
// type is unknown or the value runs past the table.
bool skip_field_value(reader& in, char type) {
    switch (type) {
    case 't':
    case 'b':
    case 'B':
        in.skip(1);
        break;
    case 's':
    case 'u':
        in.skip(2);
        break;
    case 'I':
    case 'i':
    case 'f':
        in.skip(4);
        break;
    case 'l':
    case 'd':
    case 'T':
        in.skip(8);
        break;
    case 'D':
        in.skip(5);
        break;
    case 'S':
    case 'x':
    case 'A':
    case 'F':
        (void)in.long_string();
        break; // u32 length + bytes
    case 'V':
        break;
    default:
        return false;
    }
    return in.ok();
}

struct connection_start {
    unsigned version_major = 0;
    unsigned version_minor = 0;
    std::optional<std::string> product;
    std::string mechanisms;
};

// The payload of a method frame that must be connection.start; the error text on failure.
std::optional<connection_start> parse_connection_start(const std::vector<std::uint8_t>& payload,
                                                       std::string& why) {
    reader in(payload.data(), payload.size());
    const unsigned class_id = in.u16();
    const unsigned method_id = in.u16();
    if (!in.ok() || class_id != 10 || method_id != 10) {
        why = "the method is " + std::to_string(class_id) + "." + std::to_string(method_id) +
              ", not connection.start (10.10)";
        return std::nullopt;
    }
    connection_start start;
    start.version_major = in.u8();
    start.version_minor = in.u8();
    const std::uint32_t table_size = in.u32();
    if (!in.ok() || table_size > in.remaining()) {
        why = "server-properties is longer than the frame";
        return std::nullopt;
    }
    const std::string_view table = in.bytes(table_size);
    reader fields(reinterpret_cast<const std::uint8_t*>(table.data()), table.size());
    while (fields.ok() && fields.remaining() > 0) {
        const std::string_view name = fields.short_string();
        const char type = static_cast<char>(fields.u8());
        if (!fields.ok()) {
            why = "server-properties ends inside a field name";
            return std::nullopt;
        }
        if (name == "product" && (type == 'S' || type == 'x')) {
            const std::string_view value = fields.long_string();
            if (!fields.ok()) {
                why = "server-properties ends inside the product field";
                return std::nullopt;
            }
            start.product = std::string(value);
        } else if (!skip_field_value(fields, type)) {
            why = "server-properties field '" + std::string(name) + "' has an unknown type '" +
                  std::string(1, type) + "' or runs past the table";
            return std::nullopt;
        }
    }
    start.mechanisms = std::string(in.long_string());
    (void)in.long_string(); // locales
    if (!in.ok()) {
        why = "the frame ends before mechanisms and locales";
        return std::nullopt;
    }
    return start;
}

struct exchange_result {
    bool finished = false;
    boost::system::error_code error;
    std::string step;                     // where it failed
    std::array<std::uint8_t, 7> header{}; // type, channel, size
    std::vector<std::uint8_t> payload;
    std::uint8_t frame_end = 0;
};

// Connects to `address`, sends the AMQP 0-9-1 protocol header and reads one frame; all within
// `deadline` (io_context::run_for returns at the deadline, whatever is still pending).
exchange_result protocol_header_exchange(const asio::ip::address& address, std::uint16_t port) {
    asio::io_context io;
    tcp::socket socket(io);
    exchange_result result;
    static constexpr std::array<char, 8> protocol_header{'A', 'M', 'Q', 'P', 0, 0, 9, 1};
    const auto fail = [&](std::string step, boost::system::error_code ec) {
        result.finished = true;
        result.step = std::move(step);
        result.error = ec;
    };

    const tcp::endpoint endpoint(address, port);
    socket.async_connect(endpoint, [&](boost::system::error_code ec) {
        if (ec) {
            return fail("connect", ec);
        }
        asio::async_write(
            socket, asio::buffer(protocol_header), [&](boost::system::error_code ec, std::size_t) {
                if (ec) {
                    return fail("write the protocol header", ec);
                }
                asio::async_read(
                    socket, asio::buffer(result.header),
                    [&](boost::system::error_code ec, std::size_t) {
                        if (ec) {
                            return fail("read the frame header", ec);
                        }
                        if (result.header[0] == 'A') { // "AMQP" + the version it wants instead
                            return fail("speak AMQP 0-9-1 (the broker answered with its "
                                        "protocol header)",
                                        {});
                        }
                        const std::uint32_t size = (std::uint32_t{result.header[3]} << 24U) |
                                                   (std::uint32_t{result.header[4]} << 16U) |
                                                   (std::uint32_t{result.header[5]} << 8U) |
                                                   std::uint32_t{result.header[6]};
                        if (size > max_payload) {
                            return fail("accept a frame of " + std::to_string(size) +
                                            " bytes (over the bound)",
                                        {});
                        }
                        result.payload.resize(size + 1U); // payload + frame-end octet
                        asio::async_read(socket, asio::buffer(result.payload),
                                         [&](boost::system::error_code ec, std::size_t) {
                                             if (ec) {
                                                 return fail("read the frame payload", ec);
                                             }
                                             result.frame_end = result.payload.back();
                                             result.payload.pop_back();
                                             result.finished = true;
                                         });
                    });
            });
    });
    io.run_for(deadline);
    return result;
}

} // namespace

TEST_CASE("the broker of LETTERBOX_AMQP_URL answers the AMQP 0-9-1 header with RabbitMQ's "
          "connection.start",
          "[.integration][broker]") {
    const char* url = std::getenv(std::string(url_variable).c_str());
    if (url == nullptr || *url == '\0') {
        FAIL("LETTERBOX_AMQP_URL is not set: the integration tests need a broker. `make test` "
             "starts one; by hand: `export $(tests/tools/rabbitmq.sh start)`, then ctest -L "
             "integration (docs/testing-with-rabbitmq.md)");
    }
    std::string why;
    const auto target = parse_host_and_port(url, why);
    if (!target) {
        FAIL("LETTERBOX_AMQP_URL " << why);
    }
    boost::system::error_code ec;
    const asio::ip::address address = target->host == "localhost"
                                          ? asio::ip::address(asio::ip::address_v4::loopback())
                                          : asio::ip::make_address(target->host, ec);
    if (ec || !address.is_loopback()) {
        FAIL("LETTERBOX_AMQP_URL's host '" << target->host
                                           << "' is not a loopback address: this test talks to a "
                                              "broker on this machine only");
    }
    INFO("broker at " << address.to_string() << ":" << target->port);

    const exchange_result reply = protocol_header_exchange(address, target->port);
    if (!reply.finished) {
        FAIL("no complete frame from the broker within " << deadline.count() << " s");
    }
    if (!reply.step.empty()) {
        FAIL("could not " << reply.step
                          << (reply.error ? ": " + reply.error.message() : std::string{}));
    }
    const unsigned frame_type = reply.header[0];
    const unsigned channel = (unsigned{reply.header[1]} << 8U) | reply.header[2];
    CHECK(frame_type == 1); // a method frame
    CHECK(channel == 0);
    CHECK(reply.frame_end == 0xCE);
    REQUIRE(frame_type == 1);

    const auto start = parse_connection_start(reply.payload, why);
    if (!start) {
        FAIL("the reply is not a well-formed connection.start: " << why);
    }
    CHECK(start->version_major == 0);
    CHECK(start->version_minor == 9);
    REQUIRE(start->product.has_value());
    CHECK(*start->product == "RabbitMQ");
    CHECK(start->mechanisms.find("PLAIN") != std::string::npos); // SASL PLAIN, as letterbox uses
}

TEST_CASE("broker_smoke's URL reading takes the host and port only", "[integration][broker]") {
    std::string why;
    const auto full = parse_host_and_port("amqp://guest:guest@127.0.0.1:5673/", why);
    REQUIRE(full);
    CHECK(full->host == "127.0.0.1");
    CHECK(full->port == 5673);
    const auto bare = parse_host_and_port("amqp://localhost", why);
    REQUIRE(bare);
    CHECK(bare->host == "localhost");
    CHECK(bare->port == 5672);
    const auto v6 = parse_host_and_port("amqp://u:p@[::1]:15672/%2F?heartbeat=10", why);
    REQUIRE(v6);
    CHECK(v6->host == "::1");
    CHECK(v6->port == 15672);
    CHECK_FALSE(parse_host_and_port("amqps://127.0.0.1/", why));
    CHECK_FALSE(parse_host_and_port("amqp://127.0.0.1:0/", why));
    CHECK_FALSE(parse_host_and_port("amqp://127.0.0.1:99999/", why));
    CHECK_FALSE(parse_host_and_port("amqp://127.0.0.1:56x/", why));
    CHECK_FALSE(parse_host_and_port("amqp://[::1/", why));
}

} // namespace integration_broker_smoke
