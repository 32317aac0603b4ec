// SPDX-License-Identifier: BSL-1.0
// Consumer project: proves the installed headers and targets are usable. Shared with
// ../add_subdirectory (CONSUMER_KIND tells them apart).
#include <letterbox/letterbox.hpp>

#include <letterbox/error.hpp>
#include <letterbox/version.hpp>

#ifdef CONSUMER_WITH_TESTING
#include <letterbox/testing/seed.hpp>
#endif
#ifdef CONSUMER_WITH_SQLITE
#include <letterbox/sqlite.hpp>

#include <filesystem>
#include <string>
#include <unistd.h>
#endif

#ifdef CONSUMER_WITH_POSTGRES
#include <letterbox/postgres.hpp>
#endif

#include <iostream>

int main() {
    const std::error_code code = letterbox::make_error_code(letterbox::errc::not_found);
    std::cout << "letterbox " << LETTERBOX_VERSION_MAJOR << '.' << LETTERBOX_VERSION_MINOR << '.'
              << LETTERBOX_VERSION_PATCH << " via " << CONSUMER_KIND << ": "
              << code.category().name() << '\n';
#ifdef CONSUMER_WITH_TESTING
    std::cout << "derived seed " << letterbox::testing::derive_seed(1, "consumer") << '\n';
#endif
#ifdef CONSUMER_WITH_SQLITE
    {
        const auto path = std::filesystem::temp_directory_path() /
                          ("letterbox-consumer-" + std::to_string(::getpid()) + ".db");
        std::error_code ec;
        {
            auto db = letterbox::sqlite::database::open(path.string(), {}, ec);
            std::cout << "sqlite store: " << (ec ? ec.message() : std::string("open")) << '\n';
        }
        for (const char* suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(path.string() + suffix, ec);
    }
#endif
#ifdef CONSUMER_WITH_POSTGRES
    {
        // No server listens on port 1: the open fails, with a typed error, at open.
        std::error_code ec;
        auto db = letterbox::postgres::database::open(
            "host=127.0.0.1 port=1 dbname=none connect_timeout=2", {}, ec);
        std::cout << "postgres store: " << (ec ? ec.message() : std::string("open")) << '\n';
    }
#endif
    return 0;
}
