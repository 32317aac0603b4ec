// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What an append to an `event_store` expects of its stream, checked when the append commits
/// (optimistic concurrency):
///
/// - `any()`: nothing; the events go after whatever the stream holds.
/// - `no_stream()`: the stream is empty (it has no event yet). Same as `exactly(0)`.
/// - `exactly(n)`: the stream's version is `n` (the version of the last event the caller
///   read). Of two writers that read version `n` and append, only the first to commit does.
class expected_version {
public:
    /// Expects nothing: the append never conflicts.
    static constexpr expected_version any() noexcept { return expected_version(true, 0); }
    /// Expects an empty stream.
    static constexpr expected_version no_stream() noexcept { return expected_version(false, 0); }
    /// Expects the stream to be at `version` (0: empty).
    static constexpr expected_version exactly(std::uint64_t version) noexcept {
        return expected_version(false, version);
    }

    /// Whether this is `any()`.
    constexpr bool is_any() const noexcept { return any_; }
    /// The version expected; meaningless for `any()`.
    constexpr std::uint64_t version() const noexcept { return version_; }

    /// Whether a stream at `current` meets the expectation.
    constexpr bool admits(std::uint64_t current) const noexcept {
        return any_ || version_ == current;
    }

    friend constexpr bool operator==(expected_version, expected_version) = default;

private:
    constexpr expected_version(bool any, std::uint64_t version) noexcept
        : version_(version)
        , any_(any) {}

    std::uint64_t version_;
    bool any_;
};

} // namespace letterbox
