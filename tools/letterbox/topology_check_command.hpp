// SPDX-License-Identifier: BSL-1.0
#pragma once

// `letterbox topology check FILE`: the topology lint (docs/topology-lint.md) over a RabbitMQ
// definitions export or a letterbox topology file, optionally with the queues looked up on a
// live broker (passive declarations only).

#include "command_line.hpp"
#include "topology_command.hpp"

#include <letterbox/concepts/transport.hpp>
#include <letterbox/error.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/check_topology.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/parse_definitions.hpp>
#include <letterbox/lint/report.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>
#include <letterbox/transport/in_memory/profile_for_version.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace letterbox::cli {

inline constexpr std::string_view topology_check_usage =
    "usage: letterbox topology check [--profile 3.10|3.13.0|3.13|4.0|4.3] [--json]\n"
    "                                [--format definitions|letterbox] FILE\n"
    "       letterbox topology check --url URL [--password-file FILE] [--timeout SECONDS]\n"
    "                                [--profile ...] [--json] FILE\n"
    "\n"
    "Checks a topology for the traps that lose, duplicate or stall messages on RabbitMQ\n"
    "(docs/topology-lint.md): FILE is a RabbitMQ definitions export (`rabbitmqctl\n"
    "export_definitions`, or the management API's GET /api/definitions) or a letterbox\n"
    "topology file (the format of `topology declare`). The profile is the broker version the\n"
    "findings are for: by default the export's rabbit_version, else every version. With --url,\n"
    "each queue of FILE is also looked up on that broker with a passive declaration (nothing is\n"
    "created or changed), and a missing one is an error. Nothing is ever written.\n"
    "Exit status: 0 no finding above info, 1 warnings, 2 errors (or a FILE that cannot be\n"
    "read or parsed, reported on stderr), 3 the broker cannot be reached.\n";

/// A parsed `letterbox topology check` command line.
struct topology_check_arguments {
    std::string file{};
    bool json = false;
    /// The profile's name; `std::nullopt`: from the file, else every profile.
    std::optional<std::string> profile{};
    /// `definitions`, `letterbox`, or `std::nullopt` to tell from the file.
    std::optional<std::string> format{};
    std::optional<std::string> url{};
    std::optional<std::string> password_file{};
    std::chrono::milliseconds timeout{std::chrono::seconds{60}};
    /// Where the transport connects, for messages (a redacted URL).
    std::string endpoint = "the broker";
};

inline constexpr std::array<option_spec, 8> topology_check_options{{
    {"profile", true, false},
    {"format", true, false},
    {"json", false, false},
    {"url", true, false},
    {"password-file", true, false},
    {"timeout", true, false},
    {"file", true, false},
    {"help", false, false},
}};

/// Parses the arguments after `topology check`. Throws `usage_failure`.
inline topology_check_arguments parse_topology_check_arguments(std::span<const std::string> args) {
    const auto p = parse_options(args, topology_check_options, "letterbox topology check");
    topology_check_arguments a;
    const auto file = p.get("file");
    if (p.positionals.size() > 1 || (file && !p.positionals.empty()))
        throw usage_failure("`letterbox topology check` checks one FILE");
    if (file)
        a.file = *file;
    else if (!p.positionals.empty())
        a.file = p.positionals.front();
    else
        throw usage_failure("`letterbox topology check` needs a FILE (a definitions export or a "
                            "topology file); a live broker is looked up with --url as well as "
                            "FILE, which names what to look for");
    a.json = p.has("json");
    a.profile = p.get("profile");
    if (a.profile && !in_memory::broker_profile::named(*a.profile))
        throw usage_failure("--profile must be 3.10, 3.13.0, 3.13, 4.0 or 4.3, not '" +
                            shown(*a.profile) + "'");
    a.format = p.get("format");
    if (a.format && *a.format != "definitions" && *a.format != "letterbox")
        throw usage_failure("--format must be definitions or letterbox, not '" + shown(*a.format) +
                            "'");
    a.url = p.get("url");
    a.password_file = p.get("password-file");
    if (a.password_file && !a.url)
        throw usage_failure("--password-file is for --url");
    if (p.get("timeout") && !a.url)
        throw usage_failure("--timeout is for --url");
    if (const auto t = p.get("timeout"))
        a.timeout = std::chrono::seconds{parse_count("timeout", *t, 86'400)};
    if (a.timeout.count() == 0)
        throw usage_failure("--timeout must be at least 1 second");
    return a;
}

/// What a check reads: the topologies of the file (one per virtual host) and the consumer
/// settings it implies.
struct topology_check_input {
    /// `definitions` or `letterbox`.
    std::string format{};
    std::vector<lint::broker_topology> topologies{};
    std::vector<lint::consumer_settings> consumers{};
};

namespace detail {

/// Whether the JSON text is a RabbitMQ definitions export rather than a letterbox topology
/// file: it has a member that only exports have. Anything else is read as a topology file,
/// whose parser names an unknown member (a typo such as "queue") instead of ignoring it.
inline bool looks_like_definitions(const nlohmann::json& root) {
    static constexpr std::array<std::string_view, 12> export_members{"rabbit_version",
                                                                     "rabbitmq_version",
                                                                     "product_version",
                                                                     "product_name",
                                                                     "vhosts",
                                                                     "users",
                                                                     "permissions",
                                                                     "topic_permissions",
                                                                     "policies",
                                                                     "parameters",
                                                                     "global_parameters",
                                                                     "rabbitmq_definition_format"};
    if (!root.is_object())
        return false;
    for (const auto& m : export_members)
        if (root.contains(std::string(m)))
            return true;
    return false;
}

} // namespace detail

/// Reads FILE for `topology check`. Throws `usage_failure` for a file that cannot be read or
/// parsed, with the reason (never the file's contents beyond a name or a path in it).
inline topology_check_input read_topology_check_input(const topology_check_arguments& a) {
    std::error_code ec;
    const auto status = std::filesystem::status(a.file, ec);
    if (!ec && std::filesystem::is_directory(status))
        throw usage_failure("'" + shown(a.file) + "' is a directory; FILE is a JSON file");
    if (!ec && !std::filesystem::is_regular_file(status))
        throw usage_failure("'" + shown(a.file) +
                            "' is not a regular file (a pipe or a device); FILE is a JSON file");
    std::ifstream in(a.file, std::ios::binary);
    if (!in)
        throw usage_failure("cannot read '" + shown(a.file) + "'; check the FILE argument");
    // At most one byte more than a definitions export may hold: a file that never ends
    // (/dev/zero, a pipe) or a huge one is refused without reading it all.
    std::string body(lint::max_definitions_size + 1, '\0');
    in.read(body.data(), static_cast<std::streamsize>(body.size()));
    body.resize(static_cast<std::size_t>(in.gcount()));
    if (body.size() > lint::max_definitions_size)
        throw usage_failure("'" + shown(a.file) + "' is larger than " +
                            std::to_string(lint::max_definitions_size / (1024 * 1024)) +
                            " MiB, more than a topology check reads");

    std::string format = a.format.value_or("");
    if (format.empty()) {
        // The nesting is bounded before anything parses the text; text that is not JSON at all
        // is left to the definitions parser, which says where it fails.
        try {
            lint::detail::check_nesting(body);
        } catch (const letterbox::error& e) {
            throw usage_failure("'" + shown(a.file) + "': " + e.what());
        }
        format = "definitions";
        try {
            if (!detail::looks_like_definitions(nlohmann::json::parse(body)))
                format = "letterbox";
        } catch (const nlohmann::json::exception&) {
        }
    }
    topology_check_input out;
    out.format = format;
    if (format == "definitions") {
        try {
            out.topologies = lint::parse_definitions(body);
        } catch (const letterbox::error& e) {
            throw usage_failure("'" + shown(a.file) + "': " + e.what());
        }
        return out;
    }
    auto plan = parse_topology_text(body, a.file);
    lint::broker_topology t;
    t.exchanges = std::move(plan.exchanges);
    t.queues = std::move(plan.queues);
    t.bindings = std::move(plan.bindings);
    out.topologies.push_back(std::move(t));
    out.consumers = std::move(plan.consumers);
    return out;
}

/// The profiles to check against: the one named, else the one of the export's version (the
/// nearest, for a version without a profile of its own), else all of them.
inline std::vector<in_memory::broker_profile> profiles_for_check(const topology_check_arguments& a,
                                                                 const lint::broker_topology& t) {
    if (a.profile)
        return {*in_memory::broker_profile::named(*a.profile)};
    if (!t.rabbit_version.empty())
        return {in_memory::profile_for_version(t.rabbit_version).profile};
    const auto all = in_memory::broker_profile::known();
    return {all.begin(), all.end()};
}

/// The findings of `t` over `profiles`: each finding once (the same code, objects and
/// severity found on several profiles is one finding).
inline std::vector<lint::finding>
check_over_profiles(const lint::broker_topology& t,
                    std::span<const in_memory::broker_profile> profiles,
                    std::span<const lint::consumer_settings> consumers) {
    std::vector<lint::finding> out;
    std::set<std::tuple<std::string, std::vector<std::string>, lint::severity>> seen;
    for (const auto& p : profiles)
        for (auto& f : lint::check_topology(t, p, consumers))
            if (seen.emplace(f.code, f.objects, f.level).second)
                out.push_back(std::move(f));
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
        return static_cast<int>(x.level) > static_cast<int>(y.level);
    });
    return out;
}

/// Looks up every queue of `t` on the broker (passive `queue.declare`); returns a finding
/// `LB-QUEUE-ABSENT` (error) per queue that does not exist, or `std::nullopt` when the broker
/// could not be asked (then `err` says why and `status` is the exit status).
template <transport Transport>
std::optional<std::vector<lint::finding>>
look_up_queues(Transport& transport, const lint::broker_topology& t,
               const topology_check_arguments& a, std::ostream& err, const event_loop& loop,
               int& status) {
    std::vector<lint::finding> out;
    for (const auto& q : t.queues) {
        struct slot {
            bool done = false;
            std::error_code ec{};
        };
        auto r = std::make_shared<slot>();
        transport.async_queue_depth(q.name, [r](std::error_code ec, std::uint64_t) {
            r->done = true;
            r->ec = ec;
        });
        if (!loop([r] { return r->done; }, a.timeout)) {
            err << "letterbox: looking up queue " << printable(q.name) << " on " << a.endpoint
                << " did not finish within "
                << std::chrono::duration_cast<std::chrono::seconds>(a.timeout).count()
                << " s; is the broker reachable? raise --timeout\n";
            status = internal;
            return std::nullopt;
        }
        if (r->ec == letterbox::errc::not_found) {
            lint::finding f;
            f.level = lint::severity::error;
            f.code = "LB-QUEUE-ABSENT";
            f.objects = {"queue '" + q.name + "'"};
            f.why = "the queue is in the topology but not on " + a.endpoint +
                    ", so what is routed to it is dropped (or returned, if mandatory)";
            f.fix = "declare it (letterbox topology declare --file FILE), or remove it from the "
                    "topology";
            out.push_back(std::move(f));
            continue;
        }
        if (r->ec) {
            err << "letterbox: looking up queue " << printable(q.name) << " on " << a.endpoint
                << " failed: " << r->ec.message() << "\n";
            status = r->ec == letterbox::errc::access_refused ? cannot_connect : internal;
            return std::nullopt;
        }
    }
    return out;
}

/// Prints the findings of `input` and returns the exit status (0, 1 or 2). `live`, when set,
/// adds findings per topology (by index) from a live broker.
inline int report_topology_check(const topology_check_arguments& a,
                                 const topology_check_input& input, std::ostream& out,
                                 const std::vector<std::vector<lint::finding>>& live = {}) {
    int status = ok;
    nlohmann::json vhosts = nlohmann::json::array();
    for (std::size_t i = 0; i < input.topologies.size(); ++i) {
        const auto& t = input.topologies[i];
        const auto profiles = profiles_for_check(a, t);
        auto findings = check_over_profiles(t, profiles, input.consumers);
        if (i < live.size())
            findings.insert(findings.begin(), live[i].begin(), live[i].end());
        // Names come from the file (a hostile one may hold control characters): in the text
        // report each text is escaped to one line, so that the report's own line breaks are
        // the only ones. JSON escapes them itself, and keeps the names as they are.
        if (!a.json)
            for (auto& f : findings) {
                for (auto& o : f.objects)
                    o = printable(o);
                f.why = printable(f.why);
                f.fix = printable(f.fix);
            }
        status = std::max(status, lint::exit_status(findings));
        std::string names;
        nlohmann::json name_list = nlohmann::json::array();
        for (const auto& p : profiles) {
            names += (names.empty() ? "" : ", ") + std::string(p.name);
            name_list.push_back(std::string(p.name));
        }
        if (a.json) {
            nlohmann::json entry = {{"vhost", t.vhost},
                                    {"rabbit_version", t.rabbit_version},
                                    {"profiles", std::move(name_list)},
                                    {"report", lint::json_report(findings)}};
            vhosts.push_back(std::move(entry));
            continue;
        }
        out << "letterbox topology check: " << printable(a.file) << " (" << input.format;
        if (input.format == "definitions")
            out << ", vhost '" << printable(t.vhost) << "'";
        if (!t.rabbit_version.empty())
            out << ", RabbitMQ " << printable(t.rabbit_version);
        out << "; profile" << (profiles.size() > 1 ? "s " : " ") << names << ")\n";
        out << lint::text_report(findings);
    }
    if (a.json)
        out << json_text({{"file", a.file},
                          {"format", input.format},
                          {"vhosts", std::move(vhosts)},
                          {"exit_status", status}})
            << "\n";
    return status;
}

} // namespace letterbox::cli
