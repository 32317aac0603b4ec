// SPDX-License-Identifier: BSL-1.0
// amqp::transport on a real 3-node RabbitMQ cluster (issue 23): the URL lists the 3 nodes
// (LETTERBOX_AMQP_CLUSTER_URL, from tests/tools/rabbitmq_cluster.sh), a confirmed stream goes
// into a quorum queue, and the node that holds the queue's leader is killed with SIGKILL
// mid-stream. The publisher and the consumer were on that node: they fail over to a survivor,
// the queue elects a new leader there, and nothing confirmed is lost. Tagged [disruptive] (a
// node of the cluster dies) and hidden ([.cluster]): only a run given a cluster selects it
// (docs/testing-with-rabbitmq.md, "A cluster"). Every wait has a deadline.

#include <letterbox/amqp/transport.hpp>

#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/transport_suite.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace integration_amqp_cluster {

namespace {

using namespace std::chrono_literals;
using letterbox::delivery;
using letterbox::errc;
using letterbox::message;
using letterbox::amqp::endpoint;
using clock_type = std::chrono::steady_clock;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
}

/// The cluster's URL (every node) from the environment; fails the test case when it is missing.
std::string cluster_url() {
    auto url = env("LETTERBOX_AMQP_CLUSTER_URL");
    if (url.empty())
        FAIL("LETTERBOX_AMQP_CLUSTER_URL is not set: start a 3-node cluster with `export "
             "$(tests/tools/rabbitmq_cluster.sh start)` (or run through "
             "`tests/tools/rabbitmq_cluster.sh run -- ...`) and run again");
    return url;
}

struct script_result {
    int status = -1;
    std::string out; // stdout, without its trailing newline
};

/// `rabbitmq_cluster.sh ARGS` on the cluster of LETTERBOX_RABBITMQ_CLUSTER_DIR (the script is
/// LETTERBOX_RABBITMQ_CLUSTER_SCRIPT; `start` and `run` export both). Its stderr goes to ours
/// unless `quiet`. ARGS hold no single quote.
script_result cluster_script(const std::string& args, bool quiet = false) {
    const auto script = env("LETTERBOX_RABBITMQ_CLUSTER_SCRIPT");
    const auto dir = env("LETTERBOX_RABBITMQ_CLUSTER_DIR");
    if (script.empty() || dir.empty())
        return {};
    const auto line = "LETTERBOX_RABBITMQ_CLUSTER_DIR='" + dir + "' '" + script + "' " + args +
                      (quiet ? " 2>/dev/null" : "");
    FILE* p = popen(line.c_str(), "r");
    if (p == nullptr)
        return {};
    script_result r;
    std::array<char, 256> buf{};
    while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr)
        r.out += buf.data();
    const int status = pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == '\r'))
        r.out.pop_back();
    return r;
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, sep))
        out.push_back(item);
    return out;
}

/// The test's single-threaded io_context: it runs only inside run_until, on the test's thread.
struct loop {
    boost::asio::io_context io{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};

    bool run_until(const std::function<bool()>& done, clock_type::duration timeout) {
        const auto deadline = clock_type::now() + timeout;
        while (!done()) {
            const auto now = clock_type::now();
            if (now >= deadline)
                return false;
            io.run_one_for(deadline - now);
        }
        return true;
    }

    /// Runs the loop for `d` (transports keep working meanwhile).
    void pause(clock_type::duration d) {
        auto done = std::make_shared<bool>(false);
        boost::asio::steady_timer timer(io, d);
        timer.async_wait([done](boost::system::error_code) { *done = true; });
        run_until([&] { return *done; }, d + 5s);
    }

    /// Waits (within `timeout`) for an operation that completes with an error code.
    template <class Start>
    std::error_code outcome_of(Start start, clock_type::duration timeout = 60s) {
        auto result = std::make_shared<std::optional<std::error_code>>();
        start([result](std::error_code ec) { *result = ec; });
        if (!run_until([&] { return result->has_value(); }, timeout))
            return make_error_code(errc::timed_out);
        return **result;
    }
};

/// The node that holds `queue`'s leader, asked of the cluster until one other than `unless`
/// answers (an election takes seconds); empty if none did within `timeout`.
std::string leader_of(loop& l, const std::string& queue, clock_type::duration timeout,
                      const std::string& unless = {}) {
    const auto deadline = clock_type::now() + timeout;
    for (;;) {
        auto r = cluster_script("leader '" + queue + "'", /*quiet=*/true);
        if (r.status == 0 && !r.out.empty() && r.out != unless)
            return r.out;
        if (clock_type::now() >= deadline)
            return {};
        l.pause(250ms);
    }
}

/// What the publishes of one round came to.
struct tally {
    std::size_t confirmed = 0;
    std::size_t unknown = 0; // errc::outcome_unknown: sent, lost before its confirm
    std::size_t unsent = 0;  // errc::connection_closed: never sent
    std::map<std::string, std::size_t> other;

    std::size_t others() const {
        std::size_t n = 0;
        for (const auto& [what, count] : other)
            n += count;
        return n;
    }

    std::string to_string() const {
        std::string s = std::to_string(confirmed) + " confirmed, " + std::to_string(unknown) +
                        " outcome_unknown, " + std::to_string(unsent) + " connection_closed";
        for (const auto& [what, count] : other)
            s += ", " + std::to_string(count) + " '" + what + "'";
        return s;
    }
};

} // namespace

TEST_CASE("amqp cluster: kill -9 of the node that leads a quorum queue mid-stream loses nothing "
          "confirmed, in-flight publishes report outcome_unknown, and the consumer resumes on a "
          "surviving node",
          "[.cluster][amqp][disruptive]") {
    const auto cluster = letterbox::amqp::parse_url(cluster_url());
    const auto nodes = cluster.endpoints();
    const auto names = split(env("LETTERBOX_RABBITMQ_CLUSTER_NODES"), ',');
    REQUIRE(nodes.size() == 3);
    if (env("LETTERBOX_RABBITMQ_CLUSTER_DIR").empty() ||
        env("LETTERBOX_RABBITMQ_CLUSTER_SCRIPT").empty() || names.size() != nodes.size())
        FAIL("LETTERBOX_RABBITMQ_CLUSTER_DIR, _SCRIPT or _NODES is not set (the cluster was not "
             "started by tests/tools/rabbitmq_cluster.sh), so its nodes cannot be killed");
    {
        const auto status = cluster_script("status");
        INFO(status.out);
        if (status.status != 0)
            FAIL("not all 3 nodes run (a node killed by an earlier run?): `"
                 "tests/tools/rabbitmq_cluster.sh restart NODE`, or a fresh cluster");
    }
    loop l;
    letterbox::testing::unique_names unique{"letterbox.cluster"};

    // A durable quorum queue, declared through the cluster URL (shuffled: any node); its
    // replicas are on the 3 nodes. Where its leader is decides which node dies.
    letterbox::topology::queue q;
    q.name = unique("stream");
    q.durable = true;
    letterbox::topology::queue_arguments args;
    args.type = letterbox::topology::queue_type::quorum;
    q.arguments = args.to_table();
    REQUIRE_NOTHROW(q.check());
    {
        auto admin = letterbox::amqp::transport(l.io.get_executor(), cluster);
        REQUIRE(l.outcome_of([&](auto done) { admin.async_declare(q, done); }) ==
                std::error_code{});
        CHECK(l.outcome_of([&](auto done) { admin.async_close(done); }) == std::error_code{});
    }
    const auto leader = leader_of(l, q.name, 30s);
    REQUIRE_FALSE(leader.empty());
    const auto leader_at = std::find(names.begin(), names.end(), leader);
    INFO("leader " << leader << " of " << env("LETTERBOX_RABBITMQ_CLUSTER_NODES"));
    REQUIRE(leader_at != names.end());
    const auto doomed = nodes[static_cast<std::size_t>(leader_at - names.begin())];

    // The publisher and the consumer start on the leader's node (the cluster's endpoints, the
    // leader's first and in that order); the other two are where they can fail over to.
    std::vector<endpoint> order{doomed};
    for (const auto& n : nodes)
        if (!(n == doomed))
            order.push_back(n);
    auto u = cluster;
    u.set_endpoints(order);
    letterbox::amqp::transport_options options;
    options.shuffle_endpoints = false;
    options.reconnect_delay_max = 1000ms;
    auto publisher = letterbox::amqp::transport(l.io.get_executor(), u, options);
    auto subscriber = letterbox::amqp::transport(l.io.get_executor(), u, options);
    // Declared by the publisher too, so that its recovery declares it again on the next node.
    REQUIRE(l.outcome_of([&](auto done) { publisher.async_declare(q, done); }) ==
            std::error_code{});
    REQUIRE(publisher.connected_endpoint() == doomed);

    // The consumer acks everything (at prefetch 50) and counts each body it sees.
    struct seen_t {
        std::map<std::string, std::size_t> bodies;
        std::size_t deliveries = 0;
        std::size_t after_kill = 0; // deliveries handled after the node died
        bool killed = false;
    };
    auto seen = std::make_shared<seen_t>();
    letterbox::consume_options co;
    co.queue = q.name;
    co.prefetch = 50;
    auto consuming = std::make_shared<std::optional<std::error_code>>();
    subscriber.async_consume(
        co,
        [seen, &subscriber](delivery d) {
            ++seen->bodies[d.msg.body];
            ++seen->deliveries;
            if (seen->killed)
                ++seen->after_kill;
            subscriber.async_ack(d, [](std::error_code) {});
        },
        [consuming](std::error_code ec, std::string) { *consuming = ec; });
    REQUIRE(l.run_until([&] { return consuming->has_value(); }, 60s));
    REQUIRE(**consuming == std::error_code{});
    REQUIRE(subscriber.connected_endpoint() == doomed);

    // The stream: `total` persistent messages, each with its own id for good. A round publishes
    // every one not confirmed yet, pipelined (publish_window in flight); an outcome other than
    // success is published again, with the same id, in the next round, as an outbox relay would.
    constexpr std::size_t total = 2000;
    std::vector<message> stream(total);
    for (std::size_t i = 0; i < total; ++i) {
        stream[i].id = letterbox::message_id_generator{}();
        stream[i].routing_key = q.name;
        stream[i].properties.persistent = true;
        stream[i].body = "m-" + std::to_string(i);
    }
    std::vector<char> confirmed(total, 0);
    std::vector<std::size_t> confirmed_in_round(total, 0);
    std::vector<tally> rounds;
    std::size_t pending = 0;
    std::size_t confirmed_count = 0;
    auto publish_round = [&] {
        const std::size_t r = rounds.size();
        rounds.emplace_back();
        for (std::size_t i = 0; i < total; ++i) {
            if (confirmed[i])
                continue;
            ++pending;
            publisher.async_publish(stream[i], [&, i, r](std::error_code ec) {
                --pending;
                auto& t = rounds[r];
                if (!ec) {
                    ++t.confirmed;
                    if (!confirmed[i]) {
                        confirmed[i] = 1;
                        confirmed_in_round[i] = r;
                        ++confirmed_count;
                    }
                } else if (ec == errc::outcome_unknown) {
                    ++t.unknown;
                } else if (ec == errc::connection_closed) {
                    ++t.unsent;
                } else {
                    ++t.other[ec.message()];
                }
            });
        }
    };

    // Round 0, and the kill once a fifth of it is confirmed: the rest is in flight or waiting.
    // SIGKILL goes to the node's Erlang VM from here, at that very moment (the script would take
    // a second to start, while confirms go on); the script then finishes the crash (the node's
    // start script) and keeps the node's state.
    const auto beam = cluster_script("pid '" + leader + "'");
    REQUIRE(beam.status == 0);
    const auto beam_pid = static_cast<pid_t>(std::stol(beam.out));
    REQUIRE(beam_pid > 1);
    publish_round();
    REQUIRE(l.run_until([&] { return confirmed_count >= total / 5; }, 120s));
    const auto killed_at = clock_type::now();
    REQUIRE(::kill(beam_pid, SIGKILL) == 0);
    seen->killed = true;
    REQUIRE(cluster_script("kill '" + leader + "'").status == 0);
    CHECK(cluster_script("pid '" + leader + "'", /*quiet=*/true).status != 0); // its VM is gone
    REQUIRE(l.run_until([&] { return pending == 0; }, 60s));
    const tally at_kill = rounds[0];
    INFO("round 0 (the kill): " << at_kill.to_string());
    // Mid-stream: part of the stream was not confirmed when the node died.
    CHECK(at_kill.confirmed < total);
    CHECK(at_kill.others() == 0);

    // The queue elects a new leader on a survivor; the next round waits until its record names
    // it. RabbitMQ 3.10.8 needs that: a channel's first publish to a quorum queue asks the node
    // of the leader the record named when the channel first used the queue, and when that node
    // is down it nacks the publish and stays as it was (rabbit_fifo_client:enqueue/4,
    // {badrpc, nodedown} -> reject_publish), so a channel that first publishes during the
    // election nacks every publish to that queue for as long as it lives.
    const auto new_leader = leader_of(l, q.name, 60s, /*unless=*/leader);
    const auto elected_after = clock_type::now() - killed_at;
    REQUIRE_FALSE(new_leader.empty());

    // Rounds after the failover, until every message is confirmed (bounded).
    const auto retry_deadline = clock_type::now() + 180s;
    while (confirmed_count < total && clock_type::now() < retry_deadline) {
        publish_round();
        REQUIRE(l.run_until([&] { return pending == 0; }, 90s));
        if (confirmed_count < total)
            l.pause(250ms);
    }
    const auto all_confirmed_after = clock_type::now() - killed_at;
    std::string round_lines;
    for (std::size_t r = 0; r < rounds.size(); ++r)
        round_lines += "\n  round " + std::to_string(r) + ": " + rounds[r].to_string();
    INFO(rounds.size() << " rounds:" << round_lines);
    REQUIRE(confirmed_count == total);
    std::size_t others_after = 0;
    for (std::size_t r = 1; r < rounds.size(); ++r)
        others_after += rounds[r].others();
    CHECK(others_after == 0);

    // Both transports are on a surviving node now, and the queue's leader is too.
    CHECK(publisher.connected_endpoint().has_value());
    CHECK_FALSE(publisher.connected_endpoint() == doomed);
    CHECK(std::find(names.begin(), names.end(), new_leader) != names.end());

    // At least once: every confirmed message reaches the consumer, which resumed on a survivor,
    // including those first confirmed after the failover.
    auto missing = [&] {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < total; ++i)
            if (confirmed[i] && !seen->bodies.contains(stream[i].body))
                out.push_back(stream[i].body);
        return out;
    };
    CHECK(l.run_until([&] { return missing().empty(); }, 120s));
    const auto lost = missing();
    std::size_t duplicates = 0;
    // Bodies confirmed only after the failover and seen twice: their attempt in flight at the
    // kill (outcome_unknown) was stored after all, or a delivery was redelivered.
    std::size_t republished_seen_twice = 0;
    for (const auto& [body, n] : seen->bodies)
        duplicates += n - 1;
    std::size_t confirmed_after_failover = 0;
    for (std::size_t i = 0; i < total; ++i)
        if (confirmed_in_round[i] > 0) {
            ++confirmed_after_failover;
            if (seen->bodies.contains(stream[i].body) && seen->bodies[stream[i].body] > 1)
                ++republished_seen_twice;
        }
    std::string some;
    for (std::size_t i = 0; i < lost.size() && i < 8; ++i)
        some += " " + lost[i];
    INFO(lost.size() << " confirmed bodies never seen (" << some << " ), " << seen->deliveries
                     << " deliveries seen, " << seen->after_kill << " after the kill");
    CHECK(lost.empty());
    CHECK(seen->after_kill > 0);
    CHECK(confirmed_after_failover > 0);
    CHECK(subscriber.connected_endpoint().has_value());
    CHECK_FALSE(subscriber.connected_endpoint() == doomed);

    const auto ms = [](clock_type::duration d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    std::cout << "amqp cluster: killed " << leader << " (leader of " << q.name
              << ") mid-stream; new leader " << new_leader << " after " << ms(elected_after)
              << " ms; publisher on "
              << (publisher.connected_endpoint() ? publisher.connected_endpoint()->to_string()
                                                 : std::string("-"))
              << ", consumer on "
              << (subscriber.connected_endpoint() ? subscriber.connected_endpoint()->to_string()
                                                  : std::string("-"))
              << "; at the kill: " << at_kill.to_string() << "; " << rounds.size() - 1
              << " rounds after it, all " << total << " confirmed " << ms(all_confirmed_after)
              << " ms after the kill (" << confirmed_after_failover << " only after the failover); "
              << seen->deliveries << " deliveries, " << duplicates << " duplicates ("
              << republished_seen_twice << " of bodies republished after the failover), "
              << seen->after_kill << " after the kill, " << lost.size() << " confirmed never seen"
              << std::endl;

    CHECK(l.outcome_of([&](auto done) { subscriber.async_close(done); }) == std::error_code{});
    CHECK(l.outcome_of([&](auto done) { publisher.async_close(done); }) == std::error_code{});
}

} // namespace integration_amqp_cluster
