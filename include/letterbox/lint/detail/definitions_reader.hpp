// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The reader behind `lint::parse_definitions` (lint/parse_definitions.hpp, which documents what
// it accepts). Nothing here is API.

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

// Copies of the public limits (lint/parse_definitions.hpp), which include this header.
inline constexpr std::size_t definitions_size_limit = std::size_t{64} * 1024 * 1024;
inline constexpr std::size_t definitions_depth_limit = 64;
inline constexpr std::size_t definitions_field_depth_limit = 32;
inline constexpr std::size_t definitions_table_member_limit = 256;

/// At most this many bytes of a name from the input are shown in an error.
inline constexpr std::size_t shown_name_limit = 64;

[[noreturn]] inline void fail_definitions(const std::string& what) {
    throw letterbox::error(errc::invalid_argument, "definitions: " + what);
}

/// `name`, from the input, made safe for an error message: control characters (and DEL)
/// become `\xNN`, and beyond `shown_name_limit` bytes the text is cut, on a UTF-8 character
/// boundary, and ends in "...". The parser has checked that strings are valid UTF-8.
inline std::string shown_name(std::string_view name) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string_view kept = name;
    bool cut = false;
    if (kept.size() > shown_name_limit) {
        std::size_t end = shown_name_limit;
        while (end > 0 && (static_cast<unsigned char>(kept[end]) & 0xC0) == 0x80)
            --end;
        kept = kept.substr(0, end);
        cut = true;
    }
    std::string out;
    out.reserve(kept.size() + 8);
    for (const char ch : kept) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7F) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
        } else {
            out += ch;
        }
    }
    if (cut)
        out += "...";
    return out;
}

/// Where a value sits in the document, as a chain of parents on the stack: the text is built
/// only for an error, so reading a wide or deep value costs time linear in its size.
struct json_path {
    const json_path* parent = nullptr;
    /// A member's name, or (`is_index`) an element's position.
    std::string_view key{};
    std::size_t index = 0;
    bool is_index = false;

    json_path member(std::string_view name) const { return json_path{this, name, 0, false}; }
    json_path element(std::size_t i) const { return json_path{this, {}, i, true}; }

    /// `queues[3].arguments.x-message-ttl`; a name that is not made of letters, digits, `-`
    /// and `_` is quoted: `arguments["a.b"]`.
    std::string text() const {
        std::vector<const json_path*> chain;
        for (const json_path* p = this; p != nullptr && p->parent != nullptr; p = p->parent)
            chain.push_back(p);
        std::string out;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
            const json_path& p = **it;
            if (p.is_index) {
                out += "[" + std::to_string(p.index) + "]";
            } else if (plain(p.key)) {
                if (!out.empty())
                    out += ".";
                out += p.key;
            } else {
                out += "[\"" + shown_name(p.key) + "\"]";
            }
        }
        return out.empty() ? std::string("(top level)") : out;
    }

    [[noreturn]] void fail(const std::string& what) const {
        fail_definitions(text() + ": " + what);
    }

private:
    static bool plain(std::string_view s) noexcept {
        if (s.empty())
            return false;
        for (const char c : s)
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_'))
                return false;
        return true;
    }
};

/// What a JSON value is, in an error's words.
inline const char* kind_of(const nlohmann::json& j) noexcept {
    switch (j.type()) {
    case nlohmann::json::value_t::object:
        return "object";
    case nlohmann::json::value_t::array:
        return "array";
    case nlohmann::json::value_t::string:
        return "string";
    case nlohmann::json::value_t::boolean:
        return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
        return "integer";
    case nlohmann::json::value_t::number_float:
        return "fractional number";
    case nlohmann::json::value_t::null:
        return "null";
    default:
        return "other";
    }
}

/// Refuses text nested deeper than `definitions_depth_limit` arrays and objects before the JSON
/// parser sees it, so that no reader (the parser's, ours) goes deeper than that, whatever the
/// input. Brackets inside strings do not count. For text that is not JSON the count may be off;
/// the parser refuses that text anyway.
inline void check_nesting(std::string_view text) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > definitions_depth_limit)
                fail_definitions("nests arrays and objects deeper than " +
                                 std::to_string(definitions_depth_limit) + " levels (at byte " +
                                 std::to_string(i + 1) + ")");
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

/// Reads the members of one JSON object; absent and null members are the same.
class object_reader {
public:
    object_reader(const nlohmann::json& j, const json_path& path)
        : j_(j)
        , path_(path) {
        if (!j_.is_object())
            path_.fail(std::string("must be an object, not ") + kind_of(j_));
    }

    const json_path& path() const noexcept { return path_; }

    const nlohmann::json* find(std::string_view name) const {
        const auto it = j_.find(name);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }

    std::optional<std::string> text(std::string_view name) const {
        const auto* v = find(name);
        if (v == nullptr)
            return std::nullopt;
        if (!v->is_string())
            path_.member(name).fail(std::string("must be a string, not ") + kind_of(*v));
        return v->get_ref<const std::string&>();
    }

    std::string required_text(std::string_view name) const {
        auto v = text(name);
        if (!v)
            path_.member(name).fail("is required");
        return std::move(*v);
    }

    std::optional<bool> flag(std::string_view name) const {
        const auto* v = find(name);
        if (v == nullptr)
            return std::nullopt;
        if (!v->is_boolean())
            path_.member(name).fail(std::string("must be true or false, not ") + kind_of(*v));
        return v->get<bool>();
    }

    std::optional<std::int64_t> integer(std::string_view name) const {
        const auto* v = find(name);
        if (v == nullptr)
            return std::nullopt;
        if (!v->is_number_integer())
            path_.member(name).fail(std::string("must be an integer, not ") + kind_of(*v));
        if (v->is_number_unsigned() &&
            v->get<std::uint64_t>() >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            path_.member(name).fail("is too large for a 64-bit integer");
        return v->get<std::int64_t>();
    }

    /// The member `name` if it is an array (nullptr when absent).
    const nlohmann::json* array(std::string_view name) const {
        const auto* v = find(name);
        if (v != nullptr && !v->is_array())
            path_.member(name).fail(std::string("must be an array, not ") + kind_of(*v));
        return v;
    }

    /// The member `name` if it is an object (nullptr when absent).
    const nlohmann::json* object(std::string_view name) const {
        const auto* v = find(name);
        if (v != nullptr && !v->is_object())
            path_.member(name).fail(std::string("must be an object, not ") + kind_of(*v));
        return v;
    }

private:
    const nlohmann::json& j_;
    const json_path& path_;
};

inline field_value to_field_value(const nlohmann::json& v, const json_path& path,
                                  std::size_t depth);

/// `j`, a table at nesting level `depth` (1 for an `arguments` member), as a field table.
/// `field_table::set` looks names up linearly, so a table's size is bounded to keep the whole
/// conversion linear in the input's size.
inline field_table to_field_table(const nlohmann::json& j, const json_path& path,
                                  std::size_t depth) {
    if (depth > definitions_field_depth_limit)
        path.fail("nests tables and arrays deeper than " +
                  std::to_string(definitions_field_depth_limit) +
                  " levels, the limit of an AMQP field table");
    if (j.size() > definitions_table_member_limit)
        path.fail("has " + std::to_string(j.size()) + " members, more than the " +
                  std::to_string(definitions_table_member_limit) + " a table may have here");
    field_table t;
    // The parser keeps one value per name, so every `set` appends.
    for (const auto& [name, value] : j.items())
        t.set(name, to_field_value(value, path.member(name), depth));
    return t;
}

/// The member at `path` that holds a table (`arguments`, a policy's `definition`). An empty
/// array is an empty table: an empty Erlang property list can be written as `[]`.
inline field_table table_member(const nlohmann::json* j, const json_path& path) {
    if (j == nullptr || (j->is_array() && j->empty()))
        return {};
    if (!j->is_object())
        path.fail(std::string("must be an object, not ") + kind_of(*j));
    return to_field_table(*j, path, 1);
}

/// `v`, a value inside a table or array at level `depth`, as a field value: strings, booleans,
/// integers (64-bit), other numbers (double), null (void), tables and arrays.
inline field_value to_field_value(const nlohmann::json& v, const json_path& path,
                                  std::size_t depth) {
    switch (v.type()) {
    case nlohmann::json::value_t::string:
        return field_value(v.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
        return field_value(v.get<bool>());
    case nlohmann::json::value_t::number_unsigned:
        if (v.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            path.fail("is too large for a 64-bit integer");
        return field_value(static_cast<std::int64_t>(v.get<std::uint64_t>()));
    case nlohmann::json::value_t::number_integer:
        return field_value(v.get<std::int64_t>());
    case nlohmann::json::value_t::number_float:
        return field_value(v.get<double>());
    case nlohmann::json::value_t::object:
        return field_value(to_field_table(v, path, depth + 1));
    case nlohmann::json::value_t::array: {
        // Checked before descending, like a table.
        if (depth + 1 > definitions_field_depth_limit)
            path.fail("nests tables and arrays deeper than " +
                      std::to_string(definitions_field_depth_limit) +
                      " levels, the limit of an AMQP field table");
        field_array a;
        a.reserve(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            a.push_back(to_field_value(v[i], path.element(i), depth + 1));
        return field_value(std::move(a));
    }
    default:
        return field_value(nullptr);
    }
}

/// The elements of the array `array` (may be null: none) at `path`, each checked to be an
/// object and handed to `read(element, element_path)`.
template <class Read>
void for_each_object(const nlohmann::json* array, const json_path& path, Read&& read) {
    if (array == nullptr)
        return;
    for (std::size_t i = 0; i < array->size(); ++i) {
        const json_path element = path.element(i);
        const object_reader r((*array)[i], element);
        read(r);
    }
}

/// The exchange type of an export's `type`. RabbitMQ's own types and the consistent-hash
/// exchange map to themselves; the delayed-message plugin's exchange routes as its
/// `x-delayed-type` argument says; any other plugin type (`x-random`, `x-local-random`,
/// `x-modulus-hash`, `x-recent-history`, `x-jms-topic`, ...) may route to any destination bound
/// to it, and is read as `fanout`, so that no binding of it looks unreachable.
inline topology::exchange_type exchange_type_of(std::string_view type, const field_table& args) {
    if (const auto t = topology::parse_exchange_type(type))
        return *t;
    if (type == "x-delayed-message")
        if (const auto* routed = args.find("x-delayed-type"))
            if (const auto* s = routed->get_if<std::string>())
                if (const auto t = topology::parse_exchange_type(*s))
                    return *t;
    return topology::exchange_type::fanout;
}

/// A default queue type worth applying: the three RabbitMQ ships (an export may hold
/// `undefined` or nothing).
inline std::optional<std::string> known_queue_type(std::optional<std::string> type) {
    if (type && (*type == "classic" || *type == "quorum" || *type == "stream"))
        return type;
    return std::nullopt;
}

/// The default queue type of a vhost entry (or of a per-vhost file's top level):
/// `metadata.default_queue_type`, else `default_queue_type`.
inline std::optional<std::string> default_queue_type_of(const object_reader& r) {
    if (const auto* metadata = r.object("metadata")) {
        const json_path path = r.path().member("metadata");
        if (auto t = known_queue_type(object_reader(*metadata, path).text("default_queue_type")))
            return t;
    }
    return known_queue_type(r.text("default_queue_type"));
}

/// A policy from `policies[i]` or from the `value` of an operator policy parameter.
inline policy read_policy(const object_reader& r, std::string name, bool operator_policy) {
    policy p;
    p.name = std::move(name);
    p.pattern = r.required_text("pattern");
    if (auto a = r.text("apply-to"))
        p.apply_to = std::move(*a);
    p.priority = r.integer("priority").value_or(0);
    const auto* definition = r.find("definition");
    if (definition == nullptr)
        r.path().member("definition").fail("is required");
    p.definition = table_member(definition, r.path().member("definition"));
    p.operator_policy = operator_policy;
    return p;
}

/// An exchange of `exchanges`.
inline topology::exchange read_exchange(const object_reader& r) {
    topology::exchange x;
    x.name = r.required_text("name");
    const auto type = r.required_text("type");
    x.durable = r.flag("durable").value_or(true);
    x.auto_delete = r.flag("auto_delete").value_or(false);
    x.internal = r.flag("internal").value_or(false);
    x.arguments = table_member(r.find("arguments"), r.path().member("arguments"));
    x.type = exchange_type_of(type, x.arguments);
    return x;
}

/// A queue of `queues`, in a vhost whose default queue type is `default_type`. The topology
/// holds the queue's type in `x-queue-type`; when the arguments have none, it comes from `type`
/// (rabbitmqctl), else from the vhost's default (a management export has no `type`).
inline topology::queue read_queue(const object_reader& r,
                                  const std::optional<std::string>& default_type) {
    topology::queue q;
    q.name = r.required_text("name");
    q.durable = r.flag("durable").value_or(true);
    q.auto_delete = r.flag("auto_delete").value_or(false);
    q.exclusive = r.flag("exclusive").value_or(false);
    q.arguments = table_member(r.find("arguments"), r.path().member("arguments"));
    const auto type = r.text("type");
    if (!q.arguments.contains(topology::args::queue_type)) {
        if (type && !type->empty())
            q.arguments.set(topology::args::queue_type, *type);
        else if (default_type)
            q.arguments.set(topology::args::queue_type, *default_type);
    }
    return q;
}

/// A binding of `bindings`.
inline topology::binding read_binding(const object_reader& r) {
    topology::binding b;
    b.source = r.required_text("source");
    b.destination = r.required_text("destination");
    const auto kind = r.required_text("destination_type");
    if (kind == "queue")
        b.kind = topology::destination_kind::queue;
    else if (kind == "exchange")
        b.kind = topology::destination_kind::exchange;
    else
        r.path()
            .member("destination_type")
            .fail("must be queue or exchange, not \"" + shown_name(kind) + "\"");
    b.routing_key = r.text("routing_key").value_or(std::string());
    b.arguments = table_member(r.find("arguments"), r.path().member("arguments"));
    return b;
}

/// The virtual hosts of an export being read, by name (so sorted).
class vhost_map {
public:
    /// `file_vhost`: the vhost of items without a `vhost` member (a per-vhost export's), whose
    /// default queue type is `file_default` unless a `vhosts` entry says otherwise.
    vhost_map(std::string file_vhost, std::optional<std::string> file_default)
        : file_vhost_(std::move(file_vhost))
        , file_default_(std::move(file_default)) {}

    struct state {
        broker_topology topology{};
        std::optional<std::string> default_queue_type{};
    };

    state& named(std::string_view name) {
        auto it = vhosts_.find(name);
        if (it == vhosts_.end()) {
            state fresh;
            if (name == file_vhost_)
                fresh.default_queue_type = file_default_;
            it = vhosts_.emplace(std::string(name), std::move(fresh)).first;
        }
        return it->second;
    }

    /// The vhost of the item `r`: its `vhost` member, else the file's.
    state& of(const object_reader& r) {
        if (const auto v = r.text("vhost"))
            return named(*v);
        return named(file_vhost_);
    }

    /// One topology per vhost, sorted by name; the file's vhost alone when there is none.
    std::vector<broker_topology> take(const std::string& version) {
        if (vhosts_.empty())
            named(file_vhost_);
        std::vector<broker_topology> out;
        out.reserve(vhosts_.size());
        for (auto& [name, s] : vhosts_) {
            s.topology.vhost = name;
            s.topology.rabbit_version = version;
            out.push_back(std::move(s.topology));
        }
        vhosts_.clear();
        return out;
    }

private:
    std::string file_vhost_;
    std::optional<std::string> file_default_;
    std::map<std::string, state, std::less<>> vhosts_;
};

/// The version of the broker that wrote the export, "" when it does not say.
inline std::string version_of(const object_reader& doc) {
    std::string version;
    for (const std::string_view key : {"rabbit_version", "rabbitmq_version", "product_version"})
        if (auto v = doc.text(key); v && version.empty())
            version = std::move(*v);
    return version;
}

/// Reads a whole export (`root`, parsed) into one topology per virtual host.
inline std::vector<broker_topology> read_definitions(const nlohmann::json& root) {
    const json_path top{};
    const object_reader doc(root, top);
    const auto version = version_of(doc);
    (void)doc.text("product_name");
    (void)doc.text("rabbitmq_definition_format");
    // Sections the linter does not read (users hold password hashes): only their shape is
    // checked, and nothing of their content is kept or shown.
    for (const std::string_view key :
         {"users", "permissions", "topic_permissions", "global_parameters"})
        (void)doc.array(key);

    // A per-vhost export has no `vhost` in its items: they belong to the file's vhost.
    auto file_vhost = doc.text("vhost");
    if (!file_vhost)
        file_vhost = doc.text("original_vhost_name");
    vhost_map vhosts(file_vhost.value_or(std::string()), default_queue_type_of(doc));

    // `vhosts` first: a queue's type may come from its vhost's default.
    const json_path vhosts_path = top.member("vhosts");
    for_each_object(doc.array("vhosts"), vhosts_path, [&](const object_reader& r) {
        auto& v = vhosts.named(r.required_text("name"));
        if (auto t = default_queue_type_of(r))
            v.default_queue_type = std::move(t);
    });
    const json_path exchanges_path = top.member("exchanges");
    for_each_object(doc.array("exchanges"), exchanges_path, [&](const object_reader& r) {
        vhosts.of(r).topology.exchanges.push_back(read_exchange(r));
    });
    const json_path queues_path = top.member("queues");
    for_each_object(doc.array("queues"), queues_path, [&](const object_reader& r) {
        auto& v = vhosts.of(r);
        v.topology.queues.push_back(read_queue(r, v.default_queue_type));
    });
    const json_path bindings_path = top.member("bindings");
    for_each_object(doc.array("bindings"), bindings_path, [&](const object_reader& r) {
        vhosts.of(r).topology.bindings.push_back(read_binding(r));
    });
    const json_path policies_path = top.member("policies");
    for_each_object(doc.array("policies"), policies_path, [&](const object_reader& r) {
        vhosts.of(r).topology.policies.push_back(read_policy(r, r.required_text("name"), false));
    });
    // Parameters other than operator policies (federation upstreams, shovels: they may hold
    // credentials in URIs) are not read beyond their component's name.
    const json_path parameters_path = top.member("parameters");
    for_each_object(doc.array("parameters"), parameters_path, [&](const object_reader& r) {
        if (r.required_text("component") != "operator_policy")
            return;
        auto name = r.required_text("name");
        const auto* value = r.find("value");
        const json_path value_path = r.path().member("value");
        if (value == nullptr)
            value_path.fail("is required");
        vhosts.of(r).topology.policies.push_back(
            read_policy(object_reader(*value, value_path), std::move(name), true));
    });
    return vhosts.take(version);
}

} // namespace letterbox::lint::detail
