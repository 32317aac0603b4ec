// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <stdlib.h> // mkdtemp (POSIX)

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// A directory of its own under the system's temporary directory, removed with everything in
/// it when the object is destroyed: where a simulated run keeps its real SQLite files.
///
/// The name is `<prefix>XXXXXX` with the six `X` replaced by `mkdtemp`. Not copyable.
class temp_directory {
public:
    /// Makes `<parent>/<prefix>XXXXXX`; an empty `parent` is the system's temporary directory.
    explicit temp_directory(std::string_view prefix = "letterbox-test-",
                            const std::filesystem::path& parent = {}) {
        const auto base = parent.empty() ? std::filesystem::temp_directory_path() : parent;
        std::string pattern = (base / (std::string(prefix) + "XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("letterbox::testing::temp_directory: mkdtemp failed for " +
                                     pattern);
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

} // namespace letterbox::testing
