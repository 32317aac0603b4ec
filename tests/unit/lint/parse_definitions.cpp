// SPDX-License-Identifier: BSL-1.0

#include <letterbox/lint/parse_definitions.hpp>

#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace unit_lint_parse_definitions {

namespace {

namespace lint = letterbox::lint;
namespace topology = letterbox::topology;
using letterbox::field_array;
using letterbox::field_table;
using letterbox::field_value;

/// The message of the error `parse_definitions(text)` throws, or "" when it returns.
std::string error_of(std::string_view text) {
    try {
        (void)lint::parse_definitions(text);
    } catch (const letterbox::error& e) {
        CHECK(e.code() == letterbox::errc::invalid_argument);
        return e.what();
    }
    return {};
}

const topology::queue* queue_named(const lint::broker_topology& t, std::string_view name) {
    for (const auto& q : t.queues)
        if (q.name == name)
            return &q;
    return nullptr;
}

const topology::exchange* exchange_named(const lint::broker_topology& t, std::string_view name) {
    for (const auto& x : t.exchanges)
        if (x.name == name)
            return &x;
    return nullptr;
}

std::string queue_type_of(const topology::queue& q) {
    return q.arguments.get<std::string>("x-queue-type").value_or("(none)");
}

// Written for these tests after the format of `rabbitmqctl export_definitions` (RabbitMQ 3.13):
// every item names its vhost, queues carry `type`, exchanges have no `internal`.
constexpr std::string_view rabbitmqctl_export = R"json({
  "rabbit_version": "3.13.7",
  "rabbitmq_version": "3.13.7",
  "users": [
    {"name": "admin", "password_hash": "SECRET-HASH-aGFzaGhhc2g=",
     "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": ["administrator"], "limits": {}},
    {"name": "app", "password_hash": "SECRET-HASH-YXBwaGFzaA==",
     "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": "", "limits": {}}
  ],
  "vhosts": [
    {"name": "/", "limits": [], "metadata": {"description": "default", "tags": []}},
    {"name": "orders", "limits": [], "metadata": {"description": "", "tags": []}}
  ],
  "permissions": [
    {"user": "app", "vhost": "orders", "configure": ".*", "write": ".*", "read": ".*"}
  ],
  "topic_permissions": [],
  "parameters": [
    {"value": {"uri": "amqp://user:SECRET-PASSWORD@upstream", "ack-mode": "on-confirm"},
     "vhost": "orders", "component": "federation-upstream", "name": "up"}
  ],
  "global_parameters": [
    {"name": "cluster_name", "value": "rabbit@node1"},
    {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-abc"}
  ],
  "policies": [
    {"vhost": "orders", "name": "dlx", "pattern": "^orders\\.", "apply-to": "queues",
     "definition": {"dead-letter-exchange": "orders.dlx", "message-ttl": 60000}, "priority": 1}
  ],
  "queues": [
    {"name": "orders.created", "vhost": "orders", "durable": true, "auto_delete": false,
     "type": "quorum", "arguments": {"x-delivery-limit": 5, "x-dead-letter-exchange": "orders.dlx"}},
    {"name": "orders.dlq", "vhost": "orders", "durable": true, "auto_delete": false,
     "type": "classic", "arguments": {}},
    {"name": "audit", "vhost": "orders", "durable": true, "auto_delete": false,
     "type": "stream", "arguments": {"x-queue-type": "stream", "x-max-age": "7D"}},
    {"name": "legacy", "vhost": "/", "durable": false, "auto_delete": true,
     "type": "classic", "arguments": {"x-message-ttl": 1000}}
  ],
  "exchanges": [
    {"name": "orders", "vhost": "orders", "type": "topic", "durable": true, "auto_delete": false,
     "arguments": {}},
    {"name": "orders.dlx", "vhost": "orders", "type": "fanout", "durable": true,
     "auto_delete": false, "arguments": {"alternate-exchange": "unrouted"}}
  ],
  "bindings": [
    {"source": "orders", "vhost": "orders", "destination": "orders.created",
     "destination_type": "queue", "routing_key": "order.created", "arguments": {}},
    {"source": "orders.dlx", "vhost": "orders", "destination": "orders.dlq",
     "destination_type": "queue", "routing_key": "", "arguments": {}},
    {"source": "amq.topic", "vhost": "orders", "destination": "orders",
     "destination_type": "exchange", "routing_key": "#", "arguments": {"x-match": "any"}}
  ]
})json";

// After the format of the management API's `GET /api/definitions`: `product_name` and
// `product_version`, no queue `type`, exchanges with `internal`.
constexpr std::string_view management_export = R"json({
  "rabbit_version": "4.0.5",
  "rabbitmq_version": "4.0.5",
  "product_name": "RabbitMQ",
  "product_version": "4.0.5",
  "rabbitmq_definition_format": "cluster",
  "original_cluster_name": "rabbit@node1",
  "explanation": "Definitions of cluster 'rabbit@node1'",
  "users": [{"name": "guest", "password_hash": "SECRET-HASH-Z3Vlc3Q=", "tags": ["administrator"]}],
  "vhosts": [
    {"name": "/", "description": "", "tags": [], "default_queue_type": "classic",
     "metadata": {"description": "", "tags": [], "default_queue_type": "classic"}},
    {"name": "jobs", "description": "", "tags": [], "default_queue_type": "quorum",
     "metadata": {"description": "", "tags": [], "default_queue_type": "quorum"}}
  ],
  "permissions": [],
  "topic_permissions": [],
  "parameters": [],
  "global_parameters": [],
  "policies": [],
  "queues": [
    {"name": "work", "vhost": "jobs", "durable": true, "auto_delete": false, "arguments": {}},
    {"name": "scratch", "vhost": "jobs", "durable": true, "auto_delete": false,
     "arguments": {"x-queue-type": "classic"}},
    {"name": "plain", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {}}
  ],
  "exchanges": [
    {"name": "jobs", "vhost": "jobs", "type": "direct", "durable": true, "auto_delete": false,
     "internal": false, "arguments": {}},
    {"name": "jobs.internal", "vhost": "jobs", "type": "headers", "durable": true,
     "auto_delete": false, "internal": true, "arguments": {}}
  ],
  "bindings": [
    {"source": "jobs", "vhost": "jobs", "destination": "work", "destination_type": "queue",
     "routing_key": "work", "arguments": {}}
  ]
})json";

// After the format of `GET /api/definitions/{vhost}` (3.13): no `vhost` in any item.
constexpr std::string_view per_vhost_export = R"json({
  "rabbit_version": "3.13.2",
  "parameters": [],
  "policies": [
    {"name": "ttl", "pattern": ".*", "apply-to": "quorum_queues", "definition": {"message-ttl": 5000},
     "priority": 0}
  ],
  "queues": [
    {"name": "q1", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum"}}
  ],
  "exchanges": [
    {"name": "x1", "type": "direct", "durable": true, "auto_delete": false, "internal": false,
     "arguments": {}}
  ],
  "bindings": [
    {"source": "x1", "destination": "q1", "destination_type": "queue", "routing_key": "k",
     "arguments": {}}
  ]
})json";

TEST_CASE("parse_definitions reads a rabbitmqctl export into one topology per virtual host",
          "[lint]") {
    const auto topologies = lint::parse_definitions(rabbitmqctl_export);
    REQUIRE(topologies.size() == 2);
    const auto& root = topologies[0];
    const auto& orders = topologies[1];
    CHECK(root.vhost == "/");
    CHECK(orders.vhost == "orders");
    CHECK(root.rabbit_version == "3.13.7");
    CHECK(orders.rabbit_version == "3.13.7");

    REQUIRE(root.queues.size() == 1);
    CHECK(root.queues[0].name == "legacy");
    CHECK_FALSE(root.queues[0].durable);
    CHECK(root.queues[0].auto_delete);
    CHECK(root.queues[0].arguments ==
          field_table{{"x-message-ttl", std::int64_t{1000}}, {"x-queue-type", "classic"}});
    CHECK(root.exchanges.empty());
    CHECK(root.bindings.empty());
    CHECK(root.policies.empty());

    REQUIRE(orders.queues.size() == 3);
    const auto* created = queue_named(orders, "orders.created");
    REQUIRE(created != nullptr);
    CHECK(created->durable);
    CHECK_FALSE(created->auto_delete);
    CHECK_FALSE(created->exclusive);
    CHECK(created->arguments == field_table{{"x-dead-letter-exchange", "orders.dlx"},
                                            {"x-delivery-limit", std::int64_t{5}},
                                            {"x-queue-type", "quorum"}});
    CHECK(queue_type_of(*queue_named(orders, "orders.dlq")) == "classic");
    CHECK(queue_named(orders, "audit")->arguments ==
          field_table{{"x-max-age", "7D"}, {"x-queue-type", "stream"}});

    REQUIRE(orders.exchanges.size() == 2);
    CHECK(orders.exchanges[0] == topology::exchange{"orders", topology::exchange_type::topic, true,
                                                    false, false, field_table{}});
    CHECK(orders.exchanges[1] == topology::exchange{"orders.dlx",
                                                    topology::exchange_type::fanout,
                                                    true,
                                                    false,
                                                    false,
                                                    {{"alternate-exchange", "unrouted"}}});

    REQUIRE(orders.bindings.size() == 3);
    CHECK(orders.bindings[0] ==
          topology::binding{
              "orders", "orders.created", "order.created", {}, topology::destination_kind::queue});
    CHECK(orders.bindings[1] ==
          topology::binding{"orders.dlx", "orders.dlq", "", {}, topology::destination_kind::queue});
    CHECK(orders.bindings[2] == topology::binding{"amq.topic",
                                                  "orders",
                                                  "#",
                                                  {{"x-match", "any"}},
                                                  topology::destination_kind::exchange});

    REQUIRE(orders.policies.size() == 1);
    const auto& p = orders.policies[0];
    CHECK(p.name == "dlx");
    CHECK(p.pattern == "^orders\\.");
    CHECK(p.apply_to == "queues");
    CHECK(p.priority == 1);
    CHECK(p.definition == field_table{{"dead-letter-exchange", "orders.dlx"},
                                      {"message-ttl", std::int64_t{60000}}});
    CHECK_FALSE(p.operator_policy);
}

TEST_CASE("parse_definitions reads a management API export, which has no queue type and marks "
          "internal exchanges",
          "[lint]") {
    const auto topologies = lint::parse_definitions(management_export);
    REQUIRE(topologies.size() == 2);
    CHECK(topologies[0].vhost == "/");
    CHECK(topologies[1].vhost == "jobs");
    CHECK(topologies[1].rabbit_version == "4.0.5");
    const auto& jobs = topologies[1];
    CHECK(exchange_named(jobs, "jobs")->type == topology::exchange_type::direct);
    CHECK_FALSE(exchange_named(jobs, "jobs")->internal);
    CHECK(exchange_named(jobs, "jobs.internal")->type == topology::exchange_type::headers);
    CHECK(exchange_named(jobs, "jobs.internal")->internal);
    REQUIRE(jobs.bindings.size() == 1);
    CHECK(jobs.bindings[0].destination == "work");
}

TEST_CASE("a queue without a type or x-queue-type takes the default queue type of its virtual "
          "host",
          "[lint]") {
    const auto topologies = lint::parse_definitions(management_export);
    REQUIRE(topologies.size() == 2);
    const auto& jobs = topologies[1];
    CHECK(queue_type_of(*queue_named(jobs, "work")) == "quorum");
    // An argument wins over the vhost's default, as it did when the queue was declared.
    CHECK(queue_type_of(*queue_named(jobs, "scratch")) == "classic");
    CHECK(queue_type_of(*queue_named(topologies[0], "plain")) == "classic");

    // `default_queue_type` outside `metadata` (4.0.5 writes both), and values that name no type.
    const auto other = lint::parse_definitions(R"json({
      "vhosts": [{"name": "a", "default_queue_type": "quorum"},
                 {"name": "b", "metadata": {"default_queue_type": "undefined"}},
                 {"name": "c"}],
      "queues": [{"name": "qa", "vhost": "a", "arguments": {}},
                 {"name": "qb", "vhost": "b", "arguments": {}},
                 {"name": "qc", "vhost": "c", "arguments": {}},
                 {"name": "qd", "vhost": "d", "arguments": {}}]})json");
    REQUIRE(other.size() == 4);
    CHECK(queue_type_of(other[0].queues.at(0)) == "quorum");
    CHECK(queue_type_of(other[1].queues.at(0)) == "(none)");
    CHECK(queue_type_of(other[2].queues.at(0)) == "(none)");
    CHECK(other[3].vhost == "d");
    CHECK(queue_type_of(other[3].queues.at(0)) == "(none)");
}

TEST_CASE("a queue's type member fills x-queue-type only when the arguments have none", "[lint]") {
    const auto t = lint::parse_definitions(R"json({"queues": [
      {"name": "a", "vhost": "/", "type": "quorum", "arguments": {"x-queue-type": "classic"}},
      {"name": "b", "vhost": "/", "type": "quorum"},
      {"name": "c", "vhost": "/", "type": "", "arguments": {}}],
      "vhosts": [{"name": "/", "metadata": {"default_queue_type": "stream"}}]})json");
    REQUIRE(t.size() == 1);
    CHECK(queue_type_of(*queue_named(t[0], "a")) == "classic");
    CHECK(queue_type_of(*queue_named(t[0], "b")) == "quorum");
    CHECK(queue_type_of(*queue_named(t[0], "c")) == "stream");
}

TEST_CASE("a per-vhost export, whose items name no vhost, gives one topology for the file's vhost",
          "[lint]") {
    const auto topologies = lint::parse_definitions(per_vhost_export);
    REQUIRE(topologies.size() == 1);
    const auto& t = topologies[0];
    CHECK(t.vhost.empty());
    CHECK(t.rabbit_version == "3.13.2");
    REQUIRE(t.queues.size() == 1);
    CHECK(queue_type_of(t.queues[0]) == "quorum");
    REQUIRE(t.exchanges.size() == 1);
    REQUIRE(t.bindings.size() == 1);
    REQUIRE(t.policies.size() == 1);
    CHECK(t.policies[0].apply_to == "quorum_queues");
    CHECK(t.policies[0].definition == field_table{{"message-ttl", std::int64_t{5000}}});

    // 4.0.5's per-vhost file: its format, the vhost's default queue type and metadata at the top
    // level, and the vhost's name when the file gives it.
    const auto named = lint::parse_definitions(R"json({
      "rabbitmq_definition_format": "single_virtual_host",
      "original_vhost_name": "billing",
      "explanation": "Definitions of virtual host 'billing'",
      "rabbit_version": "4.0.5",
      "default_queue_type": "quorum",
      "metadata": {"description": "billing", "tags": [], "default_queue_type": "quorum"},
      "description": "billing",
      "limits": {"max-queues": 10},
      "queues": [{"name": "invoices", "durable": true, "auto_delete": false, "arguments": {}}]
    })json");
    REQUIRE(named.size() == 1);
    CHECK(named[0].vhost == "billing");
    CHECK(queue_type_of(named[0].queues.at(0)) == "quorum");

    CHECK(lint::parse_definitions(R"({"vhost": "x", "queues": [{"name": "q"}]})")[0].vhost == "x");
}

TEST_CASE("virtual hosts come out sorted by name, listed empty ones included, each with its own "
          "objects",
          "[lint]") {
    const auto topologies = lint::parse_definitions(R"json({
      "product_version": "3.12.0",
      "vhosts": [{"name": "zeta"}, {"name": "alpha"}, {"name": "empty"}],
      "queues": [{"name": "q", "vhost": "zeta"}, {"name": "q", "vhost": "alpha"},
                 {"name": "r", "vhost": "unlisted"}],
      "exchanges": [{"name": "x", "vhost": "alpha", "type": "direct"}],
      "bindings": [{"source": "x", "vhost": "alpha", "destination": "q",
                    "destination_type": "queue"}]})json");
    REQUIRE(topologies.size() == 4);
    CHECK(topologies[0].vhost == "alpha");
    CHECK(topologies[1].vhost == "empty");
    CHECK(topologies[2].vhost == "unlisted");
    CHECK(topologies[3].vhost == "zeta");
    CHECK(topologies[0].rabbit_version == "3.12.0");
    CHECK(topologies[0].queues.size() == 1);
    CHECK(topologies[0].exchanges.size() == 1);
    CHECK(topologies[0].bindings.size() == 1);
    CHECK(topologies[0].bindings[0].routing_key.empty());
    CHECK(topologies[1] == lint::broker_topology{{}, {}, {}, {}, "3.12.0", "empty"});
    CHECK(topologies[2].queues.at(0).name == "r");
    CHECK(topologies[3].queues.size() == 1);
    CHECK(topologies[3].exchanges.empty());

    // A top-level default queue type is the file's vhost's, and makes no topology by itself.
    const auto listed = lint::parse_definitions(
        R"({"default_queue_type": "quorum", "vhosts": [{"name": "a"}], "queues": [{"name": "q",
            "vhost": "a"}]})");
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].vhost == "a");
    CHECK(queue_type_of(listed[0].queues.at(0)) == "(none)");

    // No vhost anywhere: one empty topology.
    const auto none = lint::parse_definitions("{}");
    REQUIRE(none.size() == 1);
    CHECK(none[0] == lint::broker_topology{});
}

TEST_CASE("operator policies come from the operator_policy parameters and other parameters are "
          "ignored",
          "[lint]") {
    const auto topologies = lint::parse_definitions(R"json({
      "parameters": [
        {"vhost": "/", "component": "operator_policy", "name": "limits",
         "value": {"pattern": ".*", "apply-to": "queues", "priority": 5,
                   "definition": {"max-length": 100000, "delivery-limit": 20}}},
        {"vhost": "/", "component": "shovel", "name": "move",
         "value": {"src-uri": "amqp://u:SECRET-PASSWORD@a", "dest-uri": ["not", "checked"]}},
        {"vhost": "/", "component": "federation-upstream", "name": "up", "value": "anything"}
      ],
      "policies": [{"vhost": "/", "name": "user", "pattern": "^q$", "definition": {}}]})json");
    REQUIRE(topologies.size() == 1);
    const auto& policies = topologies[0].policies;
    REQUIRE(policies.size() == 2);
    CHECK(policies[0].name == "user");
    CHECK(policies[0].apply_to == "all");
    CHECK(policies[0].priority == 0);
    CHECK_FALSE(policies[0].operator_policy);
    CHECK(policies[1] == lint::policy{"limits", ".*", "queues", 5,
                                      field_table{{"delivery-limit", std::int64_t{20}},
                                                  {"max-length", std::int64_t{100000}}},
                                      true});
}

TEST_CASE("members added by 4.0.5 and members no version has are ignored", "[lint]") {
    const auto topologies = lint::parse_definitions(R"json({
      "rabbitmq_definition_format": "cluster",
      "original_cluster_name": "rabbit@a",
      "explanation": "Definitions of cluster 'rabbit@a'",
      "future_section": [{"anything": {"deep": [1, 2, 3]}}],
      "another": 42,
      "queues": [{"name": "q", "vhost": "/", "type": "quorum", "arguments": {},
                  "leader": "rabbit@a", "members": ["rabbit@a"], "future": {"x": 1}}],
      "exchanges": [{"name": "x", "vhost": "/", "type": "direct", "future": null}]})json");
    REQUIRE(topologies.size() == 1);
    CHECK(topologies[0].queues.size() == 1);
    CHECK(topologies[0].exchanges.size() == 1);
}

TEST_CASE("exchange types of plugins are read as the type that routes like them", "[lint]") {
    const auto t = lint::parse_definitions(R"json({"exchanges": [
      {"name": "delayed", "vhost": "/", "type": "x-delayed-message",
       "arguments": {"x-delayed-type": "topic"}},
      {"name": "delayed-unknown", "vhost": "/", "type": "x-delayed-message", "arguments": {}},
      {"name": "hash", "vhost": "/", "type": "x-consistent-hash", "arguments": {}},
      {"name": "random", "vhost": "/", "type": "x-local-random"}]})json");
    REQUIRE(t.size() == 1);
    CHECK(exchange_named(t[0], "delayed")->type == topology::exchange_type::topic);
    CHECK(exchange_named(t[0], "delayed")->arguments == field_table{{"x-delayed-type", "topic"}});
    CHECK(exchange_named(t[0], "delayed-unknown")->type == topology::exchange_type::fanout);
    CHECK(exchange_named(t[0], "hash")->type == topology::exchange_type::consistent_hash);
    CHECK(exchange_named(t[0], "random")->type == topology::exchange_type::fanout);
}

TEST_CASE("argument values are kept as the export holds them, nested tables and arrays included",
          "[lint]") {
    const auto t = lint::parse_definitions(R"json({"queues": [{"name": "q", "vhost": "/",
      "arguments": {"x-message-ttl": "60000", "x-max-length": 10, "f": 1.5, "n": null,
                    "b": true, "big": 9223372036854775807, "neg": -9223372036854775808,
                    "t": {"a": [1, "two", {"c": false}]}}}]})json");
    const auto& args = t.at(0).queues.at(0).arguments;
    CHECK(args.get<std::string>("x-message-ttl") == "60000");
    CHECK(args.get<std::int64_t>("x-max-length") == 10);
    CHECK(args.get<double>("f") == 1.5);
    REQUIRE(args.find("n") != nullptr);
    CHECK(args.find("n")->is_void());
    CHECK(args.get<bool>("b") == true);
    CHECK(args.get<std::int64_t>("big") == INT64_MAX);
    CHECK(args.get<std::int64_t>("neg") == INT64_MIN);
    CHECK(args.get<field_table>("t") ==
          field_table{{"a", field_array{std::int64_t{1}, "two", field_table{{"c", false}}}}});
}

TEST_CASE("absent and null members take their defaults, and an empty array is an empty table",
          "[lint]") {
    const auto t = lint::parse_definitions(R"json({"users": null, "queues": [
      {"name": "q", "vhost": "/", "durable": null, "arguments": []}],
      "exchanges": [{"name": "x", "vhost": "/", "type": "topic", "arguments": null}],
      "bindings": [{"source": "x", "vhost": "/", "destination": "q", "destination_type": "queue",
                    "routing_key": null, "arguments": []}]})json");
    REQUIRE(t.size() == 1);
    CHECK(t[0].queues.at(0) == topology::queue{"q", true, false, false, field_table{}});
    CHECK(t[0].exchanges.at(0) ==
          topology::exchange{"x", topology::exchange_type::topic, true, false, false, {}});
    CHECK(t[0].bindings.at(0).routing_key.empty());
    CHECK(t[0].bindings.at(0).arguments.empty());
}

TEST_CASE("text that is not JSON is refused with the byte where parsing failed", "[lint]") {
    CHECK(error_of("") == "definitions: not valid JSON (at byte 1): invalid argument");
    CHECK_THAT(error_of("{\"queues\": [}"),
               Catch::Matchers::StartsWith("definitions: not valid JSON (at byte 13)"));
    CHECK_THAT(error_of("{} {}"), Catch::Matchers::StartsWith("definitions: not valid JSON"));
    CHECK_THAT(error_of("{\"queues\": [] // comment\n}"),
               Catch::Matchers::StartsWith("definitions: not valid JSON"));
    CHECK_THAT(error_of("[]"), Catch::Matchers::StartsWith(
                                   "definitions: (top level): must be an object, not array"));
    CHECK_THAT(error_of("null"), Catch::Matchers::StartsWith(
                                     "definitions: (top level): must be an object, not null"));
}

TEST_CASE("every prefix of a valid export gives a topology or an error, never a crash", "[lint]") {
    for (const auto text : {rabbitmqctl_export, management_export, per_vhost_export}) {
        std::size_t refused = 0;
        for (std::size_t n = 0; n < text.size(); ++n) {
            try {
                (void)lint::parse_definitions(text.substr(0, n));
            } catch (const letterbox::error& e) {
                ++refused;
                const std::string_view what = e.what();
                CHECK(what.starts_with("definitions: "));
                CHECK(what.find("SECRET") == std::string_view::npos);
            }
        }
        // Only the whole text (and the text without its final newline, if any) is valid JSON.
        CHECK(refused == text.size());
        CHECK_NOTHROW(lint::parse_definitions(text));
    }
}

TEST_CASE("a member with the wrong type is refused, naming its path and both types", "[lint]") {
    const std::vector<std::pair<std::string_view, std::string_view>> cases = {
        {R"({"queues": {}})", "definitions: queues: must be an array, not object"},
        {R"({"queues": [1]})", "definitions: queues[0]: must be an object, not integer"},
        {R"({"queues": [{"name": "a"}, {"name": 7}]})",
         "definitions: queues[1].name: must be a string, not integer"},
        {R"({"queues": [{"name": "a", "durable": "yes"}]})",
         "definitions: queues[0].durable: must be true or false, not string"},
        {R"({"queues": [{"name": "a", "auto_delete": 0}]})",
         "definitions: queues[0].auto_delete: must be true or false, not integer"},
        {R"({"queues": [{"name": "a", "arguments": "x"}]})",
         "definitions: queues[0].arguments: must be an object, not string"},
        {R"({"queues": [{"name": "a", "arguments": [1]}]})",
         "definitions: queues[0].arguments: must be an object, not array"},
        {R"({"queues": [{"name": "a", "type": 1}]})",
         "definitions: queues[0].type: must be a string, not integer"},
        {R"({"queues": [{"name": "a", "vhost": ["/"]}]})",
         "definitions: queues[0].vhost: must be a string, not array"},
        {R"({"exchanges": [{"name": "x", "type": "direct", "internal": "no"}]})",
         "definitions: exchanges[0].internal: must be true or false, not string"},
        {R"({"bindings": [{"source": "x", "destination": "q", "destination_type": "topic"}]})",
         "definitions: bindings[0].destination_type: must be queue or exchange, not \"topic\""},
        {R"({"bindings": [{"source": "x", "destination": "q", "destination_type": "queue",
             "routing_key": 5}]})",
         "definitions: bindings[0].routing_key: must be a string, not integer"},
        {R"({"policies": [{"name": "p", "pattern": ".*", "definition": {}, "priority": 1.5}]})",
         "definitions: policies[0].priority: must be an integer, not fractional number"},
        {R"({"policies": [{"name": "p", "pattern": ".*", "definition": "ttl"}]})",
         "definitions: policies[0].definition: must be an object, not string"},
        {R"({"policies": [{"name": "p", "pattern": ".*", "definition": {}, "apply-to": true}]})",
         "definitions: policies[0].apply-to: must be a string, not boolean"},
        {R"({"parameters": [{"component": 3}]})",
         "definitions: parameters[0].component: must be a string, not integer"},
        {R"({"parameters": [{"component": "operator_policy", "name": "o", "value": "v"}]})",
         "definitions: parameters[0].value: must be an object, not string"},
        {R"({"parameters": [{"component": "operator_policy", "name": "o",
             "value": {"pattern": ".*", "definition": {"max-length": 1.5e400}}}]})",
         "definitions: not valid JSON: a number is out of range"},
        {R"({"vhosts": [{"name": "/", "metadata": []}]})",
         "definitions: vhosts[0].metadata: must be an object, not array"},
        {R"({"vhosts": [{"name": "/", "metadata": {"default_queue_type": 1}}]})",
         "definitions: vhosts[0].metadata.default_queue_type: must be a string, not integer"},
        {R"({"rabbit_version": 3})", "definitions: rabbit_version: must be a string, not integer"},
        {R"({"users": "admin"})", "definitions: users: must be an array, not string"},
        {R"({"permissions": {}})", "definitions: permissions: must be an array, not object"},
        {R"({"global_parameters": 1})",
         "definitions: global_parameters: must be an array, not integer"},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        CHECK_THAT(error_of(text), Catch::Matchers::StartsWith(std::string(expected)));
    }
}

TEST_CASE("a required member that is missing is refused by its path", "[lint]") {
    const std::vector<std::pair<std::string_view, std::string_view>> cases = {
        {R"({"queues": [{}]})", "definitions: queues[0].name: is required"},
        {R"({"exchanges": [{"name": "x"}]})", "definitions: exchanges[0].type: is required"},
        {R"({"bindings": [{"source": "x", "destination_type": "queue"}]})",
         "definitions: bindings[0].destination: is required"},
        {R"({"bindings": [{"source": "x", "destination": "q"}]})",
         "definitions: bindings[0].destination_type: is required"},
        {R"({"policies": [{"name": "p", "definition": {}}]})",
         "definitions: policies[0].pattern: is required"},
        {R"({"policies": [{"name": "p", "pattern": ".*"}]})",
         "definitions: policies[0].definition: is required"},
        {R"({"parameters": [{"name": "p"}]})", "definitions: parameters[0].component: is required"},
        {R"({"parameters": [{"component": "operator_policy", "name": "o"}]})",
         "definitions: parameters[0].value: is required"},
        {R"({"vhosts": [{"tags": []}]})", "definitions: vhosts[0].name: is required"},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        CHECK_THAT(error_of(text), Catch::Matchers::StartsWith(std::string(expected)));
    }
}

TEST_CASE("hostile nesting depth is refused before the JSON parser runs", "[lint]") {
    CHECK(error_of(std::string(100'000, '[')) ==
          "definitions: nests arrays and objects deeper than 64 levels (at byte 65): invalid "
          "argument");
    std::string objects;
    for (int i = 0; i < 100'000; ++i)
        objects += "{\"a\":";
    CHECK_THAT(error_of(objects),
               Catch::Matchers::StartsWith("definitions: nests arrays and objects deeper"));
    // A balanced document just as deep, inside a queue's arguments.
    const std::string deep = R"({"queues": [{"name": "q", "arguments": {"a": )" +
                             std::string(100, '[') + std::string(100, ']') + "}}]}";
    CHECK_THAT(error_of(deep),
               Catch::Matchers::StartsWith("definitions: nests arrays and objects deeper"));
    // Brackets inside strings are text, not nesting.
    const std::string quoted =
        R"({"queues": [{"name": ")" + std::string(1000, '[') + R"(\"{{{", "arguments": {}}]})";
    const auto t = lint::parse_definitions(quoted);
    CHECK(t.at(0).queues.at(0).name.size() == 1004);
}

TEST_CASE("a table nested deeper than an AMQP field table may be is refused with its path",
          "[lint]") {
    const auto nested = [](std::size_t arrays) {
        return R"({"queues": [{"name": "q", "arguments": {"a": )" + std::string(arrays, '[') +
               std::string(arrays, ']') + "}}]}";
    };
    // The arguments table is level 1, so 31 arrays inside it reach the limit of 32.
    CHECK_NOTHROW(lint::parse_definitions(nested(31)));
    std::string path = "definitions: queues[0].arguments.a";
    for (int i = 0; i < 31; ++i)
        path += "[0]";
    CHECK_THAT(error_of(nested(32)), Catch::Matchers::StartsWith(
                                         path + ": nests tables and arrays deeper than 32 levels"));
    std::string tables = R"({"policies": [{"name": "p", "pattern": ".*", "definition": )";
    for (int i = 0; i < 33; ++i)
        tables += "{\"k\": ";
    tables += "1" + std::string(33, '}') + "}]}";
    CHECK_THAT(error_of(tables),
               Catch::Matchers::StartsWith("definitions: policies[0].definition.k"));
    CHECK_THAT(error_of(tables), Catch::Matchers::Contains("deeper than 32 levels"));
}

TEST_CASE("numbers beyond a double's range and integers beyond 64 bits are refused", "[lint]") {
    CHECK_THAT(
        error_of(R"({"queues": [{"name": "q", "arguments": {"x-message-ttl": 1e999}}]})"),
        Catch::Matchers::StartsWith("definitions: not valid JSON: a number is out of range"));
    CHECK_THAT(error_of(R"({"queues": [{"name": "q", "arguments": {"x": 18446744073709551615}}]})"),
               Catch::Matchers::StartsWith(
                   "definitions: queues[0].arguments.x: is too large for a 64-bit integer"));
    CHECK_THAT(error_of(R"({"policies": [{"name": "p", "pattern": "", "definition": {},
                                          "priority": 9223372036854775808}]})"),
               Catch::Matchers::StartsWith(
                   "definitions: policies[0].priority: is too large for a 64-bit integer"));
    // Beyond 64 bits but within a double: read as a double, as the JSON parser does.
    const auto t = lint::parse_definitions(
        R"({"queues": [{"name": "q", "arguments": {"x": 123456789012345678901234567890}}]})");
    CHECK(t.at(0).queues.at(0).arguments.get<double>("x").has_value());
}

TEST_CASE("invalid UTF-8 in a name is refused as text that is not JSON", "[lint]") {
    const std::string text = "{\"queues\": [{\"name\": \"a\xff\xfe\"}]}";
    CHECK_THAT(error_of(text), Catch::Matchers::StartsWith("definitions: not valid JSON (at byte"));
    const std::string overlong = "{\"queues\": [{\"name\": \"\xc0\xaf\"}]}";
    CHECK_THAT(error_of(overlong), Catch::Matchers::StartsWith("definitions: not valid JSON"));
    // Valid UTF-8 is kept as it is.
    const auto t = lint::parse_definitions("{\"queues\": [{\"name\": \"caf\xc3\xa9\"}]}");
    CHECK(t.at(0).queues.at(0).name == "caf\xc3\xa9");
}

TEST_CASE("names in error messages are escaped and cut", "[lint]") {
    const auto escaped = error_of(
        R"({"queues": [{"name": "q", "arguments": {"x\u001b[2J\nname": {"k": 1e5, "v": [18446744073709551615]}}}]})");
    CHECK_THAT(escaped, Catch::Matchers::StartsWith(
                            "definitions: queues[0].arguments[\"x\\x1b[2J\\x0aname\"].v[0]: is too "
                            "large"));
    CHECK(escaped.find('\x1b') == std::string::npos);
    CHECK(escaped.find('\n') == std::string::npos);

    const std::string long_name(10'000, 'n');
    const auto cut = error_of(R"({"bindings": [{"source": "x", "destination": "q",
        "destination_type": ")" +
                              long_name + "\"}]}");
    CHECK_THAT(cut, Catch::Matchers::StartsWith(
                        "definitions: bindings[0].destination_type: must be queue or exchange, "
                        "not \"" +
                        std::string(64, 'n') + "...\""));
    CHECK(cut.size() < 200);

    // A cut never splits a UTF-8 character: 63 ASCII bytes and then a 2-byte character.
    const auto utf8 = error_of(R"({"bindings": [{"source": "x", "destination": "q",
        "destination_type": ")" +
                               std::string(63, 'a') + "\xc3\xa9" + "zz\"}]}");
    CHECK_THAT(utf8, Catch::Matchers::Contains("not \"" + std::string(63, 'a') + "...\""));
}

TEST_CASE("password hashes and parameter credentials never appear in an error message", "[lint]") {
    // Each text holds secrets in users and in a federation parameter, and one mistake elsewhere.
    const std::string secrets = R"("users": [{"name": "admin", "password_hash": "SECRET-HASH",
        "tags": "administrator"}, "SECRET-USER-STRING", {"password_hash": {"nested": "SECRET-N"}}],
      "parameters": [{"component": "federation-upstream", "name": "u", "vhost": "/",
        "value": {"uri": "amqp://u:SECRET-PASSWORD@h", "bad": [1e1, {"x": "SECRET-X"}]}}],)";
    const std::vector<std::string> texts = {
        "{" + secrets + R"("queues": [{"name": 1}]})",
        "{" + secrets + R"("queues": [{"name": "q", "arguments": {"x": 1e999}}]})",
        "{" + secrets + R"("policies": [{"name": "p"}]})",
        "{" + secrets + R"("exchanges": "SECRET-EXCHANGES"})",
        "{" + secrets + R"("queues": [)",
        "{" + secrets + R"("queues": [{"name": "q", "arguments": {"a": )" + std::string(80, '[') +
            std::string(80, ']') + "}}]}",
    };
    for (const auto& text : texts) {
        const auto message = error_of(text);
        INFO(message);
        CHECK(message.starts_with("definitions: "));
        CHECK(message.find("SECRET") == std::string::npos);
    }
    // Users and parameters other than operator policies are not read at all.
    CHECK(lint::parse_definitions("{" + secrets + R"("queues": []})").size() == 1);
}

TEST_CASE("text larger than 64 MiB is refused before parsing", "[lint]") {
    std::string text(lint::max_definitions_size + 1, ' ');
    text.front() = '{';
    text.back() = '}';
    CHECK(error_of(text) == "definitions: the text is 67108865 bytes long, more than the 67108864 "
                            "accepted: invalid argument");
}

TEST_CASE("a table with more members than the limit is refused", "[lint]") {
    const auto table = [](std::size_t members) {
        std::string t = R"({"bindings": [{"source": "h", "destination": "q",
            "destination_type": "queue", "arguments": {)";
        for (std::size_t i = 0; i < members; ++i)
            t += (i == 0 ? "\"k" : ", \"k") + std::to_string(i) + "\": " + std::to_string(i);
        return t + "}}]}";
    };
    CHECK(lint::parse_definitions(table(lint::max_definitions_table_members))
              .at(0)
              .bindings.at(0)
              .arguments.size() == lint::max_definitions_table_members);
    CHECK_THAT(error_of(table(lint::max_definitions_table_members + 1)),
               Catch::Matchers::StartsWith("definitions: bindings[0].arguments: has 257 members, "
                                           "more than the 256 a table may have here"));
}

} // namespace

} // namespace unit_lint_parse_definitions
