// SPDX-License-Identifier: BSL-1.0
#pragma once

// `letterbox topology declare --file topology.json`: declares exchanges, queues (with their
// retry and dead-letter queues, letterbox::topology::retry_topology) and bindings described in
// a small JSON format (docs/cli.md), over any Transport.

#include "command_line.hpp"

#include <letterbox/concepts/transport.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/retry_topology.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::cli {

inline constexpr std::string_view topology_usage =
    "usage: letterbox topology declare --file topology.json [--url URL] [--password-file FILE]\n"
    "                                  [--json] [--timeout SECONDS]\n"
    "       letterbox topology check [--profile VERSION] [--json] FILE   (check --help)\n"
    "\n"
    "Declares the exchanges, then the queues (each with its retry and dead-letter queues),\n"
    "then the bindings of the file, in order; declaring what exists with the same properties\n"
    "is a no-op. The format is in docs/cli.md:\n"
    "  {\"exchanges\": [{\"name\": \"orders\", \"type\": \"topic\"}],\n"
    "   \"queues\": [{\"name\": \"billing\", \"retry_topology\": {\"delays_ms\": [1000],\n"
    "                 \"rejects\": \"dead_letter_queue\"}}],\n"
    "   \"bindings\": [{\"source\": \"orders\", \"destination\": \"billing\", "
    "\"routing_key\": \"order.*\"}]}\n";

/// What a topology file declares, in order: exchanges, queues, bindings.
struct topology_plan {
    std::vector<topology::exchange> exchanges{};
    std::vector<topology::queue> queues{};
    std::vector<topology::binding> bindings{};
    /// What `letterbox topology check` assumes of the consumer of each queue with a
    /// `retry_topology`: its retry queues must lead back to it, and it rejects onto its
    /// dead-letter exchange unless `rejects` is `nowhere`.
    std::vector<lint::consumer_settings> consumers{};
};

/// A parsed `letterbox topology declare` command line.
struct topology_arguments {
    std::string file{};
    bool json = false;
    std::optional<std::string> url{};
    std::optional<std::string> password_file{};
    std::chrono::milliseconds timeout{std::chrono::seconds{60}};
    /// Where the transport connects, for error messages (a redacted URL).
    std::string endpoint = "the broker";
};

inline constexpr std::array<option_spec, 6> topology_options{{
    {"file", true, false},
    {"url", true, false},
    {"password-file", true, false},
    {"json", false, false},
    {"timeout", true, false},
    {"help", false, false},
}};

/// Parses the arguments after `topology`. Throws `usage_failure`.
inline topology_arguments parse_topology_arguments(std::span<const std::string> args) {
    if (args.empty() || args[0] != "declare")
        throw usage_failure(args.empty() ? "missing command: letterbox topology declare --file "
                                           "FILE, or letterbox topology check FILE"
                                         : "unknown command 'topology " + shown(args[0]) +
                                               "' (expected declare or check)");
    const auto p = parse_options(args.subspan(1), topology_options, "letterbox topology");
    if (!p.positionals.empty())
        throw usage_failure("unexpected argument '" + shown(p.positionals.front()) +
                            "' for `letterbox topology declare`");
    topology_arguments a;
    const auto file = p.get("file");
    if (!file)
        throw usage_failure(
            "`letterbox topology declare` needs --file FILE (a topology JSON file)");
    a.file = *file;
    a.json = p.has("json");
    a.url = p.get("url");
    a.password_file = p.get("password-file");
    if (const auto t = p.get("timeout"))
        a.timeout = std::chrono::seconds{parse_count("timeout", *t, 86'400)};
    if (a.timeout.count() == 0)
        throw usage_failure("--timeout must be at least 1 second");
    return a;
}

/// How deeply a topology file may nest tables and arrays inside an `arguments` member: the
/// member itself is level 1, as a method's own table is for the AMQP codec, whose limit
/// (`amqp::codec::max_field_depth`) this is. Deeper is a usage error, found before descending.
inline constexpr std::size_t max_topology_field_depth = 32;

namespace detail {

/// Reads the members of one JSON object of the file; every error names the member's path.
class members {
public:
    members(const nlohmann::json& j, std::string path)
        : j_(j)
        , path_(std::move(path)) {
        if (!j_.is_object())
            fail(path_, std::string("must be an object, not ") + j_.type_name());
    }

    [[noreturn]] static void fail(const std::string& path, const std::string& what) {
        throw usage_failure("topology file: " + path + ": " + what);
    }

    std::string at(std::string_view name) const { return path_ + "." + std::string(name); }

    const nlohmann::json* find(std::string_view name) {
        known_.emplace_back(name);
        const auto it = j_.find(std::string(name));
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }

    std::optional<std::string> text(std::string_view name) {
        const auto* v = find(name);
        if (!v)
            return std::nullopt;
        if (!v->is_string())
            fail(at(name), std::string("must be a string, not ") + v->type_name());
        return v->get<std::string>();
    }

    std::string required_text(std::string_view name) {
        auto v = text(name);
        if (!v)
            fail(at(name), "is required");
        return *v;
    }

    std::optional<bool> flag(std::string_view name) {
        const auto* v = find(name);
        if (!v)
            return std::nullopt;
        if (!v->is_boolean())
            fail(at(name), std::string("must be true or false, not ") + v->type_name());
        return v->get<bool>();
    }

    std::optional<std::int64_t> integer(std::string_view name, std::int64_t min) {
        const auto* v = find(name);
        if (!v)
            return std::nullopt;
        if (!v->is_number_integer())
            fail(at(name), std::string("must be an integer, not ") + v->type_name());
        const auto n = v->get<std::int64_t>();
        if (v->is_number_unsigned() &&
            v->get<std::uint64_t>() >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            fail(at(name), "is too large");
        if (n < min)
            fail(at(name), "must be at least " + std::to_string(min));
        return n;
    }

    /// Fails on a member that no reader asked for (a typo must not be silently ignored).
    void no_others() const {
        for (const auto& [key, value] : j_.items()) {
            bool found = false;
            for (const auto& k : known_)
                found = found || k == key;
            if (!found) {
                std::string expected;
                for (const auto& k : known_)
                    expected += (expected.empty() ? "" : ", ") + k;
                fail(path_, "unknown member \"" + key + "\" (expected " + expected + ")");
            }
        }
    }

private:
    const nlohmann::json& j_;
    std::string path_;
    std::vector<std::string> known_;
};

/// Where a value sits in the file, as a chain of parents: the text of a path is built only
/// for an error, so reading a wide or deep value costs time linear in its size.
struct value_path {
    const value_path* parent = nullptr;
    /// The member's name (`name` set), or the array element's index.
    std::optional<std::string_view> name{};
    std::size_t index = 0;
    /// The complete path of a root (`parent == nullptr`), e.g. `queues[0].arguments`.
    std::string_view root{};

    std::string text() const {
        std::vector<const value_path*> chain;
        for (const value_path* p = this; p != nullptr; p = p->parent)
            chain.push_back(p);
        std::string out(chain.back()->root);
        for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) {
            if ((*it)->name)
                out += "." + std::string(*(*it)->name);
            else
                out += "[" + std::to_string((*it)->index) + "]";
        }
        return out;
    }
};

inline field_value to_field_value(const nlohmann::json& v, const value_path& path,
                                  std::size_t depth);

/// `j`, an object at nesting level `depth` (1 for an `arguments` member), as a field table.
inline field_table to_field_table(const nlohmann::json& j, const value_path& path,
                                  std::size_t depth) {
    if (!j.is_object())
        members::fail(path.text(), std::string("must be an object, not ") + j.type_name());
    if (depth > max_topology_field_depth)
        members::fail(path.text(), "nests tables and arrays deeper than " +
                                       std::to_string(max_topology_field_depth) +
                                       " levels, the limit of an AMQP field table");
    field_table t;
    for (const auto& [name, value] : j.items())
        t.set(name, to_field_value(value, value_path{&path, name, 0, {}}, depth));
    return t;
}

/// The `arguments` member at `path` as a field table.
inline field_table to_field_table(const nlohmann::json& j, const std::string& path) {
    return to_field_table(j, value_path{nullptr, std::nullopt, 0, path}, 1);
}

/// `v`, a value inside a table or array at level `depth`, as a field value.
inline field_value to_field_value(const nlohmann::json& v, const value_path& path,
                                  std::size_t depth) {
    if (v.is_string())
        return field_value(v.get<std::string>());
    if (v.is_boolean())
        return field_value(v.get<bool>());
    if (v.is_number_unsigned()) {
        if (v.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            members::fail(path.text(), "is too large");
        return field_value(static_cast<std::int64_t>(v.get<std::uint64_t>()));
    }
    if (v.is_number_integer())
        return field_value(v.get<std::int64_t>());
    if (v.is_number_float())
        return field_value(v.get<double>());
    if (v.is_null())
        return field_value(nullptr);
    if (v.is_object())
        return field_value(to_field_table(v, path, depth + 1));
    // An array: checked before descending, so the stack stays bounded whatever the file holds.
    if (depth + 1 > max_topology_field_depth)
        members::fail(path.text(), "nests tables and arrays deeper than " +
                                       std::to_string(max_topology_field_depth) +
                                       " levels, the limit of an AMQP field table");
    field_array a;
    a.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
        a.push_back(to_field_value(v[i], value_path{&path, std::nullopt, i, {}}, depth + 1));
    return field_value(std::move(a));
}

/// The elements of the top-level array `name` (none when it is absent or null), by address:
/// the document owns them.
inline std::vector<const nlohmann::json*> array_of(const nlohmann::json& root,
                                                   std::string_view name) {
    const auto it = root.find(std::string(name));
    if (it == root.end() || it->is_null())
        return {};
    if (!it->is_array())
        members::fail(std::string(name), std::string("must be an array, not ") + it->type_name());
    std::vector<const nlohmann::json*> out;
    out.reserve(it->size());
    for (const auto& element : *it)
        out.push_back(&element);
    return out;
}

inline void parse_queue(const nlohmann::json& j, const std::string& path, topology_plan& plan) {
    members m(j, path);
    topology::queue q;
    q.name = m.required_text("name");
    if (q.name.empty())
        members::fail(m.at("name"), "must not be empty");
    q.durable = m.flag("durable").value_or(true);
    q.exclusive = m.flag("exclusive").value_or(false);
    q.auto_delete = m.flag("auto_delete").value_or(false);

    topology::queue_arguments typed;
    typed.dead_letter_exchange = m.text("dead_letter_exchange");
    typed.dead_letter_routing_key = m.text("dead_letter_routing_key");
    if (const auto ms = m.integer("message_ttl_ms", 0))
        typed.message_ttl = std::chrono::milliseconds{*ms};
    if (const auto ms = m.integer("expires_ms", 1))
        typed.expires = std::chrono::milliseconds{*ms};
    typed.max_length = m.integer("max_length", 0);
    typed.max_length_bytes = m.integer("max_length_bytes", 0);
    if (const auto o = m.text("overflow")) {
        if (*o == "drop-head")
            typed.overflow = topology::overflow_behaviour::drop_head;
        else if (*o == "reject-publish")
            typed.overflow = topology::overflow_behaviour::reject_publish;
        else if (*o == "reject-publish-dlx")
            typed.overflow = topology::overflow_behaviour::reject_publish_dlx;
        else
            members::fail(m.at("overflow"),
                          "must be drop-head, reject-publish or reject-publish-dlx, not \"" + *o +
                              "\"");
    }
    typed.delivery_limit = m.integer("delivery_limit", std::numeric_limits<std::int64_t>::min());
    if (const auto t = m.text("queue_type")) {
        if (*t == "classic")
            typed.type = topology::queue_type::classic;
        else if (*t == "quorum")
            typed.type = topology::queue_type::quorum;
        else
            members::fail(m.at("queue_type"), "must be classic or quorum, not \"" + *t + "\"");
    }

    std::optional<topology::retry_topology> retry;
    if (const auto* r = m.find("retry_topology")) {
        const auto rpath = m.at("retry_topology");
        members rm(*r, rpath);
        retry.emplace();
        retry->queue = q.name;
        if (const auto* delays = rm.find("delays_ms")) {
            if (!delays->is_array())
                members::fail(rm.at("delays_ms"), std::string("must be an array of milliseconds, "
                                                              "not ") +
                                                      delays->type_name());
            for (std::size_t i = 0; i < delays->size(); ++i) {
                const auto& d = (*delays)[i];
                if (!d.is_number_integer() || d.get<std::int64_t>() <= 0)
                    members::fail(rm.at("delays_ms") + "[" + std::to_string(i) + "]",
                                  "must be a positive integer (milliseconds)");
                retry->delays.emplace_back(d.get<std::int64_t>());
            }
        }
        retry->dead_letter_queue = rm.text("dead_letter_queue").value_or("");
        const auto rejects = rm.text("rejects").value_or("nowhere");
        if (rejects == "nowhere")
            retry->rejects = topology::rejects_go_to::nowhere;
        else if (rejects == "dead_letter_queue")
            retry->rejects = topology::rejects_go_to::dead_letter_queue;
        else if (rejects == "retry_queue") {
            if (retry->delays.empty())
                members::fail(rm.at("rejects"), "\"retry_queue\" needs at least one delay in "
                                                "delays_ms");
            retry->rejects = topology::rejects_go_to::retry_queue;
        } else
            members::fail(rm.at("rejects"), "must be nowhere, dead_letter_queue or retry_queue, "
                                            "not \"" +
                                                rejects + "\"");
        rm.no_others();
        if (retry->rejects != topology::rejects_go_to::nowhere &&
            (typed.dead_letter_exchange || typed.dead_letter_routing_key))
            members::fail(m.at("dead_letter_exchange"),
                          "cannot be set together with retry_topology.rejects \"" + rejects +
                              "\", which sets the dead-letter exchange itself");
    }

    field_table raw;
    if (const auto* a = m.find("arguments"))
        raw = to_field_table(*a, m.at("arguments"));
    m.no_others();

    auto table = typed.to_table();
    if (retry) {
        // retry_topology's work queue carries the dead-letter arguments its `rejects` needs.
        const auto queues = retry->queues();
        for (const auto& [name, value] : queues.back().arguments)
            table.set(name, value);
    }
    for (const auto& [name, value] : raw) {
        if (table.contains(name))
            members::fail(m.at("arguments") + "." + name,
                          "is also set by a typed member of the queue; set it once");
        table.set(name, value);
    }
    std::error_code ec;
    std::string reason;
    if (!topology::queue_arguments::parse(table, ec, reason))
        members::fail(path, reason);
    q.arguments = std::move(table);

    if (retry) {
        lint::consumer_settings c;
        c.queue = q.name;
        c.failures = retry->rejects == topology::rejects_go_to::nowhere
                         ? lint::failure_handling::publish_to_dead_letter_queue
                         : lint::failure_handling::reject;
        c.attempts_from_x_death = retry->rejects == topology::rejects_go_to::retry_queue;
        for (const auto d : retry->delays)
            c.retry_queues.push_back(retry->retry_queue_name(d));
        plan.consumers.push_back(std::move(c));
        auto queues = retry->queues();
        queues.pop_back(); // the work queue is `q`
        for (auto& extra : queues)
            plan.queues.push_back(std::move(extra));
    }
    plan.queues.push_back(std::move(q));
}

} // namespace detail

/// Reads a topology description (docs/cli.md). Throws `usage_failure` naming the member at
/// fault, e.g. `topology file: queues[1].retry_topology.delays_ms[0]: must be a positive
/// integer (milliseconds)`.
inline topology_plan parse_topology(const nlohmann::json& root) {
    topology_plan plan;
    {
        detail::members top(root, "(top level)");
        top.find("exchanges");
        top.find("queues");
        top.find("bindings");
        top.no_others();
    }
    const auto exchanges = detail::array_of(root, "exchanges");
    for (std::size_t i = 0; i < exchanges.size(); ++i) {
        const auto path = "exchanges[" + std::to_string(i) + "]";
        detail::members m(*exchanges[i], path);
        topology::exchange x;
        x.name = m.required_text("name");
        if (x.name.empty() || x.name.rfind("amq.", 0) == 0)
            detail::members::fail(m.at("name"), "must not be empty or start with \"amq.\" (those "
                                                "are the broker's)");
        const auto type = m.text("type").value_or("direct");
        const auto t = topology::parse_exchange_type(type);
        if (!t)
            detail::members::fail(
                m.at("type"),
                "must be direct, fanout, topic, headers or x-consistent-hash, not \"" + type +
                    "\"");
        x.type = *t;
        x.durable = m.flag("durable").value_or(true);
        x.auto_delete = m.flag("auto_delete").value_or(false);
        x.internal = m.flag("internal").value_or(false);
        if (const auto* a = m.find("arguments"))
            x.arguments = detail::to_field_table(*a, m.at("arguments"));
        m.no_others();
        plan.exchanges.push_back(std::move(x));
    }
    const auto queues = detail::array_of(root, "queues");
    for (std::size_t i = 0; i < queues.size(); ++i)
        detail::parse_queue(*queues[i], "queues[" + std::to_string(i) + "]", plan);
    const auto bindings = detail::array_of(root, "bindings");
    for (std::size_t i = 0; i < bindings.size(); ++i) {
        const auto path = "bindings[" + std::to_string(i) + "]";
        detail::members m(*bindings[i], path);
        topology::binding b;
        b.source = m.required_text("source");
        b.destination = m.required_text("destination");
        b.routing_key = m.text("routing_key").value_or("");
        const auto kind = m.text("destination_kind").value_or("queue");
        if (kind == "queue")
            b.kind = topology::destination_kind::queue;
        else if (kind == "exchange")
            b.kind = topology::destination_kind::exchange;
        else
            detail::members::fail(m.at("destination_kind"),
                                  "must be queue or exchange, not \"" + kind + "\"");
        if (const auto* a = m.find("arguments"))
            b.arguments = detail::to_field_table(*a, m.at("arguments"));
        m.no_others();
        plan.bindings.push_back(std::move(b));
    }
    return plan;
}

/// Parses the text of a topology file; `name` names it in errors. Throws `usage_failure` for
/// text that is not JSON (with the byte where parsing failed) or does not describe a topology
/// (naming the member at fault). Any text is safe to pass: parsing and checking take time and
/// stack bounded by its size and by `max_topology_field_depth` (the fuzz target
/// `topology_file_fuzzer` checks this).
inline topology_plan parse_topology_text(std::string_view text, const std::string& name) {
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw usage_failure("topology file '" + shown(name) + "' is not valid JSON (at byte " +
                            std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception&) {
        // out_of_range 406: a number beyond a double's range, such as 1e999 (found by
        // topology_file_fuzzer).
        throw usage_failure("topology file '" + shown(name) +
                            "' is not valid JSON: it holds a number out of range");
    }
    return parse_topology(root);
}

/// Reads and parses the topology file at `path` (`parse_topology_text`). Throws
/// `usage_failure` for a file that cannot be read, too.
inline topology_plan read_topology_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw usage_failure("cannot read the topology file '" + shown(path) + "'; check --file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_topology_text(text.str(), path);
}

/// Declares `plan` on `transport`: exchanges, queues, bindings, one at a time, stopping at the
/// first failure. Returns the exit code.
///
/// @tparam Transport a model of `letterbox::transport`.
template <transport Transport>
int run_topology(Transport& transport, const topology_plan& plan, const topology_arguments& args,
                 std::ostream& out, std::ostream& err, const event_loop& loop) {
    struct step {
        std::string what;
        std::function<void(std::function<void(std::error_code)>)> start;
    };
    std::vector<step> steps;
    for (const auto& x : plan.exchanges)
        steps.push_back(
            {"exchange " + printable(x.name) + " (" + std::string(to_string(x.type)) + ")",
             [&transport, x](auto done) {
                 transport.async_declare(x, done);
             }});
    for (const auto& q : plan.queues)
        steps.push_back({"queue " + printable(q.name), [&transport, q](auto done) {
                             transport.async_declare(q, done);
                         }});
    for (const auto& b : plan.bindings)
        steps.push_back({"binding " + printable(b.source) + " -> " + printable(b.destination) +
                             " (key \"" + printable(b.routing_key) + "\")",
                         [&transport, b](auto done) {
                             transport.async_bind(b, done);
                         }});

    for (const auto& s : steps) {
        struct slot {
            bool done = false;
            std::error_code ec{};
        };
        auto r = std::make_shared<slot>();
        s.start([r](std::error_code ec) {
            r->done = true;
            r->ec = ec;
        });
        if (!loop([r] { return r->done; }, args.timeout)) {
            err << "letterbox: declaring " << s.what << " did not finish within "
                << std::chrono::duration_cast<std::chrono::seconds>(args.timeout).count() << " s ("
                << args.endpoint << "); is the broker reachable? raise --timeout\n";
            return internal;
        }
        if (const auto ec = r->ec) {
            err << "letterbox: declaring " << s.what << " on " << args.endpoint
                << " failed: " << ec.message();
            if (ec == letterbox::errc::precondition_failed) {
                err << "; it exists with other properties or arguments: change the file to "
                       "match, or delete it first\n";
                return internal;
            }
            if (ec == letterbox::errc::not_found) {
                err << "; a binding's source or destination does not exist: declare it in the "
                       "file\n";
                return not_found;
            }
            if (ec == letterbox::errc::access_refused) {
                err << "; check the user, password and vhost in --url\n";
                return cannot_connect;
            }
            if (ec == letterbox::errc::connection_closed ||
                ec == letterbox::errc::connection_forced) {
                err << "; is RabbitMQ running? check --url\n";
                return cannot_connect;
            }
            err << "\n";
            return internal;
        }
        if (!args.json)
            out << "declared " << s.what << "\n";
    }
    if (args.json) {
        nlohmann::json xs = nlohmann::json::array();
        nlohmann::json qs = nlohmann::json::array();
        for (const auto& x : plan.exchanges)
            xs.push_back(x.name);
        for (const auto& q : plan.queues)
            qs.push_back(q.name);
        out << json_text({{"exchanges", xs}, {"queues", qs}, {"bindings", plan.bindings.size()}})
            << "\n";
    } else {
        out << "declared " << plan.exchanges.size() << " exchange(s), " << plan.queues.size()
            << " queue(s), " << plan.bindings.size() << " binding(s)\n";
    }
    return ok;
}

} // namespace letterbox::cli
