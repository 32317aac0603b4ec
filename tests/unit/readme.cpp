// SPDX-License-Identifier: BSL-1.0
// The README's example, compiled and run. README.md shows the lines between the markers
// verbatim, minus the lines marked `// hidden` (checked by tests/tools/check_doc_snippets.py).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

// clang-format off
//[readme
#include <letterbox/letterbox.hpp>

#include <boost/asio/io_context.hpp>
#include <iostream>

namespace unit_readme { // hidden
namespace readme { // hidden
int main() {
    boost::asio::io_context io;
    letterbox::in_memory::broker broker(io.get_executor());  // a RabbitMQ 3.10 model
    letterbox::in_memory::transport bus(broker);
    int failures = 0;
    auto report = [&failures](const char* what) {  // a completion that reports a failure
        return [&failures, what](letterbox::error_code ec, auto&&...) {
            if (!ec)
                return;
            ++failures;
            std::cerr << what << " failed: " << ec.message() << "\n";
        };
    };

    bus.async_declare(letterbox::topology::queue{.name = "emails"}, report("declare"));
    letterbox::message welcome;
    welcome.routing_key = "emails";
    welcome.body = "welcome, Ana";
    bus.async_publish(welcome, [&](letterbox::error_code ec) {  // on the broker's confirm
        std::cout << "published: " << (ec ? ec.message() : "confirmed") << "\n";
        failures += ec ? 1 : 0;
    });
    bus.async_consume({.queue = "emails"}, [&](letterbox::delivery d) {
        std::cout << "received: " << d.msg.body << "\n";
        bus.async_ack(d, report("ack"));
    }, report("consume"));
    io.run();
    return failures == 0 ? 0 : 1;
}
} // namespace readme // hidden
//]
// clang-format on

TEST_CASE("the README example publishes, confirms and consumes one message", "[readme]") {
    std::ostringstream out;
    auto* old = std::cout.rdbuf(out.rdbuf());
    const int rc = readme::main();
    std::cout.rdbuf(old);
    CHECK(rc == 0);
    CHECK(out.str() == "published: confirmed\nreceived: welcome, Ana\n");
}

} // namespace unit_readme
