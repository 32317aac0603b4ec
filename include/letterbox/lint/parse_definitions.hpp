// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/detail/definitions_reader.hpp>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// The largest definitions text `parse_definitions` accepts, in bytes (64 MiB).
inline constexpr std::size_t max_definitions_size = detail::definitions_size_limit;

/// How deeply the text may nest arrays and objects, counted on the raw text before parsing.
/// An export needs 5 levels around a table (top level, `parameters`, the parameter, its
/// `value`, the policy's `definition`), so this leaves room for `max_definitions_field_depth`.
inline constexpr std::size_t max_definitions_depth = detail::definitions_depth_limit;

/// How deeply an `arguments` or `definition` table may nest tables and arrays: the member itself
/// is level 1, the limit of an AMQP field table (`amqp::codec::max_field_depth`).
inline constexpr std::size_t max_definitions_field_depth = detail::definitions_field_depth_limit;

/// How many members one table may have. `field_table` finds names by a linear search; bounding
/// a table keeps reading an export linear in its size.
inline constexpr std::size_t max_definitions_table_members = detail::definitions_table_member_limit;

/// Reads a RabbitMQ definitions export, the JSON of `rabbitmqctl export_definitions` or of the
/// management API's `GET /api/definitions` (the whole cluster) or `GET /api/definitions/{vhost}`
/// (one virtual host), into one `broker_topology` per virtual host, sorted by the vhost's name,
/// for `lint::check_topology`.
///
/// What is read:
/// - `exchanges`: `name`, `type`, `durable`, `auto_delete`, `internal` (management exports
///   only; false when absent), `arguments`. A type the model does not know is mapped: the
///   delayed-message exchange (`x-delayed-message`) to its `x-delayed-type`; any other plugin
///   type (`x-random`, `x-local-random`, `x-modulus-hash`, ...) to `fanout`, because it may route
///   to any of its bindings.
/// - `queues`: `name`, `durable`, `auto_delete`, `exclusive` (exports skip exclusive queues),
///   `arguments`. The topology holds a queue's type in its `x-queue-type` argument: when the
///   arguments have none, it is set from the queue's `type` (rabbitmqctl writes `classic`,
///   `quorum` or `stream`), else from the vhost's default queue type (`metadata.
///   default_queue_type` or `default_queue_type` of the `vhosts` entry, or of the top level of a
///   per-vhost file); the management API writes no `type`. A queue with neither stays without
///   the argument (classic). Streams keep `x-queue-type: stream`.
/// - `bindings`: `source`, `destination`, `destination_type` (`queue` or `exchange`),
///   `routing_key` (empty when absent), `arguments`.
/// - `policies`: `name`, `pattern`, `apply-to` (`all` when absent), `priority` (0 when absent),
///   `definition`; and operator policies, the `parameters` whose `component` is
///   `operator_policy` (their `value` holds the same members), with `operator_policy` set.
/// - The version: `rabbit_version`, else `rabbitmq_version`, else `product_version` (management
///   API), in every topology.
///
/// Virtual hosts: each item's `vhost` member names its vhost. The items of a per-vhost export
/// have none: they belong to the file's vhost, named by a top-level `vhost` or
/// `original_vhost_name` member when present, else `""`. Every vhost of `vhosts` gets a topology,
/// even an empty one; a document with no vhost at all gives one empty topology.
///
/// Not read: `users` (password hashes), `permissions`, `topic_permissions`,
/// `global_parameters`, the other `parameters` (federation and shovel parameters may hold
/// credentials), vhost limits and descriptions. Their content is neither kept nor ever quoted in
/// an error. Unknown members, at the top level and in items, are ignored: exports gain members
/// across versions (4.0.5 added `rabbitmq_definition_format`, `explanation`, ...).
///
/// Values are kept as the export holds them (a string TTL stays a string): the checker reports
/// what RabbitMQ would refuse. Table values become field values: strings, booleans, 64-bit
/// integers, doubles, null (void), nested tables and arrays. A table's members come out sorted
/// by name, not in the order of the text (the order of arguments means nothing to RabbitMQ;
/// keeping it would make parsing an object quadratic in its size); for a name written twice,
/// the last value is kept.
///
/// Errors: throws `letterbox::error` with `errc::invalid_argument` and a message that starts
/// with `definitions: `, checked in this order:
/// 1. text longer than `max_definitions_size`;
/// 2. arrays and objects nested deeper than `max_definitions_depth`, found by a scan of the raw
///    text before the JSON parser runs (`nests arrays and objects deeper than 64 levels (at byte
///    N)`);
/// 3. text that is not JSON, or not UTF-8 (`not valid JSON (at byte N)`), and numbers beyond a
///    double's range (`not valid JSON: a number is out of range`);
/// 4. a member with the wrong type, or a required member missing, named by its path:
///    `definitions: queues[3].arguments: must be an object, not string`. Required: `name` (and
///    `type` for an exchange), a binding's `source`, `destination` and `destination_type`, a
///    policy's `pattern` and `definition`, a parameter's `component`, an operator policy's
///    `name` and `value`. An absent member and a null one are the same;
/// 5. a table nested deeper than `max_definitions_field_depth`, with more than
///    `max_definitions_table_members` members, or holding an integer beyond 64 bits.
///
/// Names from the input appear in messages escaped (control characters as `\xNN`) and cut after
/// 64 bytes. Any input is safe: time and memory are linear in its size, and recursion is
/// bounded by `max_definitions_depth` (the fuzz target `definitions_fuzzer` checks this). At
/// worst (64 MiB of numbers in one array, or of tables at the member limit) a parse takes
/// about 8 s and 2.5 GB of memory (measured: the JSON document and the field values both live
/// until the end); an export of 150,000 quorum queues with their arguments and as many
/// bindings (63 MiB) takes about 3 s and 650 MB (g++ -O2, one core).
///
/// Example:
///
///     for (const auto& t : lint::parse_definitions(read_file("definitions.json")))
///         report(t.vhost, lint::check_topology(t));
inline std::vector<broker_topology> parse_definitions(std::string_view json_text) {
    if (json_text.size() > max_definitions_size)
        detail::fail_definitions("the text is " + std::to_string(json_text.size()) +
                                 " bytes long, more than the " +
                                 std::to_string(max_definitions_size) + " accepted");
    detail::check_nesting(json_text);
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::parse_error& e) {
        detail::fail_definitions("not valid JSON (at byte " + std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception&) {
        // out_of_range 406: a number beyond a double's range, such as 1e999.
        detail::fail_definitions("not valid JSON: a number is out of range");
    }
    return detail::read_definitions(root);
}

} // namespace letterbox::lint
