// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// The `broker_profile` chosen for a RabbitMQ version (`profile_for_version`).
struct profile_match {
    /// The profile whose behaviour letterbox assumes.
    broker_profile profile = broker_profile::rabbitmq_3_10();
    /// The version it was chosen for, as given, made printable: bytes outside printable ASCII
    /// become `?`, and it is cut at `max_version_size` characters (it comes from the broker).
    std::string version{};
    /// Whether `version` is one the profile was made for. False when the version was missing,
    /// not recognised, older or newer than every profile, or between two releases letterbox
    /// knows: `profile` is then the nearest one, and `note` says so.
    bool exact = false;
    /// Empty when `exact`; else one sentence for an operator: what letterbox assumes, and why.
    std::string note{};

    /// The longest `version` kept; what follows is dropped.
    static constexpr std::size_t max_version_size = 64;
};

namespace detail {

/// `text` with every byte outside printable ASCII replaced by `?`, cut at `max` characters.
inline std::string printable_prefix(std::string_view text, std::size_t max) {
    std::string out(text.substr(0, max));
    for (char& c : out)
        if (c < 0x20 || c > 0x7e)
            c = '?';
    return out;
}

/// A version number as RabbitMQ writes it: `major.minor[.patch]`, then anything (a pre-release
/// or build suffix: "3.13.7+2.g1a2b3c", "4.1.0-rc.1"). `patch` is empty when there is none.
struct rabbitmq_version_number {
    unsigned major = 0;
    unsigned minor = 0;
    std::optional<unsigned> patch{};
};

/// Reads the number at the start of `text` (after blanks); `std::nullopt` when there is none.
inline std::optional<rabbitmq_version_number> parse_rabbitmq_version(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    std::size_t at = 0;
    const auto number = [&]() -> std::optional<unsigned> {
        unsigned value = 0;
        const std::size_t start = at;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            if (at - start == 6) // no release number is that long
                return std::nullopt;
            value = value * 10 + static_cast<unsigned>(text[at] - '0');
            ++at;
        }
        if (at == start)
            return std::nullopt;
        return value;
    };
    rabbitmq_version_number v;
    const auto major = number();
    if (!major || at == text.size() || text[at] != '.')
        return std::nullopt;
    ++at;
    const auto minor = number();
    if (!minor)
        return std::nullopt;
    v.major = *major;
    v.minor = *minor;
    if (at + 1 < text.size() && text[at] == '.' && text[at + 1] >= '0' && text[at + 1] <= '9') {
        ++at;
        v.patch = number();
        if (!v.patch)
            return std::nullopt;
    }
    return v;
}

} // namespace detail

/// The profile for the RabbitMQ version `rabbitmq_version` (the `version` server property of
/// `connection.start`, "3.10.8"). A pre-release or build suffix is ignored ("4.1.0-rc.1" is
/// 4.1.0, "3.13.7+2.g1a2b3c" is 3.13.7).
///
/// | version                   | profile  | exact |
/// | ------------------------- | -------- | ----- |
/// | 3.10.x, 3.11.x, 3.12.x    | "3.10"   | yes (3.10's behaviours hold through 3.12) |
/// | 3.13.0 to 3.13.2          | "3.13.0" | yes   |
/// | 3.13.3 and later 3.13.x   | "3.13"   | yes   |
/// | 4.0.x, 4.1.x, 4.2.x       | "4.0"    | yes   |
/// | 4.3.x                     | "4.3"    | yes   |
/// | 3.13 (no patch number)    | "3.13.0" | no    |
/// | 3.14 to 3.x               | "3.13"   | no: the nearest older profile |
/// | 4.4 and later, 5.0 and later | "4.3" | no: the newest profile |
/// | older than 3.10           | "3.10"   | no: the oldest profile |
/// | empty, or not a version   | "3.10"   | no: the baseline, Debian 12's RabbitMQ 3.10.8 |
///
/// When the match is not exact, `note` says which profile was taken and why.
inline profile_match profile_for_version(std::string_view rabbitmq_version) {
    profile_match m;
    m.version = detail::printable_prefix(rabbitmq_version, profile_match::max_version_size);
    const std::string quoted = "RabbitMQ " + m.version;
    const auto nearest = [&](broker_profile p, std::string why) {
        m.profile = p;
        m.exact = false;
        m.note = std::move(why);
        return m;
    };
    const auto exactly = [&](broker_profile p) {
        m.profile = p;
        m.exact = true;
        return m;
    };
    const auto v = detail::parse_rabbitmq_version(rabbitmq_version);
    if (!v)
        return nearest(broker_profile::rabbitmq_3_10(),
                       m.version.empty()
                           ? "the broker did not announce its version: letterbox assumes RabbitMQ "
                             "3.10's behaviour, its baseline"
                           : "the broker's version \"" + m.version +
                                 "\" is not one letterbox can read: it assumes RabbitMQ 3.10's "
                                 "behaviour, its baseline");
    const auto older_than = [&](unsigned major, unsigned minor) {
        return v->major < major || (v->major == major && v->minor < minor);
    };
    if (older_than(3, 10))
        return nearest(broker_profile::rabbitmq_3_10(),
                       quoted + " is older than 3.10, the oldest version letterbox has a profile "
                                "for: it assumes 3.10's behaviour");
    if (older_than(3, 13))
        return exactly(broker_profile::rabbitmq_3_10());
    if (v->major == 3 && v->minor == 13) {
        if (!v->patch)
            return nearest(broker_profile::rabbitmq_3_13_0(),
                           quoted + " has no patch number, and 3.13.0 to 3.13.2 differ from "
                                    "3.13.3 and later: letterbox assumes 3.13.0's behaviour");
        return exactly(*v->patch < 3 ? broker_profile::rabbitmq_3_13_0()
                                     : broker_profile::rabbitmq_3_13());
    }
    if (older_than(4, 0))
        return nearest(broker_profile::rabbitmq_3_13(),
                       quoted + " is a release letterbox has no profile for: it assumes the "
                                "nearest older one, 3.13");
    if (older_than(4, 3))
        return exactly(broker_profile::rabbitmq_4_0());
    if (v->major == 4 && v->minor == 3)
        return exactly(broker_profile::rabbitmq_4_3());
    return nearest(broker_profile::rabbitmq_4_3(),
                   quoted + " is newer than 4.3, the newest version letterbox has a profile "
                            "for: it assumes 4.3's behaviour");
}

} // namespace letterbox::in_memory
