// SPDX-License-Identifier: BSL-1.0
//
// Small helpers of the demo: running the one io_context until a condition holds (always with
// a deadline), a few SQLite queries, and the temporary directory of the databases.
#pragma once

#include <letterbox/error.hpp>
#include <letterbox/sqlite/database.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace demo {

using namespace std::chrono_literals;
using time_point = std::chrono::steady_clock::time_point;

/// Runs `io` until `done()` holds or `deadline` passes, in slices of at most 20 ms so that the
/// condition is checked often. Returns `done()`.
inline bool run_until(boost::asio::io_context& io, time_point deadline,
                      const std::function<bool()>& done) {
    while (!done()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            return false;
        io.restart(); // run_one_for stops the io_context when it runs out of work
        io.run_one_for(std::min<std::chrono::steady_clock::duration>(deadline - now, 20ms));
    }
    return true;
}

/// Starts an operation completing with `void(std::error_code)` and runs `io` until it does.
template <class Start>
std::error_code await(boost::asio::io_context& io, time_point deadline, Start start) {
    auto result = std::make_shared<std::optional<std::error_code>>();
    start([result](std::error_code ec) { *result = ec; });
    if (!run_until(io, deadline, [&] { return result->has_value(); }))
        return make_error_code(letterbox::errc::timed_out);
    return **result;
}

/// Runs one statement (DDL) in its own transaction; throws on failure.
inline void exec(letterbox::sqlite::database& db, const std::string& sql) {
    auto uow = db.begin();
    if (auto ec = uow.connection().exec(sql))
        throw letterbox::error(ec, sql);
    if (auto ec = uow.commit())
        throw letterbox::error(ec, "commit");
}

/// The rows of a two-integer-column query, as a map from the first column to the second.
inline std::map<std::int64_t, std::int64_t> query_pairs(letterbox::sqlite::database& db,
                                                        const std::string& sql) {
    std::map<std::int64_t, std::int64_t> out;
    auto uow = db.begin();
    std::error_code ec;
    auto st = uow.connection().prepare(sql, ec);
    if (ec)
        throw letterbox::error(ec, sql);
    while (st->step(ec))
        out[st->column_int64(0)] = st->column_int64(1);
    if (ec)
        throw letterbox::error(ec, sql);
    return out;
}

/// A directory made with mkdtemp, removed with everything in it when this object dies.
class temp_directory {
public:
    temp_directory() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "letterbox-demo-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        path_ = pattern;
    }
    temp_directory(const temp_directory&) = delete;
    temp_directory& operator=(const temp_directory&) = delete;
    ~temp_directory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::filesystem::path& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

} // namespace demo
