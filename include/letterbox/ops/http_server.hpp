// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/dlq/dead_letter_queue_options.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/message_trail.hpp>
#include <letterbox/ops/detail/server_state.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/ops/readiness.hpp>
#include <letterbox/ops/relay_lag_check.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// The operations endpoint of an application: health, metrics, the dead-letter queues and the
/// outbox over HTTP/1.1 (Boost.Beast), on the application's executor.
///
/// | method | path | what |
/// | --- | --- | --- |
/// | GET | `/health/live` | 200 `{"status":"live"}` |
/// | GET | `/health/ready`, `/health` | 200 when every readiness check passes, else 503 |
/// | GET | `/metrics` | the metrics text (`set_metrics`), Prometheus exposition format |
/// | GET | `/queues` | the registered dead-letter queues and their depths |
/// | GET | `/dlq/{queue}` | a filtered page of dead-lettered messages, bodies cut |
/// | GET | `/dlq/{queue}/messages/{id}` | one whole dead-lettered message |
/// | POST | `/dlq/{queue}/replay` | replays the selected messages (`?all=true` for every one) |
/// | DELETE | `/dlq/{queue}` | removes the selected messages (`?all=true` for every one) |
/// | GET | `/outbox` | the outbox's counts and its pending and parked rows |
/// | POST | `/outbox/{id}/retry` | unparks a parked row |
/// | GET | `/outbox/lag` | the watched relay's lag and its recent samples (`watch_relay`) |
/// | GET | `/consumers` | the watched consumers' counts and delivery rates (`watch_consumers`) |
/// | GET | `/topology/findings` | the topology check's findings (`set_topology_check`) |
/// | GET | `/conversations/{id}` | a conversation from the trail (`set_message_trail`) |
/// | GET | `/` | the dashboard page |
///
/// Every JSON error is `{"error": {"code": ..., "message": ...}}`; docs/operations.md has the
/// whole API.
///
/// Security by default: it listens on 127.0.0.1, and refuses a non-loopback address without a
/// token; the mutating endpoints (POST, DELETE) and the reads of message bodies need
/// `Authorization: Bearer <token>`, compared in constant time, and are refused (403) until
/// `http_server_options::token` is set; a request whose `Host` names neither the server nor
/// an allowed host gets 421 (DNS rebinding), except the health endpoints; request headers are
/// limited (431), bodies too (413), a request must arrive within the read timeout (408) and an
/// idle connection is closed; the number of connections is capped, and at the cap the
/// cheapest connection to lose makes room, with a few more held in reserve for health; the
/// response bytes held for clients are bounded (503); no response and no log line contains a
/// credential; every response says `Cache-Control: no-store` and `X-Content-Type-Options:
/// nosniff`.
///
/// Register what it serves (`add_dead_letter_queue`, `set_outbox`, `set_metrics`,
/// `add_readiness_check`, `watch_relay`, `watch_consumers`, `set_topology_check`) before
/// `listen()`. Everything it does runs on a strand of the
/// executor given to the constructor, except the outbox store calls: those run on two threads
/// the server owns (started by `set_outbox`), so a database locked by another process never
/// blocks the server, and a request that waits for the store longer than
/// `http_server_options::store_timeout` gets 503. Metrics rendering and readiness checks run
/// on the strand and should be quick; dead-letter operations run on their transport's executor
/// and complete back on the strand. One scan (browse, replay, purge) runs at a time per queue;
/// others wait for it.
///
/// Lifetime: the transports, stores, clocks and relays given to it must outlive it and the
/// operations it started (a dead-letter scan in flight when the server is stopped still runs
/// to its end on the transport). `stop()` closes the listening socket and every connection;
/// destroying the server stops it, and waits for an outbox store call still running (which
/// ends within the store's own busy timeout).
///
/// Thread safety: registration and `listen()` from one thread, before the executor serves
/// requests; `stop()`, `local_endpoint()` and the destructor from any thread.
///
/// Example:
///
///     letterbox::ops::http_server_options o;
///     o.port = 9464;
///     o.token = token_from_the_environment();
///     letterbox::ops::http_server server(io.get_executor(), o);
///     server.add_dead_letter_queue(transport, "orders.dlq");
///     server.set_outbox(outbox_store, clock);
///     server.add_readiness_check("transport", letterbox::ops::connection_check(transport));
///     if (auto ec = server.listen())
///         throw std::system_error(ec);
class http_server {
public:
    using executor_type = boost::asio::any_io_executor;

    /// A server on a strand of `ex`; it listens only once `listen()` is called. Throws
    /// `letterbox::error` (`errc::invalid_argument`, with a message naming the option) when
    /// `options.address` is neither an IP address nor `localhost`, when it is not a loopback
    /// address and `options.token` is empty (unless
    /// `options.allow_non_loopback_without_token`, then it logs a warning), when
    /// `options.loopback_reads_without_token` is set for a non-loopback address, and when
    /// `options.max_connections` is 0.
    explicit http_server(executor_type ex, http_server_options options = {});
    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;
    /// Stops the server (see `stop`).
    ~http_server();

    /// Serves the dead-letter queue `queue` read through `transport` under `/dlq/{queue}` and
    /// in `/queues`, with a `dlq::dead_letter_queue<Transport>`. Throws `letterbox::error`
    /// with `errc::invalid_argument` for a queue registered twice (or `options.max_messages`
    /// 0), `errc::invalid_state` after `listen()`.
    ///
    /// @tparam Transport a model of `queue_reader`; it must outlive the server.
    template <queue_reader Transport>
    void add_dead_letter_queue(Transport& transport, std::string queue,
                               dlq::dead_letter_queue_options options = {});

    /// Serves `store` under `/outbox`; "now" is `clock.wall_now()`, as the relay's, read on
    /// the server's strand. The store is called from threads the server owns, concurrently
    /// with the application's own calls: it must be thread-safe (both shipped stores are).
    /// Replaces a previous store. Throws `letterbox::error` (`errc::invalid_state`) after
    /// `listen()`.
    ///
    /// @tparam Store a model of `outbox_store`; it and the clock must outlive the server.
    template <outbox_store Store, clock Clock>
    void set_outbox(Store& store, Clock& clock);

    /// Serves `render()` at `/metrics` (Prometheus text format 0.0.4). Without it, `/metrics`
    /// is 404. Throws `letterbox::error` (`errc::invalid_state`) after `listen()`.
    void set_metrics(std::function<std::string()> render);

    /// Serves `trail`'s conversations at `/conversations/{id}`: the messages of one
    /// conversation (ids, types, causes; never bodies) and their causal tree (`causal_tree`),
    /// as docs/tracing.md shows. Without it, that path is 404. Throws `letterbox::error`
    /// (`errc::invalid_state`) after `listen()`. The trail must outlive the server.
    void set_message_trail(const message_trail& trail);

    /// Adds a readiness check reported by `/health/ready` under `name`; the server is ready
    /// when every check is ok (and when there is none). A check that throws is not ok. See
    /// `connection_check` and `relay_lag_check`. Throws `letterbox::error`
    /// (`errc::invalid_state`) after `listen()`.
    void add_readiness_check(std::string name, std::function<readiness()> check);

    /// Samples `relay.counters().lag` every `options.sample_interval` (keeping
    /// `options.samples_kept` samples) and serves them at `/outbox/lag`, with the relay's
    /// current lag and counts: the dashboard's outbox panel draws them as a sparkline. Without
    /// it, that path is 404 and the panel says no relay is watched. Throws `letterbox::error`
    /// (`errc::invalid_state`) after `listen()`.
    ///
    /// @tparam Relay a `relay_counters_source` (an `outbox_relay`); it must outlive the server.
    template <relay_counters_source Relay>
    void watch_relay(const Relay& relay);

    /// Serves the counts of the consumers named in `metrics.consumer_observer(name)` at
    /// `/consumers`, with each one's deliveries per second over the last minute (from samples
    /// of its `delivered` count taken every `options.sample_interval`): the dashboard's
    /// consumers panel. Without it, that path is 404 and the panel says there is no metrics
    /// registry. Throws `letterbox::error` (`errc::invalid_state`) after `listen()`.
    /// `metrics` must outlive the server.
    void watch_consumers(const letterbox_metrics& metrics);

    /// Serves the findings of `check()` at `/topology/findings`, for the dashboard's topology
    /// lint panel: typically a `lint` check of the application's topology, or of the broker's
    /// (`check` may be slow: it runs on the threads the server owns for store calls, never on
    /// its strand, once per request, and a request gets 503 after
    /// `options.store_timeout`). A check that throws answers 500 with its message. Without it,
    /// that path is 404 and the panel says "not configured". Throws `letterbox::error`
    /// (`errc::invalid_state`) after `listen()`.
    void set_topology_check(std::function<std::vector<lint::finding>()> check);

    /// Binds `options.address:options.port` and starts accepting. Returns the bind error
    /// (address in use, an address of no interface of this host), which the log also reports
    /// with the address and port, or `errc::invalid_state` when already listening or stopped.
    std::error_code listen();

    /// The address and port it listens on (the actual port when `options.port` was 0); the
    /// default endpoint before `listen()` succeeded.
    boost::asio::ip::tcp::endpoint local_endpoint() const;

    /// Closes the listening socket and every connection (on the strand: at once when called
    /// there, else as soon as the executor runs it); requests in progress get no response.
    /// Idempotent. The server cannot listen again.
    void stop();

private:
    void check_not_listening() const;

    std::shared_ptr<detail::server_state> state_;
};

} // namespace letterbox::ops

#include <letterbox/ops/impl/http_server.hpp>
