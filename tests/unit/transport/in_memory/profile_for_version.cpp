// SPDX-License-Identifier: BSL-1.0
// in_memory::profile_for_version: which broker profile a RabbitMQ version gets, and the note
// when the version has no profile of its own (docs/amqp.md, "Broker version").

#include <letterbox/transport/in_memory/profile_for_version.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

namespace unit_transport_in_memory_profile_for_version {

using letterbox::in_memory::profile_for_version;

TEST_CASE("every release from 3.10 to 4.3 gets its own profile, exactly, without a note",
          "[transport][in_memory][broker_version]") {
    struct row {
        std::string_view version;
        std::string_view profile;
    };
    const row rows[] = {
        {"3.10.0", "3.10"},   {"3.10.8", "3.10"},   {"3.11.28", "3.10"}, {"3.12.14", "3.10"},
        {"3.13.0", "3.13.0"}, {"3.13.2", "3.13.0"}, {"3.13.3", "3.13"},  {"3.13.7", "3.13"},
        {"4.0.0", "4.0"},     {"4.0.5", "4.0"},     {"4.1.2", "4.0"},    {"4.2.9", "4.0"},
        {"4.3.0", "4.3"},     {"4.3.11", "4.3"},
    };
    for (const auto& r : rows) {
        INFO("version " << r.version);
        const auto m = profile_for_version(r.version);
        CHECK(m.profile.name == r.profile);
        CHECK(m.exact);
        CHECK(m.note.empty());
        CHECK(m.version == r.version);
    }
}

TEST_CASE("a pre-release or build suffix is ignored and kept in the version as given",
          "[transport][in_memory][broker_version]") {
    const auto build = profile_for_version("3.13.7+2.g1a2b3c");
    CHECK(build.profile.name == "3.13");
    CHECK(build.exact);
    CHECK(build.version == "3.13.7+2.g1a2b3c");
    const auto rc = profile_for_version("4.1.0-rc.1");
    CHECK(rc.profile.name == "4.0");
    CHECK(rc.exact);
    CHECK(profile_for_version("3.13.2-beta.1").profile.name == "3.13.0");
    CHECK(profile_for_version(" 3.10.8").profile.name == "3.10");
}

TEST_CASE("a version newer than every profile takes the newest, with a note that says so",
          "[transport][in_memory][broker_version]") {
    for (const std::string_view v : {"4.4.0", "4.10.1", "5.0.0"}) {
        INFO("version " << v);
        const auto m = profile_for_version(v);
        CHECK(m.profile.name == "4.3");
        CHECK_FALSE(m.exact);
        CHECK(m.note == "RabbitMQ " + std::string(v) +
                            " is newer than 4.3, the newest version letterbox has a profile for: "
                            "it assumes 4.3's behaviour");
    }
}

TEST_CASE("a version older than 3.10 takes the oldest profile, with a note",
          "[transport][in_memory][broker_version]") {
    for (const std::string_view v : {"3.9.29", "3.8.0", "2.8.7", "0.0.0"}) {
        INFO("version " << v);
        const auto m = profile_for_version(v);
        CHECK(m.profile.name == "3.10");
        CHECK_FALSE(m.exact);
        CHECK(m.note.find("is older than 3.10") != std::string::npos);
    }
}

TEST_CASE("a 3.x release between 3.13 and 4.0 takes 3.13, and 3.13 without a patch number "
          "takes 3.13.0, neither exactly",
          "[transport][in_memory][broker_version]") {
    const auto between = profile_for_version("3.14.0");
    CHECK(between.profile.name == "3.13");
    CHECK_FALSE(between.exact);
    CHECK(between.note.find("nearest older one, 3.13") != std::string::npos);
    const auto no_patch = profile_for_version("3.13");
    CHECK(no_patch.profile.name == "3.13.0");
    CHECK_FALSE(no_patch.exact);
    CHECK_FALSE(no_patch.note.empty());
    // Elsewhere the patch number does not matter: no patch is still exact.
    CHECK(profile_for_version("4.0").exact);
}

TEST_CASE("a missing or unreadable version falls back to the 3.10 baseline with a note",
          "[transport][in_memory][broker_version]") {
    const auto missing = profile_for_version("");
    CHECK(missing.profile.name == "3.10");
    CHECK_FALSE(missing.exact);
    CHECK(missing.note == "the broker did not announce its version: letterbox assumes RabbitMQ "
                          "3.10's behaviour, its baseline");
    for (const std::string_view v :
         {"unknown", "4", "4.", ".3.10", "v3.10.8", "3.x.1", "1234567.0.0"}) {
        INFO("version " << v);
        const auto m = profile_for_version(v);
        CHECK(m.profile.name == "3.10");
        CHECK_FALSE(m.exact);
        CHECK(m.note == "the broker's version \"" + std::string(v) +
                            "\" is not one letterbox can read: it assumes RabbitMQ 3.10's "
                            "behaviour, its baseline");
    }
}

TEST_CASE("a version with control bytes or of any length is kept printable and short",
          "[transport][in_memory][broker_version]") {
    const auto m = profile_for_version(std::string_view("4.0.1\n\xff\x01<script>", 16));
    CHECK(m.profile.name == "4.0");
    CHECK(m.version == "4.0.1??"
                       "?<script>");
    const std::string long_version = "9.9.9" + std::string(1000, 'x');
    const auto l = profile_for_version(long_version);
    CHECK(l.version.size() == letterbox::in_memory::profile_match::max_version_size);
    CHECK(l.profile.name == "4.3");
    CHECK(l.note.size() < 200);
}

} // namespace unit_transport_in_memory_profile_for_version
