// SPDX-License-Identifier: BSL-1.0

// lint::rules: the catalogue is well formed, every rule is documented in
// docs/topology-lint.md, and the tests it cites as evidence exist.

#include <letterbox/lint/rules.hpp>

#include <letterbox/lint/rule.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace unit_lint_rules {

namespace lint = letterbox::lint;
using profile = letterbox::in_memory::broker_profile;
using strings = std::vector<std::string>;

namespace {

/// The repository's root: this file is tests/unit/lint/rules.cpp.
std::filesystem::path source_root() {
#ifdef LETTERBOX_SOURCE_DIR
    return LETTERBOX_SOURCE_DIR;
#else
    return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
#endif
}

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    INFO(p.string());
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// The string literals of a C++ source, adjacent ones joined ("a " "b" is "a b"). Escapes
/// are kept as written; character literals are skipped.
std::multiset<std::string> literals(const std::string& src) {
    std::multiset<std::string> out;
    std::size_t i = 0;
    auto literal = [&] { // at an opening quote; returns the text, i past the closing quote
        std::string text;
        for (++i; i < src.size() && src[i] != '"'; ++i) {
            if (src[i] == '\\' && i + 1 < src.size())
                text += src[i++];
            text += src[i];
        }
        ++i;
        return text;
    };
    while (i < src.size()) {
        if (src[i] == '\'' && i + 2 < src.size() && (src[i + 2] == '\'' || src[i + 1] == '\\')) {
            i = src.find('\'', i + 2) + 1; // 'x' or '\x'
            continue;
        }
        if (src[i] != '"') {
            ++i;
            continue;
        }
        std::string text = literal();
        for (;;) {
            const auto next = src.find_first_not_of(" \t\n", i);
            if (next == std::string::npos || src[next] != '"')
                break;
            i = next;
            text += literal();
        }
        out.insert(std::move(text));
    }
    return out;
}

} // namespace

TEST_CASE("every lint rule has a unique LB- code, a title, a why, a fix, evidence and a "
          "version it applies to",
          "[lint]") {
    std::set<std::string_view> seen;
    for (const auto& r : lint::rules) {
        INFO(r.code);
        CHECK(r.code.starts_with("LB-"));
        CHECK(seen.insert(r.code).second);
        CHECK_FALSE(r.title.empty());
        CHECK_FALSE(r.why.empty());
        CHECK_FALSE(r.fix.empty());
        CHECK_FALSE(r.evidence.empty());
        REQUIRE(r.applies != nullptr);
        CHECK_FALSE(lint::versions_of(r).empty());
        CHECK(lint::find_rule(r.code) == &r);
    }
    CHECK(lint::find_rule("LB-NO-SUCH-RULE") == nullptr);
}

TEST_CASE("versions_of lists the profiles a rule applies to, oldest first", "[lint]") {
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::dlx_missing)) ==
          strings{"3.10", "3.13.0", "3.13", "4.0", "4.3"});
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::dlx_ring)) == strings{"3.10"});
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::qq_delivery_limit_default)) ==
          strings{"4.0", "4.3"});
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::qq_delivery_limit_negative)) ==
          strings{"3.10", "3.13.0", "3.13"});
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::qq_global_qos)) ==
          strings{"3.10", "3.13.0", "3.13", "4.0"});
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::xdeath_client)) ==
          strings{"3.13.0", "4.0", "4.3"});
    CHECK(lint::versions_of(*lint::find_rule(lint::codes::topic_hash_words)) == strings{"4.3"});
}

TEST_CASE("docs/topology-lint.md describes every rule of lint::rules", "[lint]") {
    const auto doc = read(source_root() / "docs" / "topology-lint.md");
    for (const auto& r : lint::rules) {
        INFO(r.code);
        CHECK(doc.find("`" + std::string(r.code) + "`") != std::string::npos);
    }
}

TEST_CASE("the lint tests a rule cites as evidence exist under those names", "[lint]") {
    // Evidence names tests as: tests/unit/lint/<file>.cpp: "<test name>"
    constexpr std::string_view prefix = "tests/unit/lint/";
    for (const auto& r : lint::rules) {
        INFO(r.code);
        std::string_view e = r.evidence;
        for (auto at = e.find(prefix); at != std::string_view::npos; at = e.find(prefix, at + 1)) {
            const auto colon = e.find(": \"", at);
            REQUIRE(colon != std::string_view::npos);
            const auto file = e.substr(at, colon - at);
            const auto name_begin = colon + 3;
            const auto name_end = e.find('"', name_begin);
            REQUIRE(name_end != std::string_view::npos);
            std::string name(e.substr(name_begin, name_end - name_begin));
            INFO(std::string(file) << ": " << name);
            CHECK(literals(read(source_root() / std::string(file))).count(name) == 1);
        }
    }
}

} // namespace unit_lint_rules
