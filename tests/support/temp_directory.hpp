// SPDX-License-Identifier: BSL-1.0
// A temporary directory per test, for the tests that use real files (SQLite databases).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <stdlib.h> // mkdtemp

namespace test_support {

/// A directory of its own under the system's temporary directory, removed with its content.
class temp_directory {
public:
    temp_directory() {
        // mkdtemp replaces the six trailing 'X' of the template with a unique name.
        std::string pattern =
            (std::filesystem::temp_directory_path() / ("letterbox-test-" + std::string(6, 'X')))
                .string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    temp_directory(const temp_directory&) = delete;
    temp_directory& operator=(const temp_directory&) = delete;
    ~temp_directory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }

    const std::filesystem::path& path() const noexcept { return path_; }
    /// The path of `name` in the directory.
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

} // namespace test_support
